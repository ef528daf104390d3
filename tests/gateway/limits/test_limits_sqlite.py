"""The workers' shared SQLite counters (``gateway.limits.sqlite_backend``) across processes:
worker processes hammering one file at once never overshoot a hard budget, admit exactly the
requests/min and concurrent turns allowed across all of them, and a worker killed (-9) mid-turn
stops holding budget and its slot when the lease passes; an unusable file fails closed.

(The backend's behaviour turn by turn is the shared suite's: ``make_limits`` runs every budget,
rate and hold test on it too, and ``test_limits_backends_agree`` compares it with the in-process
backend step by step.)"""

from __future__ import annotations

import asyncio
import multiprocessing
import time
from pathlib import Path
from typing import Any

import pytest
import sqlite_hammer
from limits_support import T0, Clock

from gateway.errors import LimitsUnavailable, RateLimitExceeded
from gateway.limits.model import BudgetLimit, RateLimit, Scope
from gateway.limits.sqlite_backend import SqliteLimits

WORKERS = 2
WAIT_S = 120.0
"""The bound of every wait for a worker process (seconds)."""


def _hammer(kind: str, path: Path, arg: Any, processes: int = WORKERS) -> list[int]:
    """Run ``processes`` workers of ``kind`` at once on ``path``; what each was granted."""
    ctx = multiprocessing.get_context("spawn")
    barrier, out = ctx.Barrier(processes), ctx.Queue()
    procs = [
        ctx.Process(target=sqlite_hammer.work, args=(kind, str(path), arg, barrier, out))
        for _ in range(processes)
    ]
    for p in procs:
        p.start()
    try:
        got = [out.get(timeout=WAIT_S) for _ in procs]
        assert [g for g in got if g[0] == "error"] == []
        for p in procs:
            p.join(timeout=WAIT_S)
            assert p.exitcode == 0
    finally:
        for p in procs:
            if p.is_alive():
                p.kill()
    return [granted for _, granted in got]


def test_two_processes_spending_one_hard_budget_never_overshoot_it(tmp_path: Path) -> None:
    path = tmp_path / "workers.db"
    granted = _hammer("spend", path, 0.03)
    assert sum(granted) == 33  # floor($1 / $0.03): every turn that fits, and not one more

    async def spent() -> tuple[float, float]:
        lim = SqliteLimits(path)
        try:
            return await lim.spent_usd(sqlite_hammer.BUDGET.name, "day")
        finally:
            await lim.aclose()

    used, reserved = asyncio.run(spent())
    assert reserved == 0 and used == pytest.approx(0.99) and used <= 1.0  # overshoot 0


def test_two_processes_admit_exactly_the_requests_per_minute_between_them(tmp_path: Path) -> None:
    granted = _hammer("requests", tmp_path / "workers.db", 30)  # 60 attempts within a second or so
    assert sum(granted) == 25


def test_two_processes_share_the_concurrent_slots(tmp_path: Path) -> None:
    granted = _hammer("slots", tmp_path / "workers.db", 5)  # each tries to take all five
    assert sum(granted) == 5


def test_a_worker_killed_mid_turn_holds_its_budget_and_slot_only_until_the_lease_passes(
    tmp_path: Path,
) -> None:
    path = tmp_path / "workers.db"
    ctx = multiprocessing.get_context("spawn")
    barrier, out = ctx.Barrier(2), ctx.Queue()
    worker = ctx.Process(target=sqlite_hammer.work, args=("hold", str(path), 30.0, barrier, out))
    worker.start()
    try:
        barrier.wait(timeout=WAIT_S)
        assert out.get(timeout=WAIT_S) == ("hold", 1)
        worker.kill()  # SIGKILL: its turn never settles
        worker.join(timeout=WAIT_S)
        assert worker.exitcode == -9
    finally:
        if worker.is_alive():
            worker.kill()
    scope = sqlite_hammer.HELD

    async def after(seconds: float) -> tuple[str, tuple[float, float]]:
        lim = SqliteLimits(path, clock=lambda: time.time() + seconds, lease_ttl_s=30.0)
        try:
            try:
                res = await lim.admit([scope], 0.5)
            except RateLimitExceeded as err:
                return err.dimension, await lim.spent_usd(scope.name, "day")
            await lim.release(res)
            return "admitted", await lim.spent_usd(scope.name, "day")
        finally:
            await lim.aclose()

    assert asyncio.run(after(0)) == ("concurrent", (0.0, 0.5))  # the dead worker's slot and hold
    assert asyncio.run(after(31)) == ("admitted", (0.0, 0.0))  # past the lease: both free again


async def test_an_unusable_file_refuses_turns_with_limits_unavailable(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the directory should be")
    lim = SqliteLimits(blocker / "workers.db")
    scope = Scope("key", "k", (BudgetLimit("day", 1.0),))
    with pytest.raises(LimitsUnavailable, match=r"SQLite file .* unusable"):
        await lim.admit([scope], 0.1)
    assert not await lim.would_admit(Scope("deployment", "d", (), RateLimit(rpm=1)))  # closed
    await lim.aclose()


async def test_a_turn_on_two_gateways_sharing_the_file_counts_once_for_both(tmp_path: Path) -> None:
    clock = Clock(T0)
    one = SqliteLimits(tmp_path / "w.db", clock=clock)
    two = SqliteLimits(tmp_path / "w.db", clock=clock)
    key = Scope("key", "k", (BudgetLimit("day", 1.0),), RateLimit(rpm=3, tpm=100, concurrent=2))
    try:
        a = await one.admit([key], 0.4)
        b = await two.admit([key], 0.4)
        assert b.headers["x-ratelimit-remaining-requests"] == "1"  # one's request counted in two
        with pytest.raises(RateLimitExceeded, match="concurrent"):
            await one.admit([key], 0.1)
        await one.settle(b, 0.2, tokens=60)  # settled by another process than the one that admitted
        await two.settle(a, 0.3, tokens=60)
        assert await one.spent_usd("key:k", "day") == (pytest.approx(0.5), 0.0)
        assert not await two.would_admit(Scope("key", "k", (), RateLimit(tpm=100)))  # 120 tokens
    finally:
        await one.aclose()
        await two.aclose()


async def test_a_cancelled_admission_gives_back_what_it_took(tmp_path: Path) -> None:
    lim = SqliteLimits(tmp_path / "w.db", clock=Clock(T0))
    key = Scope("key", "k", (BudgetLimit("day", 1.0),), RateLimit(concurrent=1))
    try:
        task = asyncio.ensure_future(lim.admit([key], 0.5))
        await asyncio.sleep(0)  # the admission is handed to the store thread
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await lim.spent_usd("key:k", "day")  # queued behind the admission: it has answered since
        await asyncio.wait_for(asyncio.gather(*lim._undoing), WAIT_S)  # the release it started
        assert await lim.spent_usd("key:k", "day") == (0.0, 0.0)
        res = await lim.admit([key], 0.5)  # the slot came back
        assert res.cost_nano == 500_000_000
    finally:
        await lim.aclose()


async def test_a_turn_of_unlimited_scopes_never_opens_the_file(tmp_path: Path) -> None:
    lim = SqliteLimits(tmp_path / "w.db")
    res = await lim.admit([Scope("key", "free"), Scope("team", "t", (), RateLimit())], 0.5)
    await lim.settle(res, 0.5, tokens=10)
    assert not (tmp_path / "w.db").exists() and res.headers == {}
    await lim.aclose()
