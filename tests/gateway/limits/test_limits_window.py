"""Sliding 60 s windows in one-second buckets: never more than the limit in any 60 s, at most
one second more conservative than an exact log."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.limits.window import SlidingWindow

T = 1_767_225_600.0


def admit(w: SlidingWindow, now: float, limit: int) -> bool:
    w.sweep(now)
    if w.retry_in(now, 1, limit) > 0:
        return False
    w.add(now, 1)
    return True


def test_a_full_window_admits_again_when_its_oldest_bucket_ages_out() -> None:
    w = SlidingWindow()
    assert all(admit(w, T + 0.5, 3) for _ in range(3))
    assert not admit(w, T + 0.5, 3)
    w.sweep(T + 10)
    retry = w.retry_in(T + 10, 1, 3)
    assert retry == 51.0  # the bucket of second T is counted until T + 61
    assert not admit(w, T + 10 + retry - 0.001, 3)
    assert admit(w, T + 10 + retry, 3)


def test_retry_is_infinite_for_a_need_above_the_limit_and_reset_is_when_empty() -> None:
    w = SlidingWindow()
    w.add(T, 5)
    w.add(T + 3.2, 5)
    assert math.isinf(w.retry_in(T + 4, 11, 10))
    assert w.reset_in(T + 4) == 60.0  # second T+3's bucket leaves at T+64
    w.sweep(T + 70)
    assert (w.total, w.reset_in(T + 70)) == (0, 0.0)


def test_a_clock_that_steps_back_counts_into_the_newest_bucket() -> None:
    w = SlidingWindow()
    w.add(T + 5, 1)
    w.add(T + 4, 2)
    assert [list(b) for b in w.buckets] == [[int(T) + 5, 3]] and w.total == 3


@settings(max_examples=200)
@given(
    st.integers(min_value=1, max_value=20),
    st.lists(st.floats(min_value=0, max_value=0.9), min_size=1, max_size=400),
)
def test_no_60_second_interval_ever_holds_more_than_the_limit(limit: int, gaps: list[float]) -> None:
    w = SlidingWindow()
    now, admitted = T, []
    for gap in gaps:
        now += gap
        if admit(w, now, limit):
            admitted.append(now)
    for i, t in enumerate(admitted):  # every 60 s interval starting at an admission
        assert sum(1 for u in admitted[i:] if u < t + 60) <= limit


@settings(max_examples=200)
@given(
    st.integers(min_value=1, max_value=20),
    st.lists(st.floats(min_value=0, max_value=3), min_size=1, max_size=200),
)
def test_a_refusal_is_at_most_one_second_longer_than_an_exact_log_would_give(
    limit: int, gaps: list[float]
) -> None:
    w = SlidingWindow()
    now, admitted = T, []
    for gap in gaps:
        now += gap
        if admit(w, now, limit):
            admitted.append(now)
        else:
            # an exact log admits once the (n - limit + 1)-th newest admission is 60 s old
            in_log = [u for u in admitted if u > now - 60]
            exact = in_log[len(in_log) - limit] + 60 - now if len(in_log) >= limit else 0.0
            assert exact <= w.retry_in(now, 1, limit) <= exact + 1 + 1e-9
