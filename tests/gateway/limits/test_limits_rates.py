"""Rate limits on both backends: requests/min and tokens/min over sliding windows, concurrent
turns with leak-proof slots, per key, team and deployment; refusals carry retry-after and the
SDKs' rate-limit headers."""

from __future__ import annotations

import asyncio

import pytest
from limits_support import Clock, Factory

from gateway.errors import RateLimitExceeded
from gateway.limits.model import RateLimit, Scope


def scope(kind: str = "key", id: str = "k1", **rates: int) -> Scope:
    return Scope(kind, id, (), RateLimit(**rates))  # type: ignore[arg-type]


async def test_requests_per_minute_refuse_the_next_turn_with_retry_after(
    make_limits: Factory, clock: Clock
) -> None:
    lim = make_limits()
    k = scope(rpm=2)
    first = await lim.admit([k], 0)
    assert first.headers["x-ratelimit-limit-requests"] == "2"
    assert first.headers["x-ratelimit-remaining-requests"] == "1"
    assert first.headers["anthropic-ratelimit-requests-remaining"] == "1"
    clock.advance(10)
    second = await lim.admit([k], 0)
    assert second.headers["x-ratelimit-remaining-requests"] == "0"
    with pytest.raises(RateLimitExceeded) as caught:
        await lim.admit([k], 0)
    err = caught.value
    assert (err.status, err.scope, err.dimension, err.limit) == (429, "key:k1", "requests", 2)
    # the first request's bucket (second T0) is counted until T0 + 61 s; now is T0 + 10.25
    assert err.retry_after_s == 51
    assert err.headers["retry-after"] == "51"
    assert err.headers["x-ratelimit-remaining-requests"] == "0"
    assert err.headers["x-ratelimit-reset-requests"] == "1m1s"  # the second one leaves at T0 + 71
    assert err.headers["anthropic-ratelimit-requests-reset"] == "2026-01-01T12:01:11Z"
    clock.advance(51)
    await lim.admit([k], 0)


async def test_a_failed_turn_still_counts_as_a_request(make_limits: Factory) -> None:
    lim = make_limits()
    k = scope(rpm=1)
    await lim.release(await lim.admit([k], 0))
    with pytest.raises(RateLimitExceeded):
        await lim.admit([k], 0)


async def test_tokens_per_minute_count_settled_tokens_and_admit_while_below(
    make_limits: Factory, clock: Clock
) -> None:
    lim = make_limits()
    k = scope(tpm=1000)
    res = await lim.admit([k], 0)
    assert res.headers["x-ratelimit-remaining-tokens"] == "1000"
    await lim.settle(res, 0, tokens=999)
    res = await lim.admit([k], 0)  # 999 < 1000: admitted
    assert res.headers["x-ratelimit-remaining-tokens"] == "1"
    await lim.settle(res, 0, tokens=400)
    clock.advance(5)
    with pytest.raises(RateLimitExceeded) as caught:
        await lim.admit([k], 0)
    err = caught.value
    assert (err.dimension, err.limit, err.retry_after_s) == ("tokens", 1000, 56)
    assert err.headers["x-ratelimit-remaining-tokens"] == "0"
    assert err.headers["anthropic-ratelimit-tokens-limit"] == "1000"
    clock.advance(56)
    await lim.admit([k], 0)


async def test_concurrent_turns_are_capped_and_freed_by_settle_or_release(make_limits: Factory) -> None:
    lim = make_limits()
    k = scope(concurrent=2)
    a = await lim.admit([k], 0)
    b = await lim.admit([k], 0)
    with pytest.raises(RateLimitExceeded) as caught:
        await lim.admit([k], 0)
    assert (caught.value.dimension, caught.value.retry_after_s) == ("concurrent", 1)
    await lim.settle(a, 0, tokens=0)
    c = await lim.admit([k], 0)
    await lim.release(b)
    await lim.release(c)
    await lim.admit([k], 0)
    await lim.admit([k], 0)


async def test_a_concurrent_slot_whose_holder_died_is_freed_by_its_ttl(
    make_limits: Factory, clock: Clock
) -> None:
    lim = make_limits(lease_ttl_s=120)
    k = scope(concurrent=1)
    await lim.admit([k], 0)  # its holder never comes back
    clock.advance(119)
    assert not await lim.would_admit(k)
    clock.advance(1)
    assert await lim.would_admit(k)
    await lim.admit([k], 0)


async def test_a_limit_of_zero_never_admits_and_gives_no_retry_time(make_limits: Factory) -> None:
    lim = make_limits()
    for k in (scope(rpm=0), scope(id="k2", concurrent=0)):
        with pytest.raises(RateLimitExceeded) as caught:
            await lim.admit([k], 0)
        assert caught.value.retry_after_s is None and "retry-after" not in caught.value.headers


async def test_key_team_and_deployment_are_held_at_once_and_the_tightest_sets_the_headers(
    make_limits: Factory,
) -> None:
    lim = make_limits()
    k, t, d = (
        scope(rpm=10, tpm=5000),
        scope("team", "t1", rpm=3),
        scope("deployment", "gpt", rpm=100, tpm=900),
    )
    res = await lim.admit([k, t, d], 0)
    assert res.headers["x-ratelimit-limit-requests"] == "3"  # the team has the least left
    assert res.headers["x-ratelimit-limit-tokens"] == "900"  # the deployment
    await lim.admit([k, t, d], 0)
    await lim.admit([k, t, d], 0)
    with pytest.raises(RateLimitExceeded) as caught:
        await lim.admit([k, t, d], 0)
    assert caught.value.scope == "team:t1"
    other_key = scope(id="k2", rpm=10)
    await lim.admit([other_key, d], 0)  # the deployment still has room for another team


async def test_would_admit_reports_deployment_capacity_without_taking_any(make_limits: Factory) -> None:
    lim = make_limits()
    d = scope("deployment", "gpt", rpm=2, concurrent=5)
    assert await lim.would_admit(d)
    assert await lim.would_admit(d)
    await lim.admit([d], 0)
    await lim.admit([d], 0)
    assert not await lim.would_admit(d)
    assert await lim.would_admit(scope("deployment", "other"))
    assert await lim.would_admit(Scope("deployment", "unlimited"))


async def test_many_concurrent_admissions_never_pass_requests_per_minute(make_limits: Factory) -> None:
    lim = make_limits()
    k = scope(rpm=17, concurrent=100)

    async def turn() -> bool:
        try:
            res = await lim.admit([k], 0)
        except RateLimitExceeded:
            return False
        await asyncio.sleep(0)
        await lim.settle(res, 0, tokens=1)
        return True

    assert sum(await asyncio.gather(*(turn() for _ in range(50)))) == 17


async def test_a_refusal_says_what_was_refused_in_its_details(make_limits: Factory) -> None:
    lim = make_limits()
    k = scope(rpm=1)
    await lim.admit([k], 0)
    with pytest.raises(RateLimitExceeded) as caught:
        await lim.admit([k], 0)
    assert caught.value.details == {
        "scope": "key:k1",
        "dimension": "requests",
        "limit": 1,
        "retry_after_s": 61,
    }
