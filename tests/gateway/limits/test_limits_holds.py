"""A turn's model calls held one by one (``gateway.limits.holds``), on both backends: concurrent
tool loops whose later steps cost more than their first never take a hard budget past its
limit; a step's hold counts no request and takes no slot; every admission is reported —
refusals counted and audited, admissions without the shared counters counted."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest
from limits_support import Factory, spent

from gateway.errors import BudgetExceeded, LimitsUnavailable, RateLimitExceeded
from gateway.limits.decisions import Reservation
from gateway.limits.holds import Admitter, StepHolds
from gateway.limits.model import BudgetLimit, RateLimit, Scope


class Recorder:
    """Stands for the metrics and the identity: what they were told."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def limit_rejected(self, limit: str, scope: str) -> None:
        self.calls.append(("rejected", limit, scope))

    def limit_counters_unreachable(self, outcome: str) -> None:
        self.calls.append(("unreachable", outcome))

    async def limit_refused(self, principal: Any, err: Any, *, limit: str, request_id: str | None) -> None:
        self.calls.append(("audit", principal, err.scope, limit, request_id))


def _key(limit: float, rates: RateLimit | None = None) -> Scope:
    return Scope("key", "k1", (BudgetLimit("total", limit),), rates)


@pytest.mark.parametrize("seed", [1, 2])
async def test_concurrent_loops_with_each_step_held_never_pass_a_hard_budget(
    make_limits: Factory, seed: int
) -> None:
    lim = make_limits()
    rec = Recorder()
    scope = _key(1.0)
    rng = random.Random(seed)
    worst = [0.05, 0.15, 0.3]  # later steps carry more history: dearer

    async def loop() -> int:
        admitter = Admitter(lim, rec, rec, "principal", "r")
        turn = await admitter.admit([scope], 0.0)
        holds = StepHolds(admitter, [scope], [], session_bound=False)
        done = 0
        try:
            for w in worst:
                hold = await holds.hold_usd(w)
                await asyncio.sleep(0)  # the upstream call: other loops run meanwhile
                await holds.settle(hold, w * rng.uniform(0.5, 1.0))
                done += 1
        except BudgetExceeded:
            pass
        await lim.settle(turn, 0.0, tokens=0)
        return done

    steps = await asyncio.gather(*(loop() for _ in range(8)))
    used, reserved = await spent(lim, "key:k1", "total")
    assert reserved == 0
    assert 0 < used <= 1.0
    assert min(steps) >= 1 and min(steps) < 3  # all ran a step; the budget stopped some later


async def test_a_steps_hold_counts_no_request_and_takes_no_slot(make_limits: Factory) -> None:
    lim = make_limits()
    rec = Recorder()
    scope = _key(10.0, RateLimit(rpm=1, concurrent=1))
    admitter = Admitter(lim, rec, rec, "principal", "r")
    turn = await admitter.admit([scope], 0.0)  # the turn: its one request, its one slot
    holds = StepHolds(admitter, [scope], [], session_bound=False)
    for _ in range(3):  # would be refused by rpm 1 and concurrent 1 if it counted either
        await holds.settle(await holds.hold_usd(1.0), 0.5)
    assert holds.settled_usd == 1.5
    with pytest.raises(RateLimitExceeded):
        await admitter.admit([scope], 0.0)  # another turn is
    await lim.settle(turn, 0.0, tokens=0)
    assert await spent(lim, "key:k1", "total") == (1.5, 0.0)


async def test_a_refusal_is_counted_and_audited(make_limits: Factory) -> None:
    lim = make_limits()
    rec = Recorder()
    admitter = Admitter(lim, rec, rec, "principal", "req-1")
    with pytest.raises(BudgetExceeded):
        await admitter.admit([_key(1.0)], 2.0)
    assert rec.calls == [("rejected", "budget", "key"), ("audit", "principal", "key:k1", "budget", "req-1")]


class Unreachable:
    """Limit counters that are not there: admitted unchecked (open) or refused (closed)."""

    def __init__(self, fail: str) -> None:
        self.fail = fail

    async def admit(self, scopes: Any, cost_usd: float) -> Reservation:
        if self.fail == "closed":
            raise LimitsUnavailable("Redis is unreachable")
        return Reservation(id="r", cost_nano=0, degraded=True)


@pytest.mark.parametrize("fail", ["open", "closed"])
async def test_an_admission_without_the_shared_counters_is_counted(fail: str) -> None:
    rec = Recorder()
    admitter = Admitter(Unreachable(fail), rec, rec, "principal", "r")  # type: ignore[arg-type]
    if fail == "closed":
        with pytest.raises(LimitsUnavailable):
            await admitter.admit([_key(1.0)], 0.1)
        assert rec.calls == [("unreachable", "refused")]
    else:
        assert (await admitter.admit([_key(1.0)], 0.1)).degraded
        assert rec.calls == [("unreachable", "admitted")]


def _request(text: str) -> Any:
    from gateway.schema import Request, TextPart, UserMessage

    return Request(model="m", max_output_tokens=10, messages=[UserMessage(content=[TextPart(text=text)])])


def _priced() -> Any:
    from gateway.config import Deployment, Price

    return Deployment(name="d", api="demo", model="turnstile-demo", price=Price(input=1e6, output=1e6))


async def test_a_session_calls_history_is_held_on_top_of_its_admission_and_given_back(
    make_limits: Factory,
) -> None:
    from gateway.limits.holds import ContextHold, worst_case

    lim = make_limits()
    rec = Recorder()
    scope = _key(10_000.0)
    admitter = Admitter(lim, rec, rec, "principal", "r")
    new = _request("hi")
    base = worst_case([_priced()], new, session_bound=True)
    assert base is not None and base < 1_000  # the new message and 10 output tokens, not a window
    turn = await admitter.admit([scope], base)
    context = ContextHold(admitter, [scope], base)
    rebuilt = _request("a long history " * 50 + "hi")
    await context.fit(rebuilt, _priced())
    full = worst_case([_priced()], rebuilt, session_bound=False)
    assert full is not None and context.extra_usd == pytest.approx(full - base)
    assert (await spent(lim, "key:k1", "total"))[1] == pytest.approx(full, abs=1e-6)
    await lim.settle(turn, 5.0, tokens=0)
    await context.release()
    assert await spent(lim, "key:k1", "total") == (5.0, 0.0)


async def test_a_history_that_does_not_fit_beside_its_own_admission_is_a_spent_budget(
    make_limits: Factory,
) -> None:
    from gateway.errors import BudgetBusy
    from gateway.limits.holds import ContextHold, worst_case

    lim = make_limits()
    rec = Recorder()
    new, rebuilt = _request("hi"), _request("a long history " * 50 + "hi")
    base = worst_case([_priced()], new, session_bound=True)
    full = worst_case([_priced()], rebuilt, session_bound=False, exact=True)  # counted exactly
    assert base is not None and full is not None
    scope = _key((base + full) / 2)  # room for the new message, not for the history
    admitter = Admitter(lim, rec, rec, "principal", "r")
    turn = await admitter.admit([scope], base)
    context = ContextHold(admitter, [scope], base)
    with pytest.raises(BudgetExceeded) as caught:  # only its own reservation was in the way
        await context.fit(rebuilt, _priced())
    assert not isinstance(caught.value, BudgetBusy)
    await lim.release(turn)


async def test_a_session_tool_loop_step_is_topped_up_for_its_history_and_given_back_at_its_settle(
    make_limits: Factory,
) -> None:
    from gateway.limits.holds import ContextHold, worst_case

    lim = make_limits()
    rec = Recorder()
    scope = _key(10_000.0)
    admitter = Admitter(lim, rec, rec, "principal", "r")
    turn = await admitter.admit([scope], 0.0)  # a tool loop's admission reserves nothing
    context = ContextHold(admitter, [scope], 0.0)
    holds = StepHolds(admitter, [scope], [_priced()], session_bound=True, context=context)
    step, rebuilt = _request("hi"), _request("a long history " * 50 + "hi")
    for _ in range(2):  # each step: its own hold, its history topped up, both gone at its settle
        hold = await holds.hold(step)
        assert context.base_usd == worst_case([_priced()], step, session_bound=True)
        await context.fit(rebuilt, _priced())
        full = worst_case([_priced()], rebuilt, session_bound=False)
        assert (await spent(lim, "key:k1", "total"))[1] == pytest.approx(full, abs=1e-6)
        await holds.settle(hold, 1.0)
        assert context.extra == [] and (await spent(lim, "key:k1", "total"))[1] == 0
    await lim.settle(turn, 0.0, tokens=0)
    assert await spent(lim, "key:k1", "total") == (2.0, 0.0)


async def test_a_turn_the_cheap_bound_does_not_fit_is_admitted_with_its_exact_count(
    make_limits: Factory,
) -> None:
    from gateway.limits.holds import worst_case
    from gateway.providers.catalog import load_tokenizer

    load_tokenizer()  # loaded: the exact count is the tokenizer's, not the bytes while it loads
    lim = make_limits()
    rec = Recorder()
    request = _request("a plain English sentence of some length, " * 40)
    cheap = worst_case([_priced()], request, session_bound=False)
    exact = worst_case([_priced()], request, session_bound=False, exact=True)
    assert cheap is not None and exact is not None and exact < cheap
    admitter = Admitter(lim, rec, rec, "principal", "r")
    turn = await admitter.admit([_key((cheap + exact) / 2)], cheap, lambda: exact)
    assert admitter.last_cost_usd == exact
    assert (await spent(lim, "key:k1", "total"))[1] == pytest.approx(exact, abs=1e-6)
    assert rec.calls == []  # the cheap bound's refusal was not one: not counted, not audited
    await lim.release(turn)


async def test_a_turn_the_exact_count_does_not_fit_either_is_refused_once(make_limits: Factory) -> None:
    lim = make_limits()
    rec = Recorder()
    admitter = Admitter(lim, rec, rec, "principal", "r")
    asked: list[int] = []

    def recount() -> float:
        asked.append(1)
        return 2.0

    with pytest.raises(BudgetExceeded):
        await admitter.admit([_key(1.0)], 3.0, recount)
    assert asked == [1]
    assert [c[0] for c in rec.calls] == ["rejected", "audit"]
    assert await spent(lim, "key:k1", "total") == (0.0, 0.0)


async def test_the_exact_count_is_not_asked_for_a_turn_that_fits(make_limits: Factory) -> None:
    lim = make_limits()
    rec = Recorder()
    admitter = Admitter(lim, rec, rec, "principal", "r")

    def recount() -> float:
        raise AssertionError("counted exactly though the cheap bound fits")

    turn = await admitter.admit([_key(1.0)], 0.5, recount)
    assert admitter.last_cost_usd == 0.5
    await lim.release(turn)


def test_a_principals_scopes_are_built_once_and_each_principal_has_its_own() -> None:
    from gateway.access.model import Budget, Principal
    from gateway.limits.holds import principal_scopes

    def principal(usd: float) -> Principal:
        return Principal("k1", "k", None, None, None, key_budgets=(Budget(period="day", usd=usd),))

    a, b = principal(1.0), principal(2.0)
    assert principal_scopes(a) is principal_scopes(a)
    assert principal_scopes(a)[0].budgets[0].usd == 1.0
    assert principal_scopes(b)[0].budgets[0].usd == 2.0
    assert principal_scopes(None) == []
