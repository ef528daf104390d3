"""Passing an upstream's log messages, sampling requests and elicitation requests back to the
gateway-side call that caused them.

A :class:`Channel` is made for every ``tools/call`` the gateway forwards; it knows the calling
client's session, the id of its request, its protocol era, the log level it asked for and
whether it can be asked (elicitation) or sampled.

How an upstream request reaches the channel depends on the upstream's protocol era:

* 2026-07-28 upstream: it answers ``tools/call`` with an ``InputRequiredResult``. The SDK's
  ``Client.call_tool`` runs those rounds in the caller's task, so :data:`CURRENT` (a context
  variable set around the upstream call) names the channel. For a 2026-07-28 *caller* the
  endpoint does not let the SDK run the rounds: it hands the ``InputRequiredResult`` back to
  the caller (the upstream's keys unchanged, the upstream's ``request_state`` sealed inside the
  gateway's own; a request the caller did not declare the capability for is refused with
  ``-32021``, :func:`missing_capabilities`) and forwards the caller's answers on the retry.

The upstream sees the *caller's* client capabilities on a forwarded call (what the gateway can
pass on of them: elicitation, sampling, and roots for a 2026-07-28 caller), not the gateway's
own: :func:`stamp_caller_capabilities` puts :attr:`Channel.capabilities` into the request's
``_meta["io.modelcontextprotocol/clientCapabilities"]``, so an upstream asks only what the
caller can answer.
* handshake-era upstream: ``elicitation/create`` / ``sampling/createMessage`` and
  ``notifications/message`` arrive on the upstream ``Client``'s receive loop with nothing that
  names the call (stdio carries no related-request id). They go to the upstream's one call in
  flight; with several calls in flight a request is refused (``ErrorData``) and a log message
  dropped, never sent to a client that did not cause it.

A 2026-07-28 caller has no back-channel during a call: a handshake-era upstream's mid-call
request for it is refused with an error naming the limit.
"""

from __future__ import annotations

import contextvars
import warnings
from dataclasses import dataclass
from typing import Any, get_args

import structlog
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError, NoBackChannelError
from mcp.shared.message import ServerMessageMetadata
from mcp.types import (
    CLIENT_CAPABILITIES_META_KEY,
    INVALID_REQUEST,
    LOG_LEVEL_META_KEY,
    CreateMessageRequest,
    CreateMessageResult,
    CreateMessageResultWithTools,
    ElicitRequest,
    ElicitResult,
    ErrorData,
    InputRequest,
    InputResponse,
    LoggingLevel,
    LoggingMessageNotificationParams,
)

log = structlog.get_logger("turnstile.mcp.relay")

LEVELS: tuple[str, ...] = get_args(LoggingLevel)
"""Severity-ascending (RFC 5424 order, as the ``LoggingLevel`` literal declares it)."""
RELAYED_CAPABILITIES = {
    "elicitation/create": "elicitation",
    "sampling/createMessage": "sampling",
    "roots/list": "roots",
}
"""Input-request method -> the client capability it needs."""


def level_at_least(level: str, floor: str | None) -> bool:
    """Whether ``level`` is at or above ``floor`` (None: nothing passes)."""
    if floor is None or level not in LEVELS or floor not in LEVELS:
        return False
    return LEVELS.index(level) >= LEVELS.index(floor)


@dataclass
class Channel:
    """The way back to one gateway-side ``tools/call``.

    ``session``: the caller's ``ServerSession``; ``request_id``: its request's JSON-RPC id;
    ``modern``: the caller speaks 2026-07-28 (no mid-call back-channel); ``log_level``: lowest
    level the caller wants (None: no log messages); ``server``: the upstream's id (for errors).
    """

    session: Any
    request_id: Any
    modern: bool
    log_level: str | None
    can_elicit: bool
    can_sample: bool
    server: str
    capabilities: dict[str, Any] | None = None
    """The caller's declared client capabilities the gateway can pass on (JSON), sent upstream
    in place of the gateway's own; None: leave the gateway's."""

    async def log(self, params: LoggingMessageNotificationParams) -> None:
        """Send an upstream log message to the caller when at or above its level."""
        if not level_at_least(params.level, self.log_level):
            return
        try:
            with warnings.catch_warnings():  # deprecated in 2026-07-28, still served
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                await self.session.send_log_message(
                    params.level, params.data, params.logger, related_request_id=self.request_id
                )
        except Exception as err:  # the caller went away: nothing to tell
            log.debug("mcp_relay_log_failed", server=self.server, error=str(err))

    async def ask(self, request: InputRequest) -> InputResponse | ErrorData:
        """Put an upstream's elicitation or sampling request to the caller (a handshake-era
        caller: a server-to-client request related to its call). Returns the caller's answer,
        or ``ErrorData`` saying why it could not be asked."""
        if isinstance(request, ElicitRequest):
            what, able = "elicitation", self.can_elicit
            result_type: type[Any] = ElicitResult
        elif isinstance(request, CreateMessageRequest):
            what, able = "sampling", self.can_sample
            result_type = CreateMessageResultWithTools if request.params.tools else CreateMessageResult
        else:
            return _refusal(f"MCP server {self.server!r} sent a request the gateway does not relay")
        if not able:
            return _refusal(f"the calling client does not support {what}")
        if self.modern:
            return _refusal(
                f"the calling client speaks MCP 2026-07-28 and cannot be sent a {what} request during a call "
                f"to the handshake-era server {self.server!r}"
            )
        try:
            answer: InputResponse = await self.session.send_request(
                request, result_type, metadata=ServerMessageMetadata(related_request_id=self.request_id)
            )
        except NoBackChannelError:
            return _refusal(f"this connection cannot carry a {what} request to the calling client")
        except MCPError as err:
            return ErrorData(code=err.code, message=err.message, data=err.data)
        return answer


def caller_capabilities(declared: Any, modern: bool) -> dict[str, Any]:
    """What of the caller's declared ``ClientCapabilities`` (``declared``, None: nothing) an
    upstream may rely on through the gateway: elicitation and sampling always, roots for a
    2026-07-28 caller (its answer is passed through; a handshake-era caller is not asked)."""
    if declared is None:
        return {}
    dumped = declared.model_dump(by_alias=True, mode="json", exclude_none=True)
    keep = ("elicitation", "sampling", "roots") if modern else ("elicitation", "sampling")
    return {k: v for k, v in dumped.items() if k in keep}


def missing_capabilities(requests: dict[str, Any], declared: dict[str, Any]) -> dict[str, Any]:
    """The capabilities ``requests`` (an ``InputRequiredResult``'s input requests) need that
    ``declared`` (:func:`caller_capabilities`) lacks, as a ``requiredCapabilities`` object."""
    missing: dict[str, Any] = {}
    for request in requests.values():
        method = getattr(request, "method", None) or (
            request.get("method") if isinstance(request, dict) else None
        )
        needed = RELAYED_CAPABILITIES.get(str(method))
        if needed is not None and needed not in declared:
            missing[needed] = {}
    return missing


def stamp_caller_capabilities(session: Any) -> None:
    """Make ``session`` (an upstream ``ClientSession`` speaking 2026-07-28) send the calling
    client's capabilities (:data:`CURRENT`'s :attr:`Channel.capabilities`) in a forwarded
    request's ``_meta`` instead of the gateway's. Wraps the SDK's per-request ``_meta`` stamp
    (``ClientSession._stamp``, mcp 2.3), set when the connection was negotiated."""
    inner = getattr(session, "_stamp", None)
    if inner is None or getattr(inner, "_turnstile", False):
        return

    def stamp(data: dict[str, Any], opts: Any) -> None:
        inner(data, opts)
        channel = CURRENT.get()
        meta = (data.get("params") or {}).get("_meta")
        if channel is not None and channel.capabilities is not None and isinstance(meta, dict):
            meta[CLIENT_CAPABILITIES_META_KEY] = channel.capabilities

    stamp._turnstile = True  # type: ignore[attr-defined]
    session._stamp = stamp


def _refusal(message: str) -> ErrorData:
    return ErrorData(code=INVALID_REQUEST, message=message)


CURRENT: contextvars.ContextVar[Channel | None] = contextvars.ContextVar(
    "turnstile_mcp_channel", default=None
)
"""The channel of the upstream call running in this task (see the module docstring)."""


def upstream_meta(channel: Channel | None) -> dict[str, Any] | None:
    """``_meta`` for the upstream call: the 2026-07-28 per-request log opt-in at the caller's
    level (handshake-era upstreams ignore the key)."""
    if channel is None or channel.log_level is None:
        return None
    return {LOG_LEVEL_META_KEY: channel.log_level}
