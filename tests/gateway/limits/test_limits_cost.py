"""The worst-case cost a turn reserves: input at its dearest input rate, the output budget at
the dearer of output and reasoning."""

from __future__ import annotations

import pytest

from gateway.accounting import compute_cost
from gateway.config import Price
from gateway.limits.cost import worst_case_usd
from gateway.schema import Usage


def test_the_worst_case_is_input_plus_the_whole_output_budget_per_million() -> None:
    price = Price(input=3.0, output=15.0)
    assert worst_case_usd(10_000, 2_000, price) == pytest.approx(0.03 + 0.03)


def test_cache_writes_and_reasoning_dearer_than_the_base_rates_raise_the_bound() -> None:
    price = Price(input=3.0, output=15.0, cache_write=3.75, cache_read=0.3, reasoning=20.0)
    assert worst_case_usd(1_000_000, 1_000_000, price) == pytest.approx(3.75 + 20.0)


def test_an_unknown_price_has_no_bound() -> None:
    assert worst_case_usd(10, 10, None) is None
    assert worst_case_usd(10, 10, Price(input=1.0)) is None


def test_the_worst_case_is_never_below_the_priced_usage_of_any_split() -> None:
    price = Price(input=3.0, output=15.0, cache_write=3.75, cache_read=0.3, reasoning=20.0)
    bound = worst_case_usd(1000, 500, price)
    assert bound is not None
    for cr, cw, reasoning in [(0, 0, 0), (1000, 0, 0), (0, 1000, 500), (400, 300, 250)]:
        usage = Usage(
            input_tokens=1000 - cr - cw,
            cache_read_tokens=cr,
            cache_write_tokens=cw,
            output_tokens=500,
            reasoning_tokens=reasoning,
        )
        cost = compute_cost(usage, price)
        assert cost is not None and cost <= bound + 1e-12
