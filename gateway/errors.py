"""The one exception hierarchy of Turnstile.

Every error the gateway raises derives from :class:`TurnstileError`. Each carries an HTTP
``status``, a dialect-neutral ``kind`` (mapped to each client dialect's error type by the
edges) and, where one field or id is at fault, ``param``. Edges render them in the client's
own error shape; nothing else formats errors.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gateway.redaction import redact_secrets


class TurnstileError(Exception):
    """Base of all Turnstile errors.

    ``kind`` is one of: ``invalid_request``, ``not_found``, ``payload_too_large``,
    ``authentication``, ``permission``, ``rate_limit``, ``overloaded``, ``upstream``,
    ``timeout``, ``api_error``, ``route_not_found``, ``response_not_found``.
    """

    status: int = 500
    kind: str = "api_error"
    error_code: str | None = None
    """A machine-readable code a dialect carries beside ``kind`` (Anthropic's
    ``error.details.error_code``), for the errors a client SDK acts on by itself."""

    def __init__(self, message: str, *, param: str | None = None, details: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.param = param
        self.details = details


class ConfigError(TurnstileError):
    """A configuration file is invalid; the message names the file, the key and what was
    expected."""

    status = 500
    kind = "api_error"


class AnonymousExposure(ConfigError):
    """Serving on a non-loopback address with no client authentication and without the
    operator's explicit permission (``--allow-anonymous``); see :mod:`gateway.exposure`."""


class AnonymousRefused(TurnstileError):
    """A request arrived on a non-loopback local address of a gateway that serves anonymous
    clients only on loopback addresses (:class:`gateway.exposure.LoopbackOnly`)."""

    status = 403
    kind = "permission"


class InvalidRequest(TurnstileError):
    """The client's request is malformed; ``param`` names the offending field."""

    status = 400
    kind = "invalid_request"


class GuardrailBlocked(InvalidRequest):
    """The client's input holds what the guardrails block (``guardrails.secrets``, ``pii`` or the
    webhook set to ``block``); ``param`` names the message, the message the kinds found (never
    the matched text)."""


class PayloadTooLarge(InvalidRequest):
    """The request exceeds a size limit: its body ``server.max_body_bytes``, its messages or
    content parts ``server.max_request_messages`` / ``server.max_request_parts``, its tools
    ``server.max_request_tools`` or one tool's input schema ``server.max_tool_schema_nodes``."""

    status = 413
    kind = "payload_too_large"


class AuthenticationRequired(TurnstileError):
    """The request needs a client credential it did not present (or presented one that matches
    no configured client): e.g. it attaches MCP servers while ``mcp.clients`` is configured."""

    status = 401
    kind = "authentication"


class PermissionDenied(TurnstileError):
    """The caller is known but may not use what it asked for (e.g. an MCP server none of whose
    tools its ``mcp.clients`` entry may see); ``param`` names the field."""

    status = 403
    kind = "permission"


class ModelNotFound(TurnstileError):
    """No alias or deployment has the requested model name."""

    status = 404
    kind = "not_found"


class RouteNotFound(TurnstileError):
    """No endpoint at that path (not a model problem: clients must not read it as one)."""

    status = 404
    kind = "route_not_found"


class RequestBodyTimeout(TurnstileError):
    """The connection guard cut a request body for its pace (``server.body_timeout_s``,
    ``server.body_min_bytes_per_s``; :mod:`gateway.serving` sent the 408 itself). HTTP 408,
    for the request's transcript row."""

    status = 408
    kind = "timeout"


class ClientGone(TurnstileError):
    """The client closed its connection before its request body was read. HTTP 499 (nginx's
    "client closed request"), for the request's transcript row."""

    status = 499
    kind = "invalid_request"


class ResponseNotFound(TurnstileError):
    """No stored response has that id (never stored, or deleted): OpenAI Responses'
    ``previous_response_id``, ``GET``/``DELETE /v1/responses/{id}``. HTTP 404."""

    status = 404
    kind = "response_not_found"


class ThreadNotFound(TurnstileError):
    """No message thread holds the Anthropic ``thread.previous_message_id`` (never created,
    created elsewhere, or its turn stored no answer). HTTP 404, ``error_code``
    ``thread_not_found``: the Anthropic SDK then replays the full history under a new thread."""

    status = 404
    kind = "not_found"
    error_code = "thread_not_found"


class ThreadUnsupported(InvalidRequest):
    """This gateway does not thread the request (threads configured off, or the turn is bound
    to a session by the client). HTTP 400, ``error_code`` ``thread_unsupported_request``: the
    Anthropic SDK's tool runner then resends the full history without ``thread``."""

    error_code = "thread_unsupported_request"


class ThreadFingerprintMismatch(InvalidRequest):
    """A ``thread`` continuation sends a create-only field (``system``, ``tools``) that differs
    from the one the thread was created with. HTTP 400, ``error_code``
    ``thread_fingerprint_mismatch``."""

    error_code = "thread_fingerprint_mismatch"


class CapabilityError(InvalidRequest):
    """The routed model cannot take something the request holds (images, thinking…)."""


@dataclass
class GuardProblem:
    """One invariant violation: ``code`` (``orphan_tool_call``, ``orphan_tool_result``,
    ``duplicate_tool_result``, ``duplicate_tool_call``, ``result_out_of_order``,
    ``result_before_call``, ``result_not_adjacent``), the tool-call ``id`` and where it sits in
    the client's request (``location``)."""

    code: str
    id: str
    location: str | None
    message: str
    extra: dict[str, Any] = field(default_factory=dict)


class GuardViolation(InvalidRequest):
    """The request breaks a tool-call invariant (pairing or ordering) and policy says reject.

    ``problems`` lists every violation found; the message names each id and location.
    """

    def __init__(self, problems: list[GuardProblem]) -> None:
        text = "; ".join(p.message for p in problems)
        super().__init__(text, param="messages", details=[p.__dict__ for p in problems])
        self.problems = problems


class ToolLoopGuardViolation(GuardViolation):
    """The gateway's own tool loop built a history that breaks pairing or ordering (a bug in
    the gateway, not in the client's request): raised before the request goes upstream."""

    status = 500
    kind = "api_error"


class UpstreamError(TurnstileError):
    """The upstream answered with an error status.

    ``status`` is the upstream's (429 and 5xx are candidates for fallback);
    ``retry_after_s`` is the parsed ``retry-after`` header in seconds, if any. ``message`` and
    ``body`` are kept with every credential cut out (:func:`gateway.redaction.redact_secrets`):
    an upstream may quote the key it was sent, and this error reaches the client, the
    transcript, the logs and the console.
    """

    kind = "upstream"

    def __init__(
        self,
        message: str,
        *,
        status: int = 502,
        retry_after_s: float | None = None,
        deployment: str | None = None,
        body: str | None = None,
    ) -> None:
        super().__init__(redact_secrets(message))
        self.status = status
        self.retry_after_s = retry_after_s
        self.deployment = deployment
        self.body = redact_secrets(body) if body is not None else None
        if status == 429:
            self.kind = "rate_limit"
        elif status in (400, 404, 413, 422):
            self.kind = "invalid_request"
        elif status == 401:
            self.kind = "authentication"
        elif status == 403:
            self.kind = "permission"
        elif status in (503, 529):
            self.kind = "overloaded"

    @property
    def retryable(self) -> bool:
        """True for 408, 409, 429 and 5xx: another deployment may serve the turn."""
        return self.status in (408, 409, 429) or self.status >= 500


class UpstreamTimeout(UpstreamError):
    """Connect, first-byte, between-chunk or total timeout toward an upstream."""

    kind = "timeout"

    def __init__(self, message: str, *, deployment: str | None = None) -> None:
        super().__init__(message, status=504, deployment=deployment)
        self.kind = "timeout"


class UpstreamProtocolError(UpstreamError):
    """The upstream sent something its wire API does not allow or Turnstile does not know
    (an unknown stop reason, malformed JSON, a cut-off stream). Nothing is guessed."""

    def __init__(self, message: str, *, deployment: str | None = None, body: str | None = None) -> None:
        super().__init__(message, status=502, deployment=deployment, body=body)
        self.kind = "upstream"


class UpstreamTooLarge(UpstreamError):
    """An upstream answer grew past its byte cap (``server.max_response_bytes``, or the
    deployment's ``max_response_bytes``) while it was read; the rest was not read.
    ``limit_bytes`` is the cap, ``read_bytes`` what had arrived (or was declared)."""

    def __init__(self, message: str, *, deployment: str | None, limit_bytes: int, read_bytes: int) -> None:
        super().__init__(message, status=502, deployment=deployment)
        self.kind = "upstream"
        self.limit_bytes = limit_bytes
        self.read_bytes = read_bytes


class UnknownStopReason(UpstreamProtocolError):
    """An upstream stop reason that the adapter does not know."""


class TranscriptUnavailable(TurnstileError):
    """The transcript store is not accepting writes (queue full or a commit overdue past
    ``server.transcript_commit_timeout_s``): a new turn is refused before anything goes
    upstream, since its row could not be kept (:class:`gateway.transcript.TranscriptWriter`,
    admission control). ``retry_after_s``: seconds the client should wait."""

    status = 503
    kind = "overloaded"

    def __init__(self, message: str, *, retry_after_s: float) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class TurnCutByShutdown(TurnstileError):
    """The gateway shut down before the turn finished: its graceful-shutdown bound
    (``server.shutdown_timeout_s``) passed and the turn was cut (:mod:`gateway.shutdown`)."""

    status = 503
    kind = "overloaded"

    def __init__(self) -> None:
        super().__init__(
            "cut by shutdown: the gateway shut down before this turn finished "
            "(its graceful-shutdown bound, server.shutdown_timeout_s, passed)"
        )


class LimitExceeded(TurnstileError):
    """A turn refused by a limit of its key, team or deployment (:mod:`gateway.limits`):
    HTTP 429. ``scope`` names the holder (``key:<id>``, ``team:<id>``,
    ``deployment:<name>``); ``retry_after_s`` is whole seconds until it may pass (None: not
    within any known time); ``headers`` are the answer's rate-limit headers
    (``retry-after``, ``x-ratelimit-*``, ``anthropic-ratelimit-*``, as the SDKs read them);
    ``details`` repeats what was refused for the error body."""

    status = 429
    kind = "rate_limit"

    def __init__(
        self,
        message: str,
        *,
        scope: str,
        retry_after_s: int | None,
        headers: dict[str, str],
        details: Any = None,
    ) -> None:
        super().__init__(message, details=details)
        self.scope = scope
        self.retry_after_s = retry_after_s
        self.headers = headers


class RateLimitExceeded(LimitExceeded):
    """Requests/min, tokens/min or concurrent turns of a scope are at their limit.
    ``dimension``: ``requests``, ``tokens`` or ``concurrent``; ``limit`` its value."""

    def __init__(
        self,
        message: str,
        *,
        scope: str,
        dimension: str,
        limit: int,
        retry_after_s: int | None,
        headers: dict[str, str],
    ) -> None:
        details = {"scope": scope, "dimension": dimension, "limit": limit, "retry_after_s": retry_after_s}
        super().__init__(message, scope=scope, retry_after_s=retry_after_s, headers=headers, details=details)
        self.dimension = dimension
        self.limit = limit


class BudgetExceeded(LimitExceeded):
    """A hard USD budget of a scope cannot take the turn's worst-case cost. ``period``
    (``day``/``week``/``month``/``total``), ``limit_usd``, and ``reset_at`` (an aware datetime,
    None for ``total``) say which budget and when it starts again. ``error_code``
    ``insufficient_quota``: the type OpenAI's SDKs and clients read as "out of credit"."""

    error_code: str | None = "insufficient_quota"

    def __init__(
        self,
        message: str,
        *,
        scope: str,
        period: str,
        limit_usd: float,
        reset_at: Any,
        retry_after_s: int | None,
        headers: dict[str, str],
    ) -> None:
        details = {
            "scope": scope,
            "period": period,
            "limit_usd": limit_usd,
            "reset_at": None if reset_at is None else reset_at.isoformat(),
        }
        super().__init__(message, scope=scope, retry_after_s=retry_after_s, headers=headers, details=details)
        self.period = period
        self.limit_usd = limit_usd
        self.reset_at = reset_at


class BudgetBusy(BudgetExceeded):
    """A hard USD budget has room for the turn's worst-case cost in what is spent, but not
    while other turns of the scope hold their reservations (turns in flight): still HTTP 429,
    but a rate-limit error the SDKs retry (``retry-after``, ``x-should-retry: true``), without
    the ``insufficient_quota`` code of a budget spent — the reservations are settled or
    released as those turns end. ``spent_usd``: what the budget has spent."""

    error_code = None
    spent_usd: float = 0.0


class LimitsUnavailable(TurnstileError):
    """The shared limit counters (Redis, ``redis.url``) cannot be reached and ``redis.fail``
    is ``closed``: the turn is refused rather than admitted unchecked. HTTP 503."""

    status = 503
    kind = "overloaded"

    def __init__(self, message: str, *, retry_after_s: float = 1.0) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s
