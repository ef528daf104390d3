"""The shared limit counters in Redis: every gateway instance sees the same budgets, windows
and concurrent turns.

One turn costs two round trips: :meth:`RedisLimits.admit` is one script call over all its
scopes (budgets, requests/min, tokens/min, concurrent turns: :data:`redis_scripts.ADMIT`) and
:meth:`RedisLimits.settle` one more. A budget window's counter missing from Redis (first use,
expired, Redis restarted empty) is seeded from the spend source (the ledger) and the call is
repeated: a third round trip, once per window.

When Redis cannot be reached (connection refused or reset, a timeout past
``redis.timeout_s``):

* ``fail: closed`` (default): :meth:`admit` raises :class:`gateway.errors.LimitsUnavailable`
  (HTTP 503), so no turn runs unchecked.
* ``fail: open``: the turn is admitted unchecked (``Reservation.degraded``); its spend is still
  settled once Redis answers again.

After a failure Redis is not tried for :data:`DOWN_COOLDOWN_S` (turns meet the fail mode at
once rather than each waiting out a timeout of a Redis that does not answer).

A settle that cannot reach Redis is kept (at most ``pending_max``) and sent again before the
next admission or settle. Settle is idempotent by reservation id (it charges a budget only
while the reservation's field is in the counter, and removes it; a turn admitted unchecked has
a ``done`` marker instead), so a settle that was applied but whose answer was lost is harmless
to repeat: nothing is charged twice.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import redis.asyncio as aioredis
import redis.exceptions
import structlog
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from gateway.errors import LimitsUnavailable
from gateway.limits import redis_scripts
from gateway.limits.backend import Clock, SpendSource, ms_now, no_spend
from gateway.limits.decisions import (
    Reservation,
    SoftAlert,
    WindowState,
    budget_denial,
    rate_denial,
    rate_headers,
    tighter,
)
from gateway.limits.model import BudgetLimit, Scope, nano_to_usd, usd_to_nano
from gateway.limits.periods import Period, WindowCache

Arg = str | int | float
"""A script argument."""

log = structlog.get_logger("turnstile.limits")

UNREACHABLE = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, OSError)
"""What "Redis cannot be reached" is (a script error is a bug and propagates)."""

BUDGET_KEY_GRACE_MS = 86_400_000
"""A budget window's key lives this long past the window's end (late settles still land)."""


DOWN_COOLDOWN_S = 1.0
"""After Redis was unreachable, turns meet the fail mode at once for this long (seconds)
instead of each waiting for its own timeout; then Redis is tried again."""

FLUSH_BATCH = 64
"""Kept settles sent before one admission or settle, at most."""

DONE_MARKER_GRACE_MS = 3_600_000
"""The ``done`` marker of a turn admitted unchecked (fail open) lives this long past the lease
TTL: its settle repeated within it (Redis answered but the answer was lost) is not applied
twice. Other turns need no marker: their reservation fields make settle idempotent."""


@dataclass(slots=True)
class _Check:
    """One check of an admission: what it is, for the reply's decoding."""

    t: Literal["b", "q", "t", "c"]
    scope: str
    limit: int
    budget: BudgetLimit | None = None
    start_s: float = 0.0
    reset_s: float | None = None


@dataclass(slots=True)
class _Plan:
    budgets: list[tuple[str, str]]  # (hash, holds) keys
    tpm: list[str]
    leases: list[str]


class RedisLimits:
    """:class:`gateway.limits.backend.Limits` in Redis (``redis.url``).

    ``client``: a ``redis.asyncio.Redis`` made with ``decode_responses=True``
    (:meth:`from_url` makes one); ``prefix``: put before every key (one gateway deployment's
    keys apart from another's); ``fail``: ``closed`` or ``open`` (module docstring);
    ``timezone``, ``spend``, ``clock``, ``lease_ttl_s``: as :class:`MemoryLimits`.
    """

    def __init__(
        self,
        client: aioredis.Redis,
        *,
        prefix: str = "turnstile:",
        fail: Literal["closed", "open"] = "closed",
        timezone: str = "UTC",
        spend: SpendSource = no_spend,
        clock: Clock = time.time,
        lease_ttl_s: float = 960.0,
        pending_max: int = 10_000,
    ) -> None:
        self.client = client
        self.prefix = prefix
        self.fail = fail
        self.windows = WindowCache(timezone)
        self.spend = spend
        self.clock = clock
        self.lease_ttl_ms = int(lease_ttl_s * 1000)
        self.pending: deque[tuple[list[str], list[Arg]]] = deque(maxlen=pending_max)
        self._undoing: set[asyncio.Future[None]] = set()  # releases of cancelled admissions
        self.down_until = 0.0
        """Epoch seconds until which Redis is not tried again after it was unreachable."""
        self._admit = client.register_script(redis_scripts.ADMIT)
        self._settle = client.register_script(redis_scripts.SETTLE)
        self._peek = client.register_script(redis_scripts.PEEK)

    @classmethod
    def from_url(cls, url: str, *, timeout_s: float = 0.5, **kw: Any) -> RedisLimits:
        """A backend on a new connection pool to ``url`` (``redis://host:port/db``); every
        command times out after ``timeout_s`` seconds (then Redis counts as unreachable) and
        is tried once more at once on a connection error (a pooled connection that a Redis
        restart closed); both scripts are safe to repeat (``adm`` and ``done`` markers)."""
        client = aioredis.Redis.from_url(
            url,
            decode_responses=True,
            socket_timeout=timeout_s,
            socket_connect_timeout=timeout_s,
            retry=Retry(NoBackoff(), 1),
        )
        return cls(client, **kw)

    # ---------------------------------------------------------------- admission

    def _checks(self, scopes: Sequence[Scope], now: float) -> tuple[list[_Check], list[str], list[Arg]]:
        p = self.prefix
        checks: list[_Check] = []
        keys: list[str] = []
        args: list[Arg] = []
        for scope in scopes:
            name = scope.name
            for b in scope.budgets:
                start, reset = self.windows.window(now, b.period)
                base = f"{name}:{b.period}:{int(start)}"
                keys += (f"{p}b:{base}", f"{p}bh:{base}")
                ttl = 0 if reset is None else int((reset - now) * 1000) + BUDGET_KEY_GRACE_MS
                args += ("b", b.nano, 1 if b.hard else 0, ttl, "")
                checks.append(_Check("b", name, b.nano, b, start, reset))
            r = scope.rates
            if r is None:
                continue
            for t, limit, key in (("q", r.rpm, "rpm"), ("t", r.tpm, "tpm"), ("c", r.concurrent, "c")):
                if limit is not None:
                    keys.append(f"{p}{key}:{name}")
                    args += (t, limit, 1, 0, "")
                    checks.append(_Check(t, name, limit))  # type: ignore[arg-type]
        return checks, keys, args

    async def admit(self, scopes: Sequence[Scope], cost_usd: float) -> Reservation:
        """See :meth:`gateway.limits.backend.Limits.admit`: one script call (a window seen for
        the first time: one more, after its seed)."""
        now = ms_now(self.clock)
        cost = usd_to_nano(cost_usd, up=True)
        checks, keys, args = self._checks(scopes, now)
        rid = uuid.uuid4().hex
        plan = _Plan([], [], [])
        k = 0
        for c in checks:
            if c.t == "b":
                plan.budgets.append((keys[k], keys[k + 1]))
                k += 2
            else:
                if c.t == "t":
                    plan.tpm.append(keys[k])
                elif c.t == "c":
                    plan.leases.append(keys[k])
                k += 1
        if not checks:
            return Reservation(id=rid, cost_nano=cost, plan=plan)
        if now < self.down_until:
            return self._unreachable(None, rid, cost, plan)
        now_ms = round(now * 1000)
        head: list[Arg] = [now_ms, rid, cost, now_ms + self.lease_ttl_ms, len(checks)]
        try:
            if self.pending:
                await self._flush()
            keys.insert(0, f"{self.prefix}adm:{rid}")
            reply = await self._admit_shielded(keys, head + args, rid, cost, plan)
            for _ in range(3):
                if reply[0] != "seed":
                    break
                for i in reply[1:]:
                    c = checks[int(i) - 1]
                    assert c.budget is not None
                    usd = await self.spend(c.scope, c.budget.period, c.start_s, c.reset_s)
                    read_ms = round(ms_now(self.clock) * 1000)  # after the read: what it holds
                    args[(int(i) - 1) * 5 + 4] = f"{usd_to_nano(usd)}:{read_ms}"
                reply = await self._admit_shielded(keys, head + args, rid, cost, plan)
        except UNREACHABLE as err:
            self.down_until = self.clock() + DOWN_COOLDOWN_S
            return self._unreachable(err, rid, cost, plan)
        return self._decode(reply, checks, rid, cost, plan, now)

    async def _admit_shielded(
        self, keys: list[str], args: list[Arg], rid: str, cost: int, plan: _Plan
    ) -> Any:
        """One admission script call; when the turn is cancelled while it is in flight, what it
        took (if it was taken) is released as soon as the answer arrives."""
        call = asyncio.ensure_future(self._admit(keys=keys, args=args))
        try:
            return await asyncio.shield(call)
        except asyncio.CancelledError:
            call.add_done_callback(lambda done: self._undo(done, rid, cost, plan))
            raise

    def _undo(self, done: asyncio.Future[Any], rid: str, cost: int, plan: _Plan) -> None:
        if done.cancelled() or done.exception() is not None or done.result()[0] != "ok":
            return
        task = asyncio.ensure_future(self.release(Reservation(id=rid, cost_nano=cost, plan=plan)))
        self._undoing.add(task)
        task.add_done_callback(self._undoing.discard)

    def _unreachable(self, err: BaseException | None, rid: str, cost: int, plan: _Plan) -> Reservation:
        """The turn under the fail mode; ``err`` None: within the cooldown (logged once, at
        the failure)."""
        if err is not None:
            emit = log.error if self.fail == "closed" else log.warning
            emit("limits_unavailable", error=f"{type(err).__name__}: {err}", fail=self.fail)
        if self.fail == "closed":
            raise LimitsUnavailable(
                "the shared limit counters (Redis, redis.url) are unreachable and redis.fail is closed: "
                "turns are refused until they answer again"
            ) from err
        return Reservation(id=rid, cost_nano=cost, degraded=True, plan=plan)

    def _decode(
        self, reply: list[Any], checks: list[_Check], rid: str, cost: int, plan: _Plan, now: float
    ) -> Reservation:
        if reply[0] == "deny":
            c = checks[int(reply[2]) - 1]
            a, b, z = int(reply[3]), int(reply[4]), int(reply[5])
            if reply[1] == "b":
                assert c.budget is not None
                raise budget_denial(
                    scope=c.scope,
                    period=c.budget.period,
                    limit_nano=c.limit,
                    spent_nano=a,
                    reserved_nano=b,
                    cost_nano=cost,
                    reset_s=c.reset_s,
                    now_s=now,
                )
            dim = {"q": "requests", "t": "tokens", "c": "concurrent"}[c.t]
            state = None if c.t == "c" else WindowState(c.limit, max(c.limit - a, 0), z / 1000)
            raise rate_denial(
                scope=c.scope,
                dimension=dim,
                limit=c.limit,
                used=a,
                retry_s=float("inf") if b < 0 else b / 1000,
                state=state,
                now_s=now,
            )
        if reply[0] != "ok":
            raise RuntimeError(f"limits admission script: unexpected reply {reply[0]!r}")
        soft, states = reply[1], reply[2]
        alerts: list[SoftAlert] = []
        for j in range(0, len(soft), 3):
            c = checks[int(soft[j]) - 1]
            assert c.budget is not None
            alerts.append(
                SoftAlert(
                    c.scope,
                    c.budget.period,
                    c.budget.usd,
                    nano_to_usd(int(soft[j + 1])),
                    nano_to_usd(int(soft[j + 2])),
                    nano_to_usd(cost),
                )
            )
        req: WindowState | None = None
        tok: WindowState | None = None
        for j in range(0, len(states), 3):
            c = checks[int(states[j]) - 1]
            st = WindowState(c.limit, max(c.limit - int(states[j + 1]), 0), int(states[j + 2]) / 1000)
            if c.t == "q":
                req = tighter(req, st)
            else:
                tok = tighter(tok, st)
        headers = rate_headers(req, tok, now) if req or tok else {}
        return Reservation(id=rid, cost_nano=cost, alerts=tuple(alerts), headers=headers, plan=plan)

    # ---------------------------------------------------------------- end of a turn

    async def settle(self, reservation: Reservation, cost_usd: float | None, tokens: int) -> None:
        """See :meth:`gateway.limits.backend.Limits.settle`: one script call; kept and sent
        again later when Redis is unreachable."""
        actual = reservation.cost_nano if cost_usd is None else usd_to_nano(cost_usd)
        await self._finish(reservation, actual, tokens)

    async def release(self, reservation: Reservation) -> None:
        """See :meth:`gateway.limits.backend.Limits.release`."""
        await self._finish(reservation, 0, 0)

    async def _finish(self, reservation: Reservation, actual: int, tokens: int) -> None:
        plan = reservation.plan
        if reservation.done or not isinstance(plan, _Plan):
            return
        reservation.done = True
        if not (plan.budgets or plan.tpm or plan.leases):
            return
        keys = [f"{self.prefix}done:{reservation.id}"]
        for h, z in plan.budgets:
            keys += (h, z)
        keys += plan.tpm
        keys += plan.leases
        args: list[Arg] = [
            reservation.id,
            round(ms_now(self.clock) * 1000),
            actual,
            max(tokens, 0),
            self.lease_ttl_ms + DONE_MARKER_GRACE_MS if reservation.degraded else 0,
            len(plan.budgets),
            len(plan.tpm),
            len(plan.leases),
        ]
        if self.clock() < self.down_until:
            self.pending.append((keys, args))
            return
        # shielded: a turn cancelled at its end (the client left) still settles what it spent
        await asyncio.shield(self._send_settle(reservation.id, keys, args))

    async def _send_settle(self, rid: str, keys: list[str], args: list[Arg]) -> None:
        try:
            if self.pending:
                await self._flush()
            await self._settle(keys=keys, args=args)
        except UNREACHABLE as err:
            self.down_until = self.clock() + DOWN_COOLDOWN_S
            log.warning("limits_settle_deferred", reservation=rid, error=f"{type(err).__name__}: {err}")
            self.pending.append((keys, args))
        except redis.exceptions.RedisError as err:  # a script error: a bug; the turn ran, so not raised
            log.error("limits_settle_failed", reservation=rid, error=f"{type(err).__name__}: {err}")

    async def _flush(self) -> None:
        """Send up to :data:`FLUSH_BATCH` of the settles kept while Redis was unreachable,
        oldest first (so one turn does not wait for a whole outage's backlog). Each is taken off
        the queue before it is sent, so concurrent flushes never send one twice nor skip one; an
        unreachable error puts it back and is raised."""
        for _ in range(min(FLUSH_BATCH, len(self.pending))):
            if not self.pending:
                return
            keys, args = self.pending.popleft()
            try:
                await self._settle(keys=keys, args=args)
            except UNREACHABLE:
                self.pending.appendleft((keys, args))
                raise
            except redis.exceptions.RedisError as err:
                log.error("limits_settle_failed", reservation=args[0], error=f"{type(err).__name__}: {err}")

    # ---------------------------------------------------------------- capacity

    async def would_admit(self, scope: Scope) -> bool:
        """See :meth:`gateway.limits.backend.Limits.would_admit` (one read script call;
        unreachable Redis: False when failing closed, True when failing open)."""
        r = scope.rates
        if r is None or (r.rpm is None and r.tpm is None and r.concurrent is None):
            return True
        p, name = self.prefix, scope.name
        keys = [f"{p}rpm:{name}", f"{p}tpm:{name}", f"{p}c:{name}"]
        none = -1
        args = [
            round(ms_now(self.clock) * 1000),
            none if r.rpm is None else r.rpm,
            none if r.tpm is None else r.tpm,
            none if r.concurrent is None else r.concurrent,
        ]
        if self.clock() < self.down_until:
            return self.fail == "open"
        try:
            return bool(await self._peek(keys=keys, args=args))
        except UNREACHABLE:
            self.down_until = self.clock() + DOWN_COOLDOWN_S
            return self.fail == "open"

    async def spent_usd(self, scope: str, period: Period) -> tuple[float, float]:
        """``(spent, reserved)`` USD of ``scope``'s current ``period`` window (0 if unseen)."""
        start, _ = self.windows.window(self.clock(), period)
        got = await self.client.hmget(f"{self.prefix}b:{scope}:{period}:{int(start)}", ["s", "r"])
        return nano_to_usd(int(got[0] or 0)), nano_to_usd(int(got[1] or 0))

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self.client.aclose()
