"""Who a request's caller is: its virtual key read where its SDK sends it, looked up (cached
for at most ``access.cache_ttl_s``, <= 1 s) and judged.

Where a key is read, in this order (the first ``tsk-`` value wins): ``Authorization: Bearer``
(OpenAI SDKs, MCP clients), ``x-api-key`` (Anthropic SDKs), ``x-goog-api-key`` (google-genai;
the server copies Gemini's ``?key=`` there).

``access.auth`` (:func:`gateway.config.effective_auth`):

* ``required``: a request without a ``tsk-`` key, or with one that is unknown, revoked,
  disabled, expired or of a deleted team, is refused: :class:`AuthenticationRequired` (401);
* ``optional``: a presented ``tsk-`` key is judged as above; any other key, or none, is
  anonymous (None);
* ``off``: keys are not read (the gateway never builds an :class:`Identity`).

The cache holds the stored rows, not the verdict: expiry is judged on every request against
the clock, so a key expires on time whatever the cache holds; a key revoked or disabled (here
or on another instance sharing the store) is refused once its entry is older than the TTL.
Unknown keys are cached too (a flood of bad keys costs one lookup per key per TTL). The cache
is bounded (:data:`MAX_CACHED`): when full it is emptied.

Refusals of a known key (revoked, disabled, expired, team deleted) are written to the access
audit; those of a missing or unknown key are only logged, so that anonymous traffic cannot
grow the audit. A known key's turn refused by its (or its team's) budget or rate limit is
audited too (``limit.refused``, :meth:`Identity.limit_refused`), at most once per key, scope
and limit every :data:`AUDIT_REFUSALS_EVERY_S` seconds per process: a client hammering past its
limit adds one event a minute, which counts the refusals not written since the previous one
(every refusal is counted in ``turnstile_limit_rejections_total``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from operator import itemgetter
from typing import Any

import structlog

from gateway.access.keygen import KEY_PREFIX, digest, is_virtual_key
from gateway.access.model import AuditEvent, Key, Principal, Team, principal_of
from gateway.access.store import AccessStore
from gateway.access.visibility import key_visibility
from gateway.errors import AuthenticationRequired, LimitExceeded, PermissionDenied
from mcp_servers.clients import Visibility, bearer

log = structlog.get_logger("turnstile.access")

MAX_CACHED = 10_000
"""Key lookups one process keeps at most (and limit refusals it remembers for the audit)."""

AUDIT_REFUSALS_EVERY_S = 60.0
"""Seconds between two ``limit.refused`` audit events of one key, scope and limit."""

_KEY_BYTES = KEY_PREFIX.encode()
_value = itemgetter(1)
HINT = (
    "send a Turnstile virtual key (tsk-...) as the API key (Authorization: Bearer, x-api-key, "
    "x-goog-api-key or ?key=); an administrator makes one with `turnstile keys create`"
)


def presented_key(headers: Mapping[str, str]) -> str | None:
    """The first ``tsk-`` key of ``Authorization: Bearer``, ``x-api-key`` and
    ``x-goog-api-key``, or None."""
    for value in (bearer(headers), headers.get("x-api-key"), headers.get("x-goog-api-key")):
        if value:
            value = value.strip()
            if is_virtual_key(value):
                return value
    return None


def may_hold_key(headers: Any) -> bool:
    """A cheap first look (one pass over the raw header values, every turn pays for it):
    whether any header value holds ``tsk-`` at all. False means :func:`presented_key` is None.
    ``headers``: Starlette ``Headers`` (its raw byte pairs are read) or any mapping."""
    if headers is None:
        return False
    raw = getattr(headers, "raw", None)
    if raw is None:
        return any(KEY_PREFIX in str(v) for v in headers.values())
    # the values joined by C code (map, itemgetter, join): a handful of opcodes however many
    # headers there are, where a Python loop costs several per header
    return _KEY_BYTES in b"\0".join(map(_value, raw))


class Identity:
    """Judges callers by their virtual keys for one gateway process.

    ``store`` holds the keys; ``required``: whether a caller must present one; ``ttl_s``:
    the cache bound (seconds); ``clock`` (monotonic, for the cache) and ``now`` (wall clock,
    for expiry) are injectable for tests. ``owner`` (set once the MCP registry runs) maps an
    exposed MCP tool name to its (server, tool) pair, for MCP visibility.
    """

    def __init__(
        self,
        store: AccessStore,
        *,
        required: bool,
        ttl_s: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
        now: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.required = required
        self.ttl_s = ttl_s
        self.clock = clock
        self.now = now
        self.owner: Callable[[str], tuple[str, str] | None] | None = None
        self._cache: dict[str, tuple[float, tuple[Key, Team | None] | None]] = {}
        # the principal of each cached lookup, built once while that lookup is the cached one
        self._principals: dict[str, tuple[tuple[Key, Team | None], Principal]] = {}
        self._refusals: dict[
            tuple[str, str, str], list[float]
        ] = {}  # -> [last event (clock), refusals since]

    def forget(self) -> None:
        """Drop every cached lookup (after a change made through this process's admin API)."""
        self._cache.clear()
        self._principals.clear()

    async def _lookup(self, key_hash: str) -> tuple[Key, Team | None] | None:
        now = self.clock()
        hit = self._cache.get(key_hash)
        if hit is not None and hit[0] > now:
            return hit[1]
        found = await self.store.lookup(key_hash)
        if len(self._cache) >= MAX_CACHED:
            self._cache.clear()
        self._cache[key_hash] = (now + self.ttl_s, found)
        return found

    async def principal(self, secret: str, *, request_id: str | None = None) -> Principal:
        """The principal of the key ``secret``. Raises :class:`AuthenticationRequired` naming
        why it is refused (unknown, revoked, disabled, expired, team deleted)."""
        key_hash = digest(secret)
        found = await self._lookup(key_hash)
        if found is None:
            log.info("access_denied", reason="unknown key", prefix=secret[:12], request_id=request_id)
            raise AuthenticationRequired(f"the key {secret[:12]}... is not a key of this gateway; {HINT}")
        key, team = found
        why = self._refusal(key, team)
        if why is not None:
            await self._deny(key.id, key.id, why, request_id)
            raise AuthenticationRequired(f"the key {key.prefix}... ({key.id}) is {why}")
        built = self._principals.get(key_hash)
        if built is not None and built[0] is found:
            return built[1]
        principal = principal_of(key, team)
        if len(self._principals) >= MAX_CACHED:
            self._principals.clear()
        self._principals[key_hash] = (found, principal)
        return principal

    def _refusal(self, key: Key, team: Team | None) -> str | None:
        if key.revoked_at is not None:
            return "revoked"
        if not key.enabled:
            return "disabled"
        if key.expires_at is not None and self.now() >= key.expires_at:
            return "expired"
        if key.team_id is not None and team is None:
            return f"of team {key.team_id}, which was deleted"
        return None

    async def admit(self, headers: Mapping[str, str], *, request_id: str | None = None) -> Principal | None:
        """The caller's principal; None for an anonymous caller where keys are optional.
        Raises :class:`AuthenticationRequired`."""
        secret = presented_key(headers)
        if secret is None:
            if self.required:
                log.info("access_denied", reason="no key", request_id=request_id)
                raise AuthenticationRequired(f"this gateway requires a key; {HINT}")
            return None
        return await self.principal(secret, request_id=request_id)

    async def check_model(self, principal: Principal, model: str, *, request_id: str | None = None) -> None:
        """Raises :class:`PermissionDenied` naming ``model`` unless the key and its team allow it."""
        if principal.allows_model(model):
            return
        await self._deny(principal.key_id, model, "model not allowed", request_id)
        raise PermissionDenied(
            f"model {model!r} is not allowed for key {principal.key_id} ({principal.key_name})"
            + (f" of team {principal.team_name}" if principal.team_id else ""),
            param="model",
        )

    def visibility(self, principal: Principal) -> Visibility:
        """The MCP tools ``principal`` may see and run."""
        return key_visibility(principal, self.owner)

    async def mcp_visibility(self, headers: Any) -> Visibility | None:
        """:data:`mcp_servers.clients.KeyAuth`: the MCP visibility of the caller's key, None
        when it presents none and keys are optional. Raises :class:`AuthenticationRequired`."""
        principal = await self.admit(headers)
        return None if principal is None else self.visibility(principal)

    async def limit_refused(
        self, principal: Principal, err: LimitExceeded, *, limit: str, request_id: str | None
    ) -> None:
        """Audit a turn of ``principal`` refused by ``err`` (``limit``: ``budget``,
        ``requests``, ``tokens`` or ``concurrent``): one ``limit.refused`` event naming the
        key (actor), the scope (target), the limit (reason) and in ``detail`` the request id,
        the refusal's message and ``refused_since_last_event``; at most one per key, scope and
        limit every :data:`AUDIT_REFUSALS_EVERY_S` seconds (the others only counted). A failure
        to write it is logged, not raised."""
        slot = (principal.key_id, err.scope, limit)
        now = self.clock()
        seen = self._refusals.get(slot)
        if seen is not None and now - seen[0] < AUDIT_REFUSALS_EVERY_S:
            seen[1] += 1
            return
        since = int(seen[1]) if seen is not None else 0
        if len(self._refusals) >= MAX_CACHED:
            self._refusals.clear()
        self._refusals[slot] = [now, 0]
        detail: dict[str, Any] = {"message": err.message, "refused_since_last_event": since}
        if request_id:
            detail["request_id"] = request_id
        if err.details:
            detail["limit"] = err.details
        await self._write(
            AuditEvent(
                ts=self.now(),
                action="limit.refused",
                actor=principal.key_id,
                target=err.scope,
                reason=limit,
                detail=detail,
            )
        )

    async def _write(self, event: AuditEvent) -> None:
        """Append ``event`` to the audit (a failure to write it is logged, not raised)."""
        try:
            await self.store.audit(event)
        except Exception as err:  # the refusal stands; the audit line is lost, and said so
            log.error("access_audit_failed", error=str(err), event=event.model_dump())

    async def _deny(self, actor: str, target: str, reason: str, request_id: str | None) -> None:
        """One ``access.denied`` audit event (a failure to write it is logged, not raised)."""
        log.info("access_denied", reason=reason, key=actor, target=target, request_id=request_id)
        event = AuditEvent(
            ts=self.now(),
            action="access.denied",
            actor=actor,
            target=target,
            reason=reason,
            detail={"request_id": request_id} if request_id else {},
        )
        await self._write(event)
