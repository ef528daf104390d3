"""The Redis backend as the shared one: instances share counters, one admission is one script
call, a missing counter is re-seeded, and Redis going away mid-run gives the configured
behaviour (fail closed: 503; fail open: admitted) with nothing charged twice when it is back."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlparse

import pytest
from limits_support import REDIS_URL, Clock, drop_prefix, redis_or_skip
from tcp_proxy import Proxy

from gateway.errors import BudgetExceeded, LimitsUnavailable, RateLimitExceeded
from gateway.limits.model import BudgetLimit, RateLimit, Scope
from gateway.limits.redis_backend import RedisLimits

KEY = Scope("key", "k1", (BudgetLimit("day", 1.0),), RateLimit(rpm=100, tpm=10_000, concurrent=10))


@pytest.fixture
async def prefix() -> AsyncIterator[str]:
    redis_or_skip()
    p = f"turnstile-test:{uuid.uuid4().hex[:12]}:"
    yield p
    await drop_prefix(REDIS_URL, p)


@pytest.fixture
async def proxy() -> AsyncIterator[Proxy]:
    target = urlparse(REDIS_URL)
    p = Proxy(target.hostname or "127.0.0.1", target.port or 6379)
    await p.start()
    yield p
    if p._server is not None:
        await p.kill()


def through(proxy: Proxy, prefix: str, clock: Clock, **kw: Any) -> RedisLimits:
    db = urlparse(REDIS_URL).path or "/0"
    return RedisLimits.from_url(f"redis://127.0.0.1:{proxy.port}{db}", prefix=prefix, clock=clock, **kw)


async def test_two_instances_share_one_budget_and_one_window(prefix: str, clock: Clock) -> None:
    a = RedisLimits.from_url(REDIS_URL, prefix=prefix, clock=clock)
    b = RedisLimits.from_url(REDIS_URL, prefix=prefix, clock=clock)
    k = Scope("key", "k1", (BudgetLimit("day", 1.0),), RateLimit(rpm=3))
    await a.admit([k], 0.5)
    await b.admit([k], 0.5)
    with pytest.raises(BudgetExceeded):
        await a.admit([k], 0.01)
    k2 = Scope("key", "k2", (), RateLimit(rpm=3))
    for lim in (a, b, a):
        await lim.admit([k2], 0)
    with pytest.raises(RateLimitExceeded):
        await b.admit([k2], 0)
    await a.aclose()
    await b.aclose()


async def test_an_admission_over_every_scope_is_one_script_call(prefix: str, clock: Clock) -> None:
    lim = RedisLimits.from_url(REDIS_URL, prefix=prefix, clock=clock)
    team = Scope("team", "t1", (BudgetLimit("month", 10.0),), RateLimit(rpm=100, concurrent=5))
    dep = Scope("deployment", "gpt", (), RateLimit(rpm=1000, tpm=10**6))
    await lim.release(await lim.admit([KEY, team, dep], 0.01))  # seeds the windows
    calls: list[str] = []
    real = lim.client.evalsha

    async def counting(*args: Any) -> Any:
        calls.append(str(args[0]))
        return await real(*args)

    lim.client.evalsha = counting  # type: ignore[method-assign]
    res = await lim.admit([KEY, team, dep], 0.01)
    assert len(calls) == 1
    await lim.settle(res, 0.005, tokens=100)
    assert len(calls) == 2
    await lim.aclose()


async def test_a_counter_lost_from_redis_is_seeded_again_from_the_ledger(prefix: str, clock: Clock) -> None:
    ledger = {"spent": 0.0}

    async def spend(scope: str, period: str, start: float, reset: float | None) -> float:
        return ledger["spent"]

    lim = RedisLimits.from_url(REDIS_URL, prefix=prefix, clock=clock, spend=spend)
    res = await lim.admit([KEY], 0.5)
    await lim.settle(res, 0.5, tokens=0)
    ledger["spent"] = 0.5  # what the transcript now holds
    await drop_prefix(REDIS_URL, prefix)  # Redis restarted empty
    with pytest.raises(BudgetExceeded):
        await lim.admit([KEY], 0.6)
    assert await lim.spent_usd("key:k1", "day") == (0.5, 0.0)
    await lim.aclose()


async def test_redis_going_away_fails_closed_with_a_503_by_default(
    prefix: str, clock: Clock, proxy: Proxy
) -> None:
    lim = through(proxy, prefix, clock)
    res = await lim.admit([KEY], 0.2)
    await proxy.kill()
    with pytest.raises(LimitsUnavailable) as caught:
        await lim.admit([KEY], 0.2)
    assert (caught.value.status, caught.value.kind) == (503, "overloaded")
    assert not await lim.would_admit(KEY)
    await lim.settle(res, 0.1, tokens=10)  # the turn that ran is kept, not lost
    assert len(lim.pending) == 1
    await proxy.start()
    with pytest.raises(LimitsUnavailable):  # within the cooldown Redis is not tried again
        await lim.admit([KEY], 0.2)
    clock.advance(1)
    res2 = await lim.admit([KEY], 0.2)  # sends the kept settle first
    assert not lim.pending
    assert await lim.spent_usd("key:k1", "day") == pytest.approx((0.1, 0.2))
    await lim.settle(res2, 0.2, tokens=0)
    await lim.aclose()


async def test_redis_going_away_fails_open_when_configured_and_charges_once_on_return(
    prefix: str, clock: Clock, proxy: Proxy
) -> None:
    lim = through(proxy, prefix, clock, fail="open")
    await lim.release(await lim.admit([KEY], 0.2))
    await proxy.kill()
    res = await lim.admit([KEY], 0.3)
    assert res.degraded
    assert await lim.would_admit(KEY)
    await lim.settle(res, 0.3, tokens=50)
    await proxy.start()
    assert await lim.spent_usd("key:k1", "day") == (0.0, 0.0)  # not yet sent
    assert (await lim.admit([KEY], 0.1)).degraded  # within the cooldown: not tried
    clock.advance(1)
    res2 = await lim.admit([KEY], 0.1)
    assert not res2.degraded
    await lim.settle(res2, 0.1, tokens=0)
    assert await lim.spent_usd("key:k1", "day") == pytest.approx((0.4, 0.0))
    await lim.aclose()


async def test_a_kept_settle_is_not_charged_again_when_redis_came_back_empty_and_another_seeded_it(
    prefix: str, clock: Clock, proxy: Proxy
) -> None:
    """Two instances, Redis lost and back empty: the other instance seeds the counter from the
    ledger (which holds the turn that ran during the outage) before this one sends the turn's
    kept settle; the settle is not added again."""
    ledger = {"spent": 0.0}

    async def spend(scope: str, period: str, start: float, reset: float | None) -> float:
        return ledger["spent"]

    one = through(proxy, prefix, clock, fail="open", spend=spend)
    other = RedisLimits.from_url(REDIS_URL, prefix=prefix, clock=clock, spend=spend)
    await one.release(await one.admit([KEY], 0.1))
    await proxy.kill()
    res = await one.admit([KEY], 0.3)
    assert res.degraded
    await one.settle(res, 0.3, tokens=0)  # kept: Redis is away
    ledger["spent"] = 0.3  # its transcript row
    await drop_prefix(REDIS_URL, prefix)  # Redis came back empty
    await proxy.start()
    clock.advance(1)
    await other.release(await other.admit([KEY], 0.1))  # seeds from the ledger: 0.3
    await one.release(await one.admit([KEY], 0.1))  # sends the kept settle first
    assert not one.pending
    assert await one.spent_usd("key:k1", "day") == pytest.approx((0.3, 0.0))
    await one.aclose()
    await other.aclose()


async def test_a_redis_that_does_not_answer_costs_one_timeout_then_the_fail_mode_at_once(
    prefix: str, clock: Clock
) -> None:
    import asyncio

    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()  # accepts, never answers

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    lim = RedisLimits.from_url(f"redis://127.0.0.1:{port}/0", prefix=prefix, clock=clock, timeout_s=0.05)
    with pytest.raises(LimitsUnavailable):
        await lim.admit([KEY], 0.1)  # one timeout (and its one retry)
    calls = []
    real = lim._admit

    async def counting(**kw: Any) -> Any:
        calls.append(kw)
        return await real(**kw)

    lim._admit = counting  # type: ignore[assignment]
    for _ in range(20):
        with pytest.raises(LimitsUnavailable):
            await lim.admit([KEY], 0.1)
    assert calls == []  # none of them waited for Redis
    clock.advance(1)
    with pytest.raises(LimitsUnavailable):
        await lim.admit([KEY], 0.1)
    assert len(calls) == 1  # after the cooldown it is tried again
    await lim.aclose()
    server.close()


async def test_a_settle_repeated_after_a_lost_answer_is_not_charged_twice(prefix: str, clock: Clock) -> None:
    lim = RedisLimits.from_url(REDIS_URL, prefix=prefix, clock=clock)
    res = await lim.admit([KEY], 0.3)
    await lim.settle(res, 0.3, tokens=5)
    res.done = False  # as if the answer to the first settle had been lost: send it again
    await lim.settle(res, 0.3, tokens=5)
    assert await lim.spent_usd("key:k1", "day") == pytest.approx((0.3, 0.0))
    await lim.aclose()


async def test_an_admission_repeated_after_a_lost_answer_takes_nothing_twice(
    prefix: str, clock: Clock
) -> None:
    lim = RedisLimits.from_url(REDIS_URL, prefix=prefix, clock=clock)
    await lim.release(await lim.admit([KEY], 0.1))  # seeds the day window
    checks, keys, args = lim._checks([KEY], clock())
    keys.insert(0, f"{prefix}adm:same-id")
    head = [int(clock() * 1000), "same-id", 300_000_000, int(clock() * 1000) + 60_000, len(checks)]
    first = await lim._admit(keys=keys, args=head + args)
    again = await lim._admit(keys=keys, args=head + args)  # the client's retry of the same call
    assert first[0] == again[0] == "ok"
    assert await lim.spent_usd("key:k1", "day") == pytest.approx((0.0, 0.3))
    await lim.aclose()


async def test_budget_keys_expire_a_day_after_their_period_and_windows_after_a_minute(
    prefix: str, clock: Clock
) -> None:
    lim = RedisLimits.from_url(REDIS_URL, prefix=prefix, clock=clock)
    k = Scope("key", "k1", (BudgetLimit("day", 1.0), BudgetLimit("total", 9.0)), RateLimit(rpm=5))
    await lim.admit([k], 0.1)
    day_start = int(clock() // 86400 * 86400)
    day_ttl = await lim.client.pttl(f"{prefix}b:key:k1:day:{day_start}")
    to_midnight_ms = (day_start + 86400 - clock()) * 1000
    assert to_midnight_ms + 86_400_000 - 1000 <= day_ttl <= to_midnight_ms + 86_400_000
    assert await lim.client.pttl(f"{prefix}b:key:k1:total:0") == -1  # never resets: no TTL
    assert 0 < await lim.client.pttl(f"{prefix}rpm:key:k1") <= 62_000
    await lim.aclose()


async def test_three_instances_admitting_at_once_never_overshoot_a_hard_budget(
    prefix: str, clock: Clock
) -> None:
    import asyncio

    instances = [RedisLimits.from_url(REDIS_URL, prefix=prefix, clock=clock) for _ in range(3)]
    k = Scope("key", "k1", (BudgetLimit("day", 1.0),))

    async def turn(lim: RedisLimits) -> bool:
        try:
            res = await lim.admit([k], 0.03)
        except BudgetExceeded:
            return False
        await lim.settle(res, 0.03, tokens=0)
        return True

    admitted = await asyncio.gather(*(turn(instances[i % 3]) for i in range(90)))
    assert sum(admitted) == 33  # 33 x 0.03 = 0.99; a 34th would pass 1.0
    spent_usd, reserved = await instances[0].spent_usd("key:k1", "day")
    assert reserved == 0 and spent_usd == pytest.approx(0.99) and spent_usd <= 1.0
    for lim in instances:
        await lim.aclose()


async def test_a_backlog_of_kept_settles_is_sent_in_batches_each_exactly_once(
    prefix: str, clock: Clock, proxy: Proxy
) -> None:
    import asyncio

    from gateway.limits.redis_backend import FLUSH_BATCH

    lim = through(proxy, prefix, clock)
    k = Scope("key", "k1", (BudgetLimit("day", 100.0),))
    held = [await lim.admit([k], 0.5) for _ in range(150)]
    await proxy.kill()
    for res in held:
        await lim.settle(res, 0.25, tokens=0)
    assert len(lim.pending) == 150
    await proxy.start()
    clock.advance(1)
    other = Scope("key", "k2", (), RateLimit(rpm=1000))
    await lim.admit([other], 0)  # one admission sends one batch, not the whole backlog
    assert len(lim.pending) == 150 - FLUSH_BATCH
    await asyncio.gather(*(lim.admit([other], 0) for _ in range(3)))  # concurrent flushes
    assert not lim.pending
    assert await lim.spent_usd("key:k1", "day") == pytest.approx((150 * 0.25, 0.0))
    await lim.aclose()


async def test_a_turn_cancelled_while_it_settles_still_settles(prefix: str, clock: Clock) -> None:
    import asyncio

    lim = RedisLimits.from_url(REDIS_URL, prefix=prefix, clock=clock)
    res = await lim.admit([KEY], 0.4)
    task = asyncio.create_task(lim.settle(res, 0.3, tokens=10))
    await asyncio.sleep(0)  # the settle is on its way
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    await asyncio.gather(*others)  # the shielded settle, carried on without the cancelled turn
    assert await lim.spent_usd("key:k1", "day") == pytest.approx((0.3, 0.0))
    await lim.aclose()


async def test_a_turn_cancelled_while_it_is_admitted_takes_nothing(prefix: str, clock: Clock) -> None:
    import asyncio

    lim = RedisLimits.from_url(REDIS_URL, prefix=prefix, clock=clock)
    k = Scope("key", "k1", (BudgetLimit("day", 1.0),), RateLimit(concurrent=1))
    await lim.release(await lim.admit([k], 0.1))  # the window is seeded: one script call next
    task = asyncio.create_task(lim.admit([k], 0.9))
    for _ in range(3):
        await asyncio.sleep(0)  # the admission is on its way to Redis
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    for _ in range(5):  # its answer arrives (done callbacks run one loop turn later), then its release
        await asyncio.sleep(0)
        await asyncio.gather(*(t for t in asyncio.all_tasks() if t is not asyncio.current_task()))
    assert await lim.spent_usd("key:k1", "day") == (0.0, 0.0)
    await lim.release(await lim.admit([k], 0.9))  # the concurrent slot is free too
    await lim.aclose()
