"""What one worker process does in the cross-process tests of the shared SQLite counters
(:mod:`test_limits_sqlite`): started with ``multiprocessing`` (spawn), each waits at a barrier
so that all hammer the file at once, then reports what it was granted on a queue."""

from __future__ import annotations

import asyncio
from typing import Any

from gateway.errors import BudgetBusy, BudgetExceeded, RateLimitExceeded
from gateway.limits.model import BudgetLimit, RateLimit, Scope
from gateway.limits.sqlite_backend import SqliteLimits

BUDGET = Scope("key", "hammered", (BudgetLimit("day", 1.0),))
"""A hard budget of $1 a day."""

RPM = Scope("key", "per-minute", (), RateLimit(rpm=25))
SLOTS = Scope("key", "slots", (), RateLimit(concurrent=5))
HELD = Scope("key", "killed", (BudgetLimit("day", 1.0),), RateLimit(concurrent=1))


async def _spend(path: str, cost: float) -> int:
    """Admit and settle ``cost`` until the budget is spent; the turns admitted."""
    lim = SqliteLimits(path)
    granted = 0
    try:
        while True:
            try:
                res = await lim.admit([BUDGET], cost)
            except BudgetBusy:  # the other worker's turn in flight holds the rest: try again
                continue
            except BudgetExceeded:
                return granted
            granted += 1
            await lim.settle(res, cost, tokens=10)
    finally:
        await lim.aclose()


async def _requests(path: str, attempts: int) -> int:
    lim = SqliteLimits(path)
    granted = 0
    try:
        for _ in range(attempts):
            try:
                res = await lim.admit([RPM], 0.0)
            except RateLimitExceeded:
                continue
            granted += 1
            await lim.release(res)
        return granted
    finally:
        await lim.aclose()


async def _slots(path: str, attempts: int) -> int:
    """Take concurrent slots and keep them (never settled): how many were had."""
    lim = SqliteLimits(path)
    granted = 0
    try:
        for _ in range(attempts):
            try:
                await lim.admit([SLOTS], 0.0)
            except RateLimitExceeded:
                continue
            granted += 1
        return granted
    finally:
        await lim.aclose()


async def _hold(path: str, lease_ttl_s: float) -> int:
    """Admit one turn on :data:`HELD` (a budget hold and a slot) and never end it."""
    lim = SqliteLimits(path, lease_ttl_s=lease_ttl_s)
    await lim.admit([HELD], 0.5)
    return 1


def work(kind: str, path: str, arg: Any, barrier: Any, out: Any) -> None:
    """One process's part: ``kind`` (``spend``, ``requests``, ``slots``, ``hold``) on the file
    ``path``; puts ``(kind, granted)`` on ``out``; ``hold`` then waits forever (to be killed)."""
    barrier.wait(timeout=60)
    run = {"spend": _spend, "requests": _requests, "slots": _slots, "hold": _hold}[kind]
    try:
        out.put((kind, asyncio.run(run(path, arg))))
    except BaseException as err:  # told to the test at once, not found by its timeout
        out.put(("error", f"{type(err).__name__}: {err}"))
        raise
    if kind == "hold":
        barrier.wait(timeout=600)  # no second party ever comes: held until killed
