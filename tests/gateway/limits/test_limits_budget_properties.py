"""Property: whatever the interleaving of admissions, settles and releases of concurrent
turns, spend + reservations never pass a hard budget (exactly, in nano-dollars)."""

from __future__ import annotations

import asyncio

from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.errors import BudgetExceeded
from gateway.limits.memory import MemoryLimits
from gateway.limits.model import NANO, BudgetLimit, Scope, usd_to_nano

turns = st.lists(
    st.tuples(
        st.integers(min_value=1, max_value=400_000_000),  # worst case, nano-USD
        st.floats(min_value=0, max_value=1),  # actual / worst case
        st.booleans(),  # fails (released) instead of settling
        st.integers(min_value=0, max_value=3),  # yields before it ends
    ),
    min_size=1,
    max_size=60,
)


@settings(max_examples=150, deadline=None)
@given(st.integers(min_value=1, max_value=2 * NANO), turns)
def test_spend_plus_reservations_never_pass_a_hard_limit(limit_nano: int, plan: list) -> None:  # type: ignore[type-arg]
    lim = MemoryLimits(clock=lambda: 1_767_225_600.0)
    scope = Scope("key", "k", (BudgetLimit("day", limit_nano / NANO),))
    limit = usd_to_nano(limit_nano / NANO)

    def held() -> int:
        counter = next(iter(lim._budgets.values()))
        return counter.spent + counter.reserved

    async def turn(worst: int, share: float, fails: bool, yields: int) -> None:
        try:
            res = await lim.admit([scope], worst / NANO)
        except BudgetExceeded:
            return
        assert held() <= limit
        for _ in range(yields):
            await asyncio.sleep(0)
        if fails:
            await lim.release(res)
        else:
            await lim.settle(res, worst * share / NANO, tokens=0)
        assert held() <= limit

    async def main() -> None:
        await asyncio.gather(*(turn(*t) for t in plan))
        counter = next(iter(lim._budgets.values()), None)
        assert counter is None or (counter.reserved == 0 and counter.spent <= limit)

    asyncio.run(main())
