"""Deployment health shared by every instance: consecutive failures, cooldowns, circuit
breakers and the retry budget (:mod:`routers.health`), kept in Redis.

Each instance keeps its own :class:`routers.health.HealthBoard`, which the route layer reads
without waiting for anything; this module keeps the boards in agreement:

* a failure, and the success of a deployment that was failing, runs one script
  (:data:`FAILURE`, :data:`SUCCESS`) that updates the deployment's hash ``h:<deployment>``
  atomically (failures counted over every instance, the cooldown the longest asked, the
  circuit opened at ``failure_threshold`` consecutive failures wherever they happened) and
  publishes the result on the change channel; every instance (the one that failed too) puts it
  into its board (:meth:`HealthBoard.apply`). It runs in a task of its own, after the local
  board already took the failure: the turn waits for nothing. A success of a healthy
  deployment — the hot path — costs nothing.
* the retry budget is one token bucket (hash ``rb``): every :data:`BUDGET_SYNC_S` an instance
  with turns or fallbacks since its last sync sends their count in one script call
  (:data:`BUDGET`) and takes the shared level back, so fallbacks over all instances stay
  within ``1 + ratio`` of all their turns (slack: what the instances spend between syncs).
* at start, and when the change channel is back after a loss, every configured deployment's
  hash is read (one pipelined round trip).

Time in Redis is the instances' wall clock in milliseconds (kept in sync by NTP, as the limit
windows are). The half-open probe stays per instance: a circuit whose ``open_s`` ran out admits
one probe on each instance, and the first success closes it everywhere.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterable
from typing import Any

import structlog

from gateway.fleet.bus import RESYNC, ChangeBus
from gateway.fleet.link import RedisLink
from routers.health import HealthBoard

log = structlog.get_logger("turnstile.fleet")

BUDGET_SYNC_S = 0.25
"""How often (seconds) an instance with retry-budget activity syncs the shared bucket."""

KEY_TTL_MS = 86_400_000
"""A deployment's health hash lives this long after its last change."""

FAILURE = """
local h = redis.call('HMGET', KEYS[1], 'cf', 'cu', 'st', 'oa')
local now = tonumber(ARGV[1])
local cf = tonumber(h[1] or '0') + 1
local cu = math.max(tonumber(h[2] or '0'), now + tonumber(ARGV[2]))
local st = h[3] or 'closed'
local oa = tonumber(h[4] or '0')
local half = st == 'open' and now - oa >= tonumber(ARGV[4])
if half or cf >= tonumber(ARGV[3]) then st = 'open'; oa = now end
redis.call('HSET', KEYS[1], 'cf', cf, 'cu', cu, 'st', st, 'oa', oa)
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[7]))
local msg = {t='health', from=ARGV[8], d=ARGV[6], cf=cf, cu=cu, st=st, oa=oa}
redis.call('PUBLISH', ARGV[5], cjson.encode(msg))
return {cf, cu, st, oa}
"""
"""A failure of deployment ``ARGV[6]`` at ``ARGV[1]`` ms: cooldown ``ARGV[2]`` ms, threshold
``ARGV[3]``, open for ``ARGV[4]`` ms; published on channel ``ARGV[5]`` as from ``ARGV[8]``."""

SUCCESS = """
redis.call('HSET', KEYS[1], 'cf', 0, 'cu', 0, 'st', 'closed', 'oa', 0)
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[3]))
local msg = {t='health', from=ARGV[4], d=ARGV[2], cf=0, cu=0, st='closed', oa=0}
redis.call('PUBLISH', ARGV[1], cjson.encode(msg))
return 1
"""
"""Deployment ``ARGV[2]`` answered: its circuit closes everywhere."""

BUDGET = """
local t = tonumber(redis.call('HGET', KEYS[1], 'tokens') or ARGV[3])
local cap = tonumber(ARGV[3])
t = math.min(cap, t + tonumber(ARGV[1])) - tonumber(ARGV[2])
if t < 0 then t = 0 end
redis.call('HSET', KEYS[1], 'tokens', tostring(t))
return tostring(t)
"""
"""The shared retry bucket after ``ARGV[1]`` tokens deposited and ``ARGV[2]`` spent (cap
``ARGV[3]``); returns the level."""


class SharedHealth:
    """Keeps ``board`` in agreement with every other instance's (module docstring) for the
    deployments ``names``. ``clock``: wall-clock seconds."""

    def __init__(
        self,
        link: RedisLink,
        bus: ChangeBus,
        board: HealthBoard,
        names: Iterable[str],
        *,
        clock: Callable[[], float] = time.time,
        budget_sync_s: float = BUDGET_SYNC_S,
    ) -> None:
        self.link = link
        self.bus = bus
        self.board = board
        self.names = sorted(set(names))
        self.clock = clock
        self.budget_sync_s = budget_sync_s
        self._failure = link.client.register_script(FAILURE)
        self._success = link.client.register_script(SUCCESS)
        self._budget = link.client.register_script(BUDGET)
        self._tasks: set[asyncio.Task[Any]] = set()
        self._syncer: asyncio.Task[None] | None = None
        self._synced = (board.budget.deposits, board.budget.spends)

    def _key(self, name: str) -> str:
        return self.link.key("h", name)

    async def start(self) -> None:
        """Listen to the board and the channel, load every deployment's shared state, start the
        retry-budget sync."""
        self.board.listener = self._heard
        self.bus.on("health", self._apply_message)
        self.bus.on(RESYNC, self._resync)
        await self.load()
        self._syncer = asyncio.create_task(self._sync_loop())

    async def close(self) -> None:
        """Stop the sync and wait for the reports in flight."""
        self.board.listener = None
        if self._syncer is not None:
            self._syncer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._syncer
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    def _heard(self, name: str, ok: bool, retry_after_s: float | None) -> None:
        task = asyncio.get_running_loop().create_task(self.report(name, ok, retry_after_s))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def report(self, name: str, ok: bool, retry_after_s: float | None = None) -> None:
        """Send one outcome of ``name`` to Redis (one script call; the result comes back on the
        channel). Unreachable: logged, the local board keeps what it knows."""
        s = self.board.settings
        now_ms = int(self.clock() * 1000)
        if ok:
            args: list[Any] = [self.link.channel, name, KEY_TTL_MS, self.link.instance]
            await self.link.run("health", lambda: self._success(keys=[self._key(name)], args=args))
            return
        wait_s = min(s.max_cooldown_s, max(s.cooldown_s, retry_after_s or 0.0))
        args = [
            now_ms,
            int(wait_s * 1000),
            s.failure_threshold,
            int(s.open_s * 1000),
            self.link.channel,
            name,
            KEY_TTL_MS,
            self.link.instance,
        ]
        await self.link.run("health", lambda: self._failure(keys=[self._key(name)], args=args))

    def _apply_message(self, message: dict[str, Any]) -> None:
        name = message.get("d")
        if isinstance(name, str):
            self._apply(name, message)

    def _apply(self, name: str, state: dict[str, Any]) -> None:
        now_ms = self.clock() * 1000
        cf = int(state.get("cf") or 0)
        cooldown_left_s = (float(state.get("cu") or 0) - now_ms) / 1000
        open_for_s = (now_ms - float(state.get("oa") or 0)) / 1000 if state.get("st") == "open" else None
        self.board.apply(name, cf, cooldown_left_s, open_for_s)

    async def _resync(self, _message: dict[str, Any]) -> None:
        await self.load()

    async def load(self) -> None:
        """Put every deployment's shared state into the board (one pipelined round trip)."""

        async def read() -> list[Any]:
            pipe = self.link.client.pipeline(transaction=False)
            for name in self.names:
                pipe.hgetall(self._key(name))
            return list(await pipe.execute())

        found = await self.link.run("health load", read)
        for name, state in zip(self.names, found or [], strict=False):
            if state:
                self._apply(name, state)

    async def sync_budget(self) -> None:
        """Send the retry budget's deposits and spends since the last sync; take the shared
        level back (less what this instance spent while the call was out)."""
        budget = self.board.budget
        deposits, spends = budget.deposits, budget.spends
        added = (deposits - self._synced[0]) * budget.ratio
        spent = spends - self._synced[1]
        if not added and not spent:
            return
        args: list[str | int] = [repr(added), spent, repr(budget.cap)]
        level = await self.link.run(
            "retry budget", lambda: self._budget(keys=[self.link.key("rb")], args=args)
        )
        if level is None:
            return
        self._synced = (deposits, spends)
        later = (budget.deposits - deposits) * budget.ratio - (budget.spends - spends)
        budget.tokens = max(0.0, min(budget.cap, float(level) + later))

    async def _sync_loop(self) -> None:
        while True:
            await asyncio.sleep(self.budget_sync_s)  # the sync's pace, not a synchronisation
            try:
                await self.sync_budget()
            except Exception:
                log.exception("retry_budget_sync_failed")
