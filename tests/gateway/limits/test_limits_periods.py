"""Budget periods: day, ISO week, month and total windows on a zone's wall clock, DST days
included."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.errors import ConfigError
from gateway.limits.periods import TOTAL_START, WindowCache, period_window, zone

ZONES = [
    "UTC",
    "Europe/Berlin",
    "America/New_York",
    "America/Santiago",
    "Australia/Lord_Howe",
    "Asia/Kolkata",
]


def test_a_day_window_runs_from_local_midnight_to_the_next() -> None:
    now = datetime(2026, 3, 10, 23, 30, tzinfo=UTC)  # 00:30 on the 11th in Berlin
    start, reset = period_window(now, "day", "Europe/Berlin")
    assert start == datetime(2026, 3, 11, tzinfo=ZoneInfo("Europe/Berlin"))
    assert reset == datetime(2026, 3, 12, tzinfo=ZoneInfo("Europe/Berlin"))
    assert start.astimezone(UTC) == datetime(2026, 3, 10, 23, tzinfo=UTC)


def test_the_day_the_clocks_go_forward_is_23_hours_and_back_25() -> None:
    spring = datetime(2026, 3, 29, 12, tzinfo=UTC)  # Europe/Berlin: 02:00 -> 03:00
    start, reset = period_window(spring, "day", "Europe/Berlin")
    assert reset is not None and reset.timestamp() - start.timestamp() == 23 * 3600
    autumn = datetime(2026, 10, 25, 12, tzinfo=UTC)  # 03:00 -> 02:00
    start, reset = period_window(autumn, "day", "Europe/Berlin")
    assert reset is not None and reset.timestamp() - start.timestamp() == 25 * 3600


def test_a_midnight_inside_a_dst_gap_starts_the_day_when_the_gap_ends() -> None:
    # America/Santiago springs forward at 00:00 (to 01:00) on 2026-09-06: that day has no midnight.
    now = datetime(2026, 9, 6, 15, tzinfo=UTC)
    start, reset = period_window(now, "day", "America/Santiago")
    assert (start.hour, start.minute) == (1, 0)
    assert start.astimezone(UTC) == datetime(2026, 9, 6, 4, tzinfo=UTC)
    assert reset is not None and reset.timestamp() - start.timestamp() == 23 * 3600


def test_a_week_starts_on_monday_and_a_month_on_the_first() -> None:
    now = datetime(2026, 1, 1, 12, tzinfo=UTC)  # a Thursday
    start, reset = period_window(now, "week", "UTC")
    assert start == datetime(2025, 12, 29, tzinfo=UTC) and start.weekday() == 0
    assert reset == datetime(2026, 1, 5, tzinfo=UTC)
    start, reset = period_window(datetime(2026, 12, 31, 23, tzinfo=UTC), "month", "UTC")
    assert (start, reset) == (datetime(2026, 12, 1, tzinfo=UTC), datetime(2027, 1, 1, tzinfo=UTC))


def test_the_total_period_never_resets() -> None:
    assert period_window(datetime(2026, 5, 1, tzinfo=UTC), "total", "UTC") == (TOTAL_START, None)


def test_naive_times_unknown_periods_and_unknown_zones_are_refused() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        period_window(datetime(2026, 1, 1), "day", "UTC")
    with pytest.raises(ValueError, match="unknown budget period"):
        period_window(datetime(2026, 1, 1, tzinfo=UTC), "year", "UTC")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="Mars/Olympus"):
        zone("Mars/Olympus")


instants = st.datetimes(
    min_value=datetime(2000, 1, 1), max_value=datetime(2037, 12, 31), timezones=st.just(UTC)
)


@given(instants, st.sampled_from(["day", "week", "month"]), st.sampled_from(ZONES))
def test_every_instant_lies_in_its_window_and_windows_tile_time(now: datetime, period: str, tz: str) -> None:
    start, reset = period_window(now, period, tz)  # type: ignore[arg-type]
    assert reset is not None
    assert start <= now < reset
    # the next window starts where this one ends, and the previous one ends where it starts
    assert period_window(reset, period, tz)[0] == reset  # type: ignore[arg-type]
    assert period_window(start - timedelta(microseconds=1), period, tz)[1] == start  # type: ignore[arg-type]
    local = start.astimezone(ZoneInfo(tz))
    if period == "week":
        assert local.weekday() == 0
    if period == "month":
        assert local.day == 1
    hours = (reset.timestamp() - start.timestamp()) / 3600
    expected = {"day": (1,), "week": (7,), "month": (28, 29, 30, 31)}[period]
    assert any(abs(hours - 24 * d) <= 1 for d in expected)  # DST moves it by at most an hour


@given(instants, st.sampled_from(["day", "week", "month", "total"]), st.sampled_from(ZONES))
def test_the_window_cache_agrees_with_the_calendar(now: datetime, period: str, tz: str) -> None:
    cache = WindowCache(tz)
    for offset in (0.0, 1.0, 86_400.0, 40 * 86_400.0):
        t = now.timestamp() + offset
        start, reset = period_window(datetime.fromtimestamp(t, UTC), period, tz)  # type: ignore[arg-type]
        assert cache.window(t, period) == (  # type: ignore[arg-type]
            start.timestamp(),
            None if reset is None else reset.timestamp(),
        )
