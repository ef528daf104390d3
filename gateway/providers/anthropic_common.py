"""Values of the Anthropic Messages wire API shared by the response parser
(:mod:`gateway.providers.anthropic_messages`) and the stream parser
(:mod:`gateway.providers.anthropic_stream`): the stop-reason table and thinking provenance.

Stop reasons: ``end_turn``/``stop_sequence`` -> ``stop``, ``pause_turn`` -> ``pause`` (a
long server-tool loop paused: the Anthropic edge renders ``pause_turn`` again, so the client
sends the answer back to continue it), ``max_tokens``/``model_context_window_exceeded`` ->
``length``, ``tool_use`` -> ``tool_use``, ``refusal`` -> ``content_filter``; anything else
raises :class:`UnknownStopReason`.
"""

from __future__ import annotations

import functools

from gateway.config import Deployment
from gateway.errors import UnknownStopReason
from gateway.schema import Provenance, StopReason

API = "anthropic_messages"

_STOP_REASONS: dict[str, StopReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "pause",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_use",
    "refusal": "content_filter",
}


def map_stop_reason(raw: str | None) -> StopReason:
    """Anthropic ``stop_reason`` -> internal stop reason (table in the module docstring);
    raises :class:`UnknownStopReason` on anything else, including a missing value."""
    if not isinstance(raw, str) or raw not in _STOP_REASONS:
        raise UnknownStopReason(f"unknown Anthropic stop_reason {raw!r}")
    return _STOP_REASONS[raw]


@functools.lru_cache(maxsize=1024)
def _provenance(provider: str, model: str) -> Provenance:
    return Provenance(api=API, provider=provider, model=model)


def provenance(deployment: Deployment) -> Provenance:
    """Provenance of thinking signed by this deployment (one shared, frozen instance per
    provider and model)."""
    return _provenance(deployment.provider, deployment.model)


SERVER_BLOCKS = frozenset({"server_tool_use", "mcp_tool_use", "mcp_tool_result"})
"""Answer blocks of the server's own tool calls (besides every ``*_tool_result`` type): kept
verbatim as :class:`gateway.schema.NativePart` parts
(https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/server-tools)."""


def is_server_block(kind: str) -> bool:
    """True for an answer block type of a server tool call or its result (``server_tool_use``,
    ``web_search_tool_result``, ``tool_search_tool_result``, ``mcp_tool_use``, ...)."""
    return kind in SERVER_BLOCKS or kind.endswith("_tool_result")


SERVER_TOOL_AT = "server_tool_at"
"""Key of ``NativeFields.fields`` (not a body field): each server tool's index among the tools
sent, so that an Anthropic upstream gets the client's order (a cached prefix covers the tools in
order: moving one changes every cache key after it)."""
