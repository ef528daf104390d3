"""Cost accounting (gateway.accounting) and handed case C30 (usage converted by hand from
/work/shared/cases/handed.jsonl, following the Usage convention: input excludes cache tokens)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from gateway.accounting import compute_cost, merge_usage, priced
from gateway.config import Price
from gateway.invariants import collect
from gateway.schema import MessageEnd, MessageStart, StreamEvent, Usage

C30_PRICE = Price(input=3.0, cache_write=3.75, cache_read=0.3, output=15.0)


def test_C30_A_cache_writes_billed_once_at_their_own_rate() -> None:
    usage = Usage(input_tokens=5, cache_write_tokens=10_000, cache_read_tokens=0, output_tokens=400)
    assert compute_cost(usage, C30_PRICE) == 0.043515
    assert usage.total_input_tokens == 10_005 and usage.output_tokens == 400


def test_C30_B_stream_usage_costs_the_same_as_identical_non_stream_usage() -> None:
    # message_start carries input + cache read, message_delta the final output count
    events: list[StreamEvent] = [
        MessageStart(
            id="msg_4",
            model="claude-sonnet-4-5",
            usage=Usage(input_tokens=4, cache_read_tokens=2000, cache_write_tokens=0, output_tokens=1),
        ),
        MessageEnd(stop_reason="stop", usage=Usage(output_tokens=20)),
    ]
    streamed = collect(events).usage
    assert streamed == Usage(input_tokens=4, cache_read_tokens=2000, output_tokens=20)
    assert compute_cost(streamed, C30_PRICE) == 0.000912
    non_stream = Usage(input_tokens=4, cache_read_tokens=2000, output_tokens=20)
    assert priced(streamed, C30_PRICE) == priced(non_stream, C30_PRICE)
    assert priced(non_stream, C30_PRICE).cost_usd == 0.000912


def test_unknown_input_or_output_price_gives_no_cost() -> None:
    u = Usage(input_tokens=10, output_tokens=10)
    assert compute_cost(u, Price()) is None
    assert compute_cost(u, Price(input=1.0)) is None
    assert compute_cost(u, Price(output=1.0)) is None
    assert priced(u, None).cost_usd is None


def test_unset_cache_prices_fall_back_to_input_price_but_zero_is_a_price() -> None:
    u = Usage(cache_read_tokens=1_000_000, cache_write_tokens=1_000_000)
    assert compute_cost(u, Price(input=2.0, output=8.0)) == 4.0
    assert compute_cost(u, Price(input=2.0, output=8.0, cache_read=0.0, cache_write=0.0)) == 0.0


def test_reasoning_tokens_priced_once_at_reasoning_rate_or_output_rate() -> None:
    u = Usage(output_tokens=1_000_000, reasoning_tokens=400_000)
    assert compute_cost(u, Price(input=1.0, output=10.0)) == 10.0
    assert compute_cost(u, Price(input=1.0, output=10.0, reasoning=20.0)) == 6.0 + 8.0


def test_priced_does_not_change_its_input() -> None:
    u = Usage(input_tokens=1)
    out = priced(u, Price(input=1.0, output=1.0))
    assert u.cost_usd is None and out.cost_usd == 0.000001


def test_merge_usage_adds_attempts() -> None:
    a = Usage(
        input_tokens=1,
        output_tokens=2,
        cache_read_tokens=3,
        cache_write_tokens=4,
        reasoning_tokens=1,
        cost_usd=0.5,
    )
    b = Usage(input_tokens=10, output_tokens=20, estimated=True, cost_usd=0.25)
    m = merge_usage(a, b)
    assert m == Usage(
        input_tokens=11,
        output_tokens=22,
        cache_read_tokens=3,
        cache_write_tokens=4,
        reasoning_tokens=1,
        estimated=True,
        cost_usd=0.75,
    )


def test_merge_usage_unknown_cost_only_counts_as_zero_without_tokens() -> None:
    known = Usage(input_tokens=5, cost_usd=0.1)
    assert merge_usage(known, Usage()).cost_usd == 0.1
    assert merge_usage(Usage(), known).cost_usd == 0.1
    assert merge_usage(known, Usage(output_tokens=3)).cost_usd is None
    assert merge_usage(Usage(), Usage()).cost_usd is None


counts = st.integers(min_value=0, max_value=10_000_000)
rates = st.none() | st.floats(min_value=0, max_value=1000, allow_nan=False)


@given(counts, counts, counts, counts, counts, rates, rates, rates, rates, rates)
def test_cost_is_deterministic_non_negative_and_additive_over_fields(
    i: int,
    o: int,
    cr: int,
    cw: int,
    r: int,
    pi: float | None,
    po: float | None,
    pcr: float | None,
    pcw: float | None,
    pr: float | None,
) -> None:
    r = min(r, o)
    price = Price(input=pi, output=po, cache_read=pcr, cache_write=pcw, reasoning=pr)
    usage = Usage(
        input_tokens=i, output_tokens=o, cache_read_tokens=cr, cache_write_tokens=cw, reasoning_tokens=r
    )
    cost = compute_cost(usage, price)
    if pi is None or po is None:
        assert cost is None
        return
    assert cost is not None and cost >= 0
    assert compute_cost(usage.model_copy(), price) == cost
    parts = [
        Usage(input_tokens=i),
        Usage(cache_read_tokens=cr),
        Usage(cache_write_tokens=cw),
        Usage(output_tokens=o, reasoning_tokens=r),
    ]
    total = sum(compute_cost(p, price) or 0.0 for p in parts)
    assert abs(total - cost) <= 1e-8 + 1e-12 * total
