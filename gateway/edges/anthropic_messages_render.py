"""Internal schema -> Anthropic Messages bodies: responses, errors, token counts.

References: https://docs.anthropic.com/en/api/messages (response shape, ``stop_reason``),
https://docs.anthropic.com/en/api/errors (error types and statuses).
"""

from __future__ import annotations

from typing import Any

from gateway.edges.anthropic_messages_thread import ThreadedRequest
from gateway.edges.signatures import wrap_signature, wrap_tool_call_id
from gateway.errors import TurnstileError
from gateway.providers.anthropic_common import API
from gateway.schema import (
    NativePart,
    Provenance,
    RedactedThinkingPart,
    Request,
    Response,
    StopReason,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    Usage,
    WithheldToolCall,
)

STOP_REASONS: dict[str, str] = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_use": "tool_use",
    "content_filter": "refusal",
    "pause": "pause_turn",
    # Anthropic has no stop reason for a failed or aborted generation. Such an ending is
    # rendered as end_turn *and* stated explicitly as "turnstile": {"stop_reason": ...}; the
    # pipeline normally turns a failed call into an error response or error event instead.
    "error": "end_turn",
    "aborted": "end_turn",
}


def stop_reason(stop: StopReason) -> str:
    """The Anthropic ``stop_reason`` for an internal stop reason (see :data:`STOP_REASONS`)."""
    return STOP_REASONS[stop]


def message_id(resp_id: str) -> str:
    """``resp_id`` with the ``msg_`` prefix Anthropic clients expect."""
    return resp_id if resp_id.startswith("msg_") else "msg_" + resp_id


def answer_id(resp_id: str, request: Request | None) -> str:
    """The ``id`` of the answer: the message id of its thread turn when the request is
    threaded (the id the client continues from), else :func:`message_id` of ``resp_id``."""
    if type(request) is ThreadedRequest and request.thread.message_id is not None:
        return request.thread.message_id
    return message_id(resp_id)


def render_usage(u: Usage) -> dict[str, Any]:
    """Anthropic usage (tokens): ``input_tokens`` excludes cache reads/writes, which are
    ``cache_read_input_tokens`` / ``cache_creation_input_tokens``."""
    return {
        "input_tokens": u.input_tokens,
        "output_tokens": u.output_tokens,
        "cache_creation_input_tokens": u.cache_write_tokens,
        "cache_read_input_tokens": u.cache_read_tokens,
    }


def turnstile_meta(usage: Usage, withheld: list[WithheldToolCall], stop: StopReason) -> dict[str, Any] | None:
    """The top-level ``"turnstile"`` object: ``cost_usd`` (USD) when known, ``estimated`` when
    the tokens were counted locally, ``withheld_tool_calls`` and an ``error``/``aborted``
    ``stop_reason``; None when empty."""
    meta: dict[str, Any] = {}
    if usage.cost_usd is not None:
        meta["cost_usd"] = usage.cost_usd
    if usage.estimated:
        meta["estimated"] = True
    if withheld:
        meta["withheld_tool_calls"] = [w.model_dump() for w in withheld]
    if stop in ("error", "aborted"):
        meta["stop_reason"] = stop
    return meta or None


def client_signature(sig: str | None, prov: Provenance | None) -> str:
    """A thinking signature as shown to the client: wrapped with its provenance when known."""
    if not sig:
        return ""
    return wrap_signature(sig, prov) if prov is not None else sig


def client_tool_use_id(id: str, sig: str | None, prov: Provenance | None) -> str:
    """A tool-use id as shown to the client: the call's own signature wrapped into it."""
    return id if sig is None else wrap_tool_call_id(id, sig, prov)


def render_block(part: Any) -> dict[str, Any]:
    """One assistant content part as an Anthropic content block (a :class:`NativePart` of this
    wire API: its block verbatim). Raises ``TypeError`` for anything else."""
    # exact classes: the schema's models are never subclassed, and isinstance on a pydantic
    # model goes through ABCMeta (several times slower)
    if type(part) is TextPart:
        if part.citations is not None:
            return {"type": "text", "text": part.text, "citations": part.citations}
        return {"type": "text", "text": part.text}
    if type(part) is ToolCallPart:
        block = {
            "type": "tool_use",
            "id": client_tool_use_id(part.id, part.signature, part.provenance),
            "name": part.name,
            "input": part.arguments,
        }
        if part.caller is not None:  # programmatic tool calling (only from an Anthropic upstream)
            block["caller"] = part.caller
        if part.toolset_name is not None:  # the toolset of the call (only from an Anthropic upstream)
            block["toolset_name"] = part.toolset_name
        return block
    if type(part) is ThinkingPart:
        return {
            "type": "thinking",
            "thinking": part.text,
            "signature": client_signature(part.signature, part.provenance),
        }
    if type(part) is RedactedThinkingPart:
        data = wrap_signature(part.data, part.provenance) if part.provenance is not None else part.data
        return {"type": "redacted_thinking", "data": data}
    if type(part) is NativePart and part.api == API:
        return part.block  # a server tool call or result, verbatim
    raise TypeError(f"not an assistant part: {type(part).__name__}")


def render_response(resp: Response, request: Request) -> dict[str, Any]:
    """A non-streaming Anthropic ``message`` body (a dict for the server to encode).

    Thinking signatures (and redacted data) carry Turnstile's provenance envelope; tool-use
    ``input`` is the parsed arguments. Withheld tool calls and the cost appear under the
    top-level ``"turnstile"`` key.
    """
    body: dict[str, Any] = {
        "id": answer_id(resp.id, request),
        "type": "message",
        "role": "assistant",
        "model": resp.model,
        "content": [render_block(p) for p in resp.message.content],
        "stop_reason": stop_reason(resp.stop_reason),
        "stop_sequence": None,
        "usage": render_usage(resp.usage),
    }
    meta = turnstile_meta(resp.usage, resp.withheld_tool_calls, resp.stop_reason)
    if meta:
        body["turnstile"] = meta
    return body


_ERROR_TYPES: dict[str, str] = {
    "invalid_request": "invalid_request_error",
    "payload_too_large": "request_too_large",
    "not_found": "not_found_error",
    "route_not_found": "not_found_error",
    "authentication": "authentication_error",
    "permission": "permission_error",
    "rate_limit": "rate_limit_error",
    "overloaded": "overloaded_error",
    "upstream": "api_error",
    "timeout": "timeout_error",
    "api_error": "api_error",
}


def error_body(kind: str, message: str, param: str | None = None) -> dict[str, Any]:
    """``{"type": "error", "error": {"type", "message"}}`` for a ``TurnstileError.kind``.
    Anthropic's shape has no ``param``: the field path leads the message when it is not
    already in it."""
    if param and param not in message:
        message = f"{param}: {message}"
    return {"type": "error", "error": {"type": _ERROR_TYPES.get(kind, "api_error"), "message": message}}


def render_error(err: TurnstileError) -> tuple[int, dict[str, Any]]:
    """``(HTTP status, body)`` of an error in Anthropic's shape; the status is ``err.status``.
    An error with an ``error_code`` carries it as ``error.details.error_code``, where the SDK
    reads it (``anthropic/lib/threads/_thread_state.py``: ``_error_details``)."""
    body = error_body(err.kind, err.message, err.param)
    if err.error_code is not None:
        body["error"]["details"] = {"error_code": err.error_code}
    return err.status, body


def render_count_tokens(n: int) -> dict[str, Any]:
    """The ``POST /v1/messages/count_tokens`` body: ``{"input_tokens": n}`` (tokens)."""
    return {"input_tokens": n}
