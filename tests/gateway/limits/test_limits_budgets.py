"""USD budgets on both backends: reserve the worst case, settle the actual cost, release on
failure; hard caps never passed, also by many concurrent turns; soft caps alert; windows roll
over on the zone's calendar; counters seeded from the spend ledger."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest
from limits_support import Clock, Factory, spent

from gateway.errors import BudgetBusy, BudgetExceeded
from gateway.limits.model import BudgetLimit, RateLimit, Scope


def key(*budgets: BudgetLimit, id: str = "k1", rates: RateLimit | None = None) -> Scope:
    return Scope("key", id, budgets, rates)


def team(*budgets: BudgetLimit, id: str = "t1") -> Scope:
    return Scope("team", id, budgets)


async def test_a_turn_reserves_its_worst_case_and_settles_its_actual_cost(make_limits: Factory) -> None:
    lim = make_limits()
    k = key(BudgetLimit("day", 1.0))
    res = await lim.admit([k], 0.4)
    assert await spent(lim, "key:k1") == (0.0, 0.4)
    await lim.settle(res, 0.1, tokens=500)
    assert await spent(lim, "key:k1") == (0.1, 0.0)


async def test_a_failed_turn_gives_its_reservation_back(make_limits: Factory) -> None:
    lim = make_limits()
    res = await lim.admit([key(BudgetLimit("day", 1.0))], 0.4)
    await lim.release(res)
    assert await spent(lim, "key:k1") == (0.0, 0.0)


async def test_settle_and_release_are_idempotent_per_reservation(make_limits: Factory) -> None:
    lim = make_limits()
    res = await lim.admit([key(BudgetLimit("day", 1.0))], 0.4)
    await lim.settle(res, 0.25, tokens=1)
    await lim.settle(res, 0.25, tokens=1)
    await lim.release(res)
    assert await spent(lim, "key:k1") == (0.25, 0.0)


async def test_an_unknown_actual_cost_charges_the_reservation(make_limits: Factory) -> None:
    lim = make_limits()
    res = await lim.admit([key(BudgetLimit("day", 1.0))], 0.4)
    await lim.settle(res, None, tokens=0)
    assert await spent(lim, "key:k1") == (0.4, 0.0)


async def test_a_hard_budget_refusal_names_the_scope_period_limit_and_reset(
    make_limits: Factory, clock: Clock
) -> None:
    lim = make_limits(timezone="Europe/Berlin")
    k = key(BudgetLimit("day", 1.0))
    await lim.settle(await lim.admit([k], 0.7), 0.7, tokens=0)
    with pytest.raises(BudgetExceeded) as caught:
        await lim.admit([k], 0.4)
    err = caught.value
    assert not isinstance(err, BudgetBusy)
    assert (err.status, err.kind, err.error_code) == (429, "rate_limit", "insufficient_quota")
    assert (err.scope, err.period, err.limit_usd) == ("key:k1", "day", 1.0)
    assert err.reset_at == datetime(2026, 1, 1, 23, tzinfo=UTC)  # midnight in Berlin
    assert err.retry_after_s == 39600  # ceil(23:00 - 12:00:00.25)
    assert err.headers["retry-after"] == str(err.retry_after_s)
    assert err.headers["x-should-retry"] == "false"
    assert "key:k1" in err.message and "day" in err.message
    assert err.details == {
        "scope": "key:k1",
        "period": "day",
        "limit_usd": 1.0,
        "reset_at": "2026-01-01T23:00:00+00:00",
    }


async def test_a_budget_full_only_of_turns_in_flight_is_a_retryable_refusal(make_limits: Factory) -> None:
    lim = make_limits()
    k = key(BudgetLimit("day", 1.0))
    held = await lim.admit([k], 0.7)  # in flight, not spent
    with pytest.raises(BudgetBusy) as caught:
        await lim.admit([k], 0.4)
    err = caught.value
    assert (err.status, err.kind, err.error_code) == (429, "rate_limit", None)
    assert err.retry_after_s == 1
    assert err.headers == {"retry-after": "1", "x-should-retry": "true"}
    assert "reserved by turns in flight" in err.message
    await lim.settle(held, 0.5, tokens=0)  # the turn in flight cost less than its worst case
    await lim.admit([k], 0.4)


async def test_a_spent_budget_wins_over_one_only_busy(make_limits: Factory) -> None:
    lim = make_limits()
    busy, spent_out = key(BudgetLimit("day", 1.0)), team(BudgetLimit("day", 0.5))
    await lim.admit([busy], 0.9)
    await lim.settle(await lim.admit([spent_out], 0.45), 0.45, tokens=0)
    with pytest.raises(BudgetExceeded) as caught:
        await lim.admit([busy, spent_out], 0.2)
    assert not isinstance(caught.value, BudgetBusy)


async def test_a_total_budget_refusal_has_no_reset(make_limits: Factory) -> None:
    lim = make_limits()
    k = key(BudgetLimit("total", 0.5))
    with pytest.raises(BudgetExceeded) as caught:
        await lim.admit([k], 0.6)
    assert caught.value.reset_at is None and caught.value.retry_after_s is None
    assert "retry-after" not in caught.value.headers


async def test_a_soft_budget_alerts_and_admits(make_limits: Factory) -> None:
    lim = make_limits()
    k = key(BudgetLimit("month", 1.0, hard=False))
    first = await lim.admit([k], 0.8)
    assert first.alerts == ()
    second = await lim.admit([k], 0.8)
    [alert] = second.alerts
    assert (alert.scope, alert.period, alert.limit_usd, alert.reserved_usd, alert.cost_usd) == (
        "key:k1",
        "month",
        1.0,
        0.8,
        0.8,
    )
    assert await spent(lim, "key:k1", "month") == (0.0, 1.6)


async def test_a_refusal_by_the_team_takes_nothing_from_the_key(make_limits: Factory) -> None:
    lim = make_limits()
    k = key(BudgetLimit("day", 10.0), rates=RateLimit(rpm=5, concurrent=5))
    t = team(BudgetLimit("day", 0.5))
    with pytest.raises(BudgetExceeded) as caught:
        await lim.admit([k, t], 0.6)
    assert caught.value.scope == "team:t1"
    assert await spent(lim, "key:k1") == (0.0, 0.0)
    assert await lim.would_admit(k)


async def test_a_new_period_starts_from_zero_at_local_midnight(make_limits: Factory, clock: Clock) -> None:
    lim = make_limits(timezone="America/New_York")
    k = key(BudgetLimit("day", 1.0), BudgetLimit("month", 5.0))
    res = await lim.admit([k], 0.9)
    await lim.settle(res, 0.9, tokens=0)
    with pytest.raises(BudgetExceeded):
        await lim.admit([k], 0.2)
    clock.now = datetime(2026, 1, 2, 5, 0, tzinfo=UTC).timestamp()  # 00:00 in New York
    res = await lim.admit([k], 0.9)
    await lim.settle(res, 0.9, tokens=0)
    assert await spent(lim, "key:k1") == (0.9, 0.0)
    assert await spent(lim, "key:k1", "month") == (1.8, 0.0)


async def test_counters_are_seeded_from_the_spend_ledger(make_limits: Factory) -> None:
    calls: list[tuple[str, str, float, float | None]] = []

    async def ledger(scope: str, period: str, start: float, reset: float | None) -> float:
        calls.append((scope, period, start, reset))
        return 0.75

    lim = make_limits(spend=ledger)
    k = key(BudgetLimit("day", 1.0))
    with pytest.raises(BudgetExceeded):
        await lim.admit([k], 0.3)
    await lim.admit([k], 0.25)
    day = datetime(2026, 1, 1, tzinfo=UTC).timestamp()
    assert calls == [("key:k1", "day", day, day + 86400)]  # once per window


async def test_a_reservation_whose_holder_died_stops_holding_after_its_ttl(
    make_limits: Factory, clock: Clock
) -> None:
    lim = make_limits(lease_ttl_s=30)
    k = key(BudgetLimit("day", 1.0))
    await lim.admit([k], 0.9)  # never settled
    with pytest.raises(BudgetExceeded):
        await lim.admit([k], 0.9)
    clock.advance(30)
    res = await lim.admit([k], 0.9)
    await lim.settle(res, 0.5, tokens=0)
    assert await spent(lim, "key:k1") == (0.5, 0.0)


async def test_a_turn_that_settles_after_its_hold_expired_is_still_charged_once(
    make_limits: Factory, clock: Clock
) -> None:
    lim = make_limits(lease_ttl_s=30)
    k = key(BudgetLimit("day", 1.0))
    slow = await lim.admit([k], 0.6)
    clock.advance(31)
    other = await lim.admit([k], 0.6)  # the slow turn's hold was swept: room again
    await lim.settle(slow, 0.2, tokens=0)
    await lim.settle(slow, 0.2, tokens=0)
    assert await spent(lim, "key:k1") == pytest.approx((0.2, 0.6))
    await lim.release(other)


@pytest.mark.parametrize("tasks", [64])
async def test_many_concurrent_turns_never_overshoot_a_hard_budget(make_limits: Factory, tasks: int) -> None:
    lim = make_limits()
    limit = 1.0
    k = key(BudgetLimit("day", limit))
    t = team(BudgetLimit("day", 2 * limit))
    cost = 0.07  # 1.0 / 0.07: 14 fit, the 15th would overshoot

    async def turn() -> bool:
        try:
            res = await lim.admit([k, t], cost)
        except BudgetExceeded:
            return False
        await asyncio.sleep(0)  # the answer arrives while others are admitted
        await lim.settle(res, cost, tokens=10)
        return True

    admitted = sum(await asyncio.gather(*(turn() for _ in range(tasks))))
    assert admitted == 14
    spend, reserved = await spent(lim, "key:k1")
    assert reserved == 0.0 and spend == pytest.approx(14 * cost) and spend <= limit


async def test_large_and_zero_amounts_are_counted_exactly(make_limits: Factory) -> None:
    lim = make_limits()
    k = key(BudgetLimit("month", 5_000_000.0))
    big = await lim.admit([k], 250_000.123456789)
    zero = await lim.admit([k], 0.0)
    await lim.settle(zero, 0.0, tokens=0)
    await lim.settle(big, 200_000.000000001, tokens=0)
    assert await spent(lim, "key:k1", "month") == (200_000.000000001, 0.0)


async def test_a_day_budget_on_a_23_hour_dst_day_resets_at_the_next_local_midnight(
    make_limits: Factory, clock: Clock
) -> None:
    lim = make_limits(timezone="Europe/Berlin")  # 2026-03-29: 02:00 -> 03:00, a 23-hour day
    k = key(BudgetLimit("day", 1.0))
    clock.now = datetime(2026, 3, 29, 21, 59, 59, tzinfo=UTC).timestamp()  # 23:59:59 CEST
    await lim.settle(await lim.admit([k], 1.0), 1.0, tokens=0)
    with pytest.raises(BudgetExceeded) as caught:
        await lim.admit([k], 0.01)
    assert caught.value.reset_at == datetime(2026, 3, 29, 22, tzinfo=UTC)
    assert caught.value.retry_after_s == 1
    clock.advance(1)  # local midnight of the 30th
    await lim.admit([k], 1.0)


async def test_a_restarted_gateway_keeps_the_periods_spend_from_the_ledger(make_limits: Factory) -> None:
    ledger: dict[str, float] = {}

    async def spend(scope: str, period: str, start: float, reset: float | None) -> float:
        return ledger.get(scope, 0.0)

    first = make_limits(spend=spend)
    k = key(BudgetLimit("day", 1.0))
    res = await first.admit([k], 0.9)
    await first.settle(res, 0.9, tokens=0)
    ledger["key:k1"] = 0.9  # the turn's transcript row
    await first.aclose()
    again = make_limits(spend=spend)  # after a restart (on Redis: the same shared counters)
    with pytest.raises(BudgetExceeded):
        await again.admit([k], 0.2)
    await again.admit([k], 0.1)
