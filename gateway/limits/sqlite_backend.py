"""The limit counters the worker processes of one machine share: a SQLite file (WAL).

``turnstile serve --workers N`` without ``redis.url`` runs N processes; each opens this backend
on the same file (:func:`gateway.config.shared_state_path`), so a key's budgets, requests/min,
tokens/min and concurrent turns are counted once for all of them, as one process counts them.

Every admission is one ``BEGIN IMMEDIATE`` transaction over all the turn's scopes: it loads the
counters it checks into a scratch :class:`gateway.limits.memory.MemoryLimits` (the very same
decision code: sweeping, refusals, soft alerts, rate headers), decides, and writes back what
changed before it commits. SQLite lets one writer in at a time, so workers see admissions one at
a time and a hard budget is never overshot, whatever the number of workers. A settle or release
is one more transaction. The calls run in one thread of this process
(:class:`gateway.store_thread.StoreThread`), never on the event loop; a worker waits for the
write lock at most :data:`gateway.workers_state.BUSY_TIMEOUT_S` (5 s).

Budget windows are seeded from the spend source (the ledger) the first time a worker needs
them, as in Redis; reservations and concurrent slots carry the lease deadline (``lease_ttl_s``)
stored in the file, so a worker killed mid-turn stops holding budget and slots when it passes.

When the file is unusable (cannot be opened, disk error, the write lock not had within
that bound) admissions fail closed: :class:`gateway.errors.LimitsUnavailable`
(HTTP 503). A settle or release that fails is logged, never raised (the turn ran).

Money is integer nano-dollars, times epoch seconds truncated to the millisecond (REAL).
"""

from __future__ import annotations

import asyncio
import math
import sqlite3
import time
import uuid
from collections import deque
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import structlog

from gateway.errors import LimitExceeded, LimitsUnavailable
from gateway.limits.backend import Clock, SpendSource, ms_now, no_spend
from gateway.limits.decisions import Reservation
from gateway.limits.memory import BudgetKey, MemoryLimits, _Budget, _Plan
from gateway.limits.model import Scope, nano_to_usd, usd_to_nano
from gateway.limits.periods import Period, WindowCache
from gateway.limits.window import WINDOW_S, SlidingWindow
from gateway.workers_state import SharedFile

log = structlog.get_logger("turnstile.limits")

SEED_ROUNDS = 3
"""Admission attempts that may ask for seeds before a still missing window starts empty."""

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS lim_budget (scope TEXT NOT NULL, period TEXT NOT NULL, "
    "start REAL NOT NULL, spent INTEGER NOT NULL, PRIMARY KEY (scope, period, start)) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS lim_hold (scope TEXT NOT NULL, period TEXT NOT NULL, start REAL NOT NULL, "
    "rid TEXT NOT NULL, amount INTEGER NOT NULL, deadline REAL NOT NULL, "
    "PRIMARY KEY (scope, period, start, rid)) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS lim_bucket (scope TEXT NOT NULL, dim TEXT NOT NULL, "
    "second INTEGER NOT NULL, n INTEGER NOT NULL, PRIMARY KEY (scope, dim, second)) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS lim_lease (scope TEXT NOT NULL, rid TEXT NOT NULL, deadline REAL NOT NULL, "
    "PRIMARY KEY (scope, rid)) WITHOUT ROWID",
)


class _Txn:
    """``BEGIN IMMEDIATE`` … ``COMMIT``; ``ROLLBACK`` on any error but a refusal (an admission
    refused keeps the windows it seeded and the expired entries it swept: nothing it took)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def __enter__(self) -> sqlite3.Connection:
        self.conn.execute("BEGIN IMMEDIATE")
        return self.conn

    def __exit__(self, kind: Any, err: Any, tb: Any) -> None:
        ok = kind is None or issubclass(kind, LimitExceeded)
        self.conn.execute("COMMIT" if ok else "ROLLBACK")


class SqliteLimits:
    """:class:`gateway.limits.backend.Limits` in the SQLite file ``path``, shared by every
    process that opens it (see the module docstring). ``timezone``, ``spend``, ``clock``,
    ``lease_ttl_s``: as :class:`gateway.limits.memory.MemoryLimits`. Nothing is opened until
    the first call."""

    def __init__(
        self,
        path: str | Path,
        *,
        timezone: str = "UTC",
        spend: SpendSource = no_spend,
        clock: Clock = time.time,
        lease_ttl_s: float = 960.0,
    ) -> None:
        self.path = str(path)
        self.windows = WindowCache(timezone)
        self.spend = spend
        self.clock = clock
        self.lease_ttl_s = lease_ttl_s
        self._scratch = MemoryLimits(timezone=timezone, clock=clock, lease_ttl_s=lease_ttl_s)
        self._scratch.windows = self.windows
        self._file = SharedFile(self.path, SCHEMA, "limits-store")
        self._db = self._file.db  # the connection, opened on first use in the store thread
        self._run = self._file.run
        self._undoing: set[asyncio.Future[None]] = set()

    # ---------------------------------------------------------------- plumbing

    def _unusable(self, err: BaseException) -> LimitsUnavailable:
        log.error("limits_unavailable", error=f"{type(err).__name__}: {err}", file=self.path)
        return LimitsUnavailable(
            f"the limit counters the workers share (SQLite file {self.path}) are unusable "
            f"({type(err).__name__}: {err}): turns are refused until it works again"
        )

    # ---------------------------------------------------------------- admission

    async def admit(self, scopes: Sequence[Scope], cost_usd: float) -> Reservation:
        """See :meth:`gateway.limits.backend.Limits.admit`: one transaction (a budget window
        seen for the first time: one more, after its seed is read from the spend source).
        Raises :class:`gateway.errors.LimitsUnavailable` when the file is unusable."""
        cost = usd_to_nano(cost_usd, up=True)
        rid = uuid.uuid4().hex
        if not any(s.limited for s in scopes):  # nothing to count: no transaction
            return Reservation(id=f"m{rid}", cost_nano=cost, plan=_Plan([], [], []))
        seeds: dict[BudgetKey, int] = {}
        for round_ in range(SEED_ROUNDS + 1):
            now = ms_now(self.clock)
            call = self._run(self._admit_sync, list(scopes), cost, now, rid, seeds, round_ == SEED_ROUNDS)
            try:
                got = await asyncio.shield(call)
            except asyncio.CancelledError:
                call.add_done_callback(self._undo)
                raise
            except sqlite3.Error as err:
                raise self._unusable(err) from err
            if isinstance(got, Reservation):
                return got
            for key, reset in got:  # windows without a counter: read what they spent
                name, period, start = key
                seeds[key] = usd_to_nano(await self.spend(name, period, start, reset))
        raise AssertionError("unreachable: the last round starts missing windows empty")

    def _undo(self, done: asyncio.Future[Any]) -> None:
        """An admission whose turn was cancelled while it ran: give back what it took."""
        if done.cancelled() or done.exception() is not None or not isinstance(done.result(), Reservation):
            return
        task = asyncio.ensure_future(self.release(done.result()))
        self._undoing.add(task)
        task.add_done_callback(self._undoing.discard)

    def _admit_sync(
        self,
        scopes: list[Scope],
        cost: int,
        now: float,
        rid: str,
        seeds: dict[BudgetKey, int],
        force: bool,
    ) -> Reservation | list[tuple[BudgetKey, float | None]]:
        """In the store thread: the admission's transaction, or the windows to seed first."""
        with _Txn(self._db()) as db:
            m = self._scratch
            m._budgets, m._current, m._rates, m._leases = {}, {}, {}, {}
            missing: list[tuple[BudgetKey, float | None]] = []
            held: dict[BudgetKey, set[str]] = {}
            for scope in scopes:
                name = scope.name
                for b in scope.budgets:
                    start, reset = self.windows.window(now, b.period)
                    key = (name, b.period, start)
                    row = db.execute(
                        "SELECT spent FROM lim_budget WHERE scope=? AND period=? AND start=?", key
                    ).fetchone()
                    if row is None:
                        if key in seeds or force:
                            spent = seeds.get(key, 0)
                            db.execute("INSERT INTO lim_budget VALUES (?,?,?,?)", (*key, spent))
                            # a past window of this scope and period: late settles are dropped
                            db.execute("DELETE FROM lim_budget WHERE scope=? AND period=? AND start<?", key)
                            db.execute("DELETE FROM lim_hold WHERE scope=? AND period=? AND start<?", key)
                            row = (spent,)
                        else:
                            missing.append((key, reset))
                            continue
                    counter = m._budgets[key] = _Budget(spent=row[0])
                    for hold_rid, amount, deadline in db.execute(
                        "SELECT rid, amount, deadline FROM lim_hold WHERE scope=? AND period=? AND start=? "
                        "ORDER BY deadline",
                        key,
                    ):
                        counter.holds[hold_rid] = (amount, deadline)
                        counter.reserved += amount
                    held[key] = set(counter.holds)
                r = scope.rates
                if r is None:
                    continue
                for dim, limit in (("rpm", r.rpm), ("tpm", r.tpm)):
                    if limit is not None:
                        m._rates[(name, dim)] = _load_window(db, name, dim, now)
                if r.concurrent is not None:
                    db.execute("DELETE FROM lim_lease WHERE scope=? AND deadline<=?", (name, now))
                    m._leases[name] = dict(
                        db.execute(
                            "SELECT rid, deadline FROM lim_lease WHERE scope=? ORDER BY deadline", (name,)
                        ).fetchall()
                    )
            if missing:
                return missing
            m._ids = iter((rid,))  # type: ignore[assignment]  # the reservation's id: "m" + rid
            res = m._decide(scopes, cost, now)  # raises the refusal: only seeds and sweeps are kept
            plan = res.plan
            assert isinstance(plan, _Plan)
            for key, before in held.items():
                counter = m._budgets[key]
                gone = before - counter.holds.keys()
                if gone:  # swept: past their lease
                    db.executemany(
                        "DELETE FROM lim_hold WHERE scope=? AND period=? AND start=? AND rid=?",
                        [(*key, g) for g in gone],
                    )
            deadline = now + self.lease_ttl_s
            db.executemany(
                "INSERT OR REPLACE INTO lim_hold VALUES (?,?,?,?,?,?)",
                [(*k, res.id, cost, deadline) for k in plan.budgets],
            )
            for (name, dim), w in m._rates.items():
                if dim == "rpm" and w.buckets:
                    second, n = w.buckets[-1]
                    db.execute("INSERT OR REPLACE INTO lim_bucket VALUES (?,?,?,?)", (name, dim, second, n))
            db.executemany(
                "INSERT OR REPLACE INTO lim_lease VALUES (?,?,?)",
                [(n, res.id, deadline) for n in plan.leases],
            )
            return res

    # ---------------------------------------------------------------- end of a turn

    async def settle(self, reservation: Reservation, cost_usd: float | None, tokens: int) -> None:
        """See :meth:`gateway.limits.backend.Limits.settle`: one transaction; a failure is
        logged, not raised."""
        await self._finish(
            reservation, reservation.cost_nano if cost_usd is None else usd_to_nano(cost_usd), tokens
        )

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
        call = self._run(self._finish_sync, reservation.id, plan, actual, tokens, ms_now(self.clock))
        try:  # shielded: a turn cancelled at its end (the client left) still settles what it spent
            await asyncio.shield(call)
        except sqlite3.Error as err:
            log.error(
                "limits_settle_failed", reservation=reservation.id, error=f"{type(err).__name__}: {err}"
            )

    def _finish_sync(self, rid: str, plan: _Plan, actual: int, tokens: int, now: float) -> None:
        with _Txn(self._db()) as db:
            for key in plan.budgets:
                db.execute(
                    "DELETE FROM lim_hold WHERE scope=? AND period=? AND start=? AND rid=?", (*key, rid)
                )
                if actual > 0:  # a past window's counter is gone: nothing to charge
                    db.execute(
                        "UPDATE lim_budget SET spent=spent+? WHERE scope=? AND period=? AND start=?",
                        (actual, *key),
                    )
            if tokens > 0:
                for name in plan.tpm:
                    newest = db.execute(
                        "SELECT MAX(second) FROM lim_bucket WHERE scope=? AND dim='tpm'", (name,)
                    ).fetchone()[0]
                    second = max(math.floor(now), newest or 0)  # a clock that stepped back: the newest
                    db.execute(
                        "INSERT INTO lim_bucket VALUES (?,'tpm',?,?) "
                        "ON CONFLICT (scope, dim, second) DO UPDATE SET n=n+excluded.n",
                        (name, second, tokens),
                    )
            db.executemany("DELETE FROM lim_lease WHERE scope=? AND rid=?", [(n, rid) for n in plan.leases])

    # ---------------------------------------------------------------- capacity

    async def would_admit(self, scope: Scope) -> bool:
        """See :meth:`gateway.limits.backend.Limits.would_admit` (one read; an unusable file:
        False, failing closed)."""
        r = scope.rates
        if r is None or (r.rpm is None and r.tpm is None and r.concurrent is None):
            return True
        try:
            return bool(
                await self._run(self._peek_sync, scope.name, r.rpm, r.tpm, r.concurrent, ms_now(self.clock))
            )
        except sqlite3.Error as err:
            log.error("limits_unavailable", error=f"{type(err).__name__}: {err}", file=self.path)
            return False

    def _peek_sync(
        self, name: str, rpm: int | None, tpm: int | None, concurrent: int | None, now: float
    ) -> bool:
        db = self._db()
        for dim, limit in (("rpm", rpm), ("tpm", tpm)):
            if limit is not None and _load_window(db, name, dim, now, prune=False).total + 1 > limit:
                return False
        if concurrent is not None:
            (held,) = db.execute(
                "SELECT COUNT(*) FROM lim_lease WHERE scope=? AND deadline>?", (name, now)
            ).fetchone()
            if held >= concurrent:
                return False
        return True

    async def spent_usd(self, scope: str, period: Period) -> tuple[float, float]:
        """``(spent, reserved)`` USD of ``scope``'s current ``period`` window (0 if unseen;
        reservations past their lease count until the next admission sweeps them, as in the
        other backends): for tests and the admin surface."""
        now = ms_now(self.clock)
        start, _ = self.windows.window(now, period)
        return tuple(  # type: ignore[return-value]
            nano_to_usd(v) for v in await self._run(self._spent_sync, (scope, period, start))
        )

    def _spent_sync(self, key: BudgetKey) -> tuple[int, int]:
        db = self._db()
        row = db.execute(
            "SELECT spent FROM lim_budget WHERE scope=? AND period=? AND start=?", key
        ).fetchone()
        if row is None:
            return 0, 0
        (reserved,) = db.execute(
            "SELECT COALESCE(SUM(amount), 0) FROM lim_hold WHERE scope=? AND period=? AND start=?", key
        ).fetchone()
        return row[0], reserved

    async def aclose(self) -> None:
        """Close the connection and end the store thread (after the calls handed to it)."""
        await self._file.aclose()


def _load_window(
    db: sqlite3.Connection, name: str, dim: str, now: float, *, prune: bool = True
) -> SlidingWindow:
    """The sliding window ``(name, dim)`` at ``now`` (``prune``: its buckets past the window
    are deleted; in a write transaction only)."""
    floor = math.floor(now) - WINDOW_S
    if prune:
        db.execute("DELETE FROM lim_bucket WHERE scope=? AND dim=? AND second<?", (name, dim, floor))
    w = SlidingWindow()
    w.buckets = deque(
        [s, n]
        for s, n in db.execute(
            "SELECT second, n FROM lim_bucket WHERE scope=? AND dim=? AND second>=? ORDER BY second",
            (name, dim, floor),
        )
    )
    w.total = sum(b[1] for b in w.buckets)
    return w
