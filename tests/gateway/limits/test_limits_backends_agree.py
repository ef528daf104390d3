"""The backends are one behaviour: random sequences of admissions, settles, releases and
clock steps give the same decisions, retry times, headers and spend in process, in the workers'
shared SQLite file and on Redis."""

from __future__ import annotations

import asyncio
import tempfile
import uuid
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from limits_support import REDIS_URL, T0, Clock, drop_prefix, redis_or_skip

from gateway.errors import LimitExceeded
from gateway.limits.memory import MemoryLimits
from gateway.limits.model import BudgetLimit, RateLimit, Scope
from gateway.limits.redis_backend import RedisLimits
from gateway.limits.sqlite_backend import SqliteLimits

KEY = Scope(
    "key", "k", (BudgetLimit("day", 0.05), BudgetLimit("week", 0.2, hard=False)), RateLimit(4, 300, 3)
)
TEAM = Scope("team", "t", (BudgetLimit("month", 0.1),), RateLimit(rpm=6, concurrent=4))
DEP = Scope("deployment", "d", (), RateLimit(rpm=5, tpm=500))

ops = st.lists(
    st.one_of(
        st.tuples(
            st.just("admit"), st.sampled_from([(KEY, TEAM, DEP), (KEY, DEP), (TEAM,)]), st.integers(0, 9)
        ),
        st.tuples(st.just("settle"), st.integers(0, 20), st.integers(0, 200)),
        st.tuples(st.just("release"), st.integers(0, 20), st.just(0)),
        st.tuples(st.just("wait"), st.sampled_from([0.3, 1.0, 7.0, 30.0, 59.5, 61.0, 3600.0]), st.just(0)),
    ),
    min_size=1,
    max_size=40,
)


async def run(lim: Any, clock: Clock, steps: list[tuple[Any, Any, Any]]) -> list[Any]:
    held: list[Any] = []
    seen: list[Any] = []
    for op, a, b in steps:
        if op == "wait":
            clock.advance(a)
            seen.append(await lim.would_admit(DEP))
        elif op == "admit":
            try:
                res = await lim.admit(list(a), b / 1000)
            except LimitExceeded as err:
                seen.append((type(err).__name__, err.scope, err.retry_after_s, err.headers))
            else:
                held.append(res)
                seen.append(("ok", [x.scope for x in res.alerts], res.headers))
        elif held:
            res = held.pop(a % len(held))
            if op == "settle":
                await lim.settle(res, b / 10_000, tokens=b)
            else:
                await lim.release(res)
    for scope, period in (("key:k", "day"), ("key:k", "week"), ("team:t", "month")):
        got = lim.spent_usd(scope, period)
        seen.append(got if isinstance(got, tuple) else await got)
    return seen


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops)
def test_in_process_and_redis_decide_every_step_alike(steps: list[tuple[Any, Any, Any]]) -> None:
    redis_or_skip()

    async def both() -> tuple[list[Any], list[Any]]:
        c1, c2 = Clock(T0), Clock(T0)
        prefix = f"turnstile-test:{uuid.uuid4().hex[:12]}:"
        red = RedisLimits.from_url(REDIS_URL, prefix=prefix, clock=c2)
        try:
            return await run(MemoryLimits(clock=c1), c1, steps), await run(red, c2, steps)
        finally:
            await red.aclose()
            await drop_prefix(REDIS_URL, prefix)

    mem, red = asyncio.run(both())
    assert mem == red


@settings(max_examples=60, deadline=None)
@given(ops)
def test_in_process_and_sqlite_decide_every_step_alike(steps: list[tuple[Any, Any, Any]]) -> None:
    async def both() -> tuple[list[Any], list[Any]]:
        c1, c2 = Clock(T0), Clock(T0)
        with tempfile.TemporaryDirectory() as tmp:
            shared = SqliteLimits(Path(tmp) / "shared.db", clock=c2)
            try:
                return await run(MemoryLimits(clock=c1), c1, steps), await run(shared, c2, steps)
            finally:
                await shared.aclose()

    mem, lite = asyncio.run(both())
    assert mem == lite
