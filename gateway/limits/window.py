"""Sliding 60-second windows for requests/min and tokens/min, in one-second buckets.

The window at time ``t`` (epoch seconds, second ``s = floor(t)``) counts the buckets
``s-60 .. s``: everything from the last 60 to 61 seconds. Because that span is never shorter
than 60 s, the count never under-states any true 60-second window, which gives the accuracy
bound this gateway states:

* **Never over**: for every interval of 60 s, the turns admitted in it are at most ``rpm``
  (and a turn is admitted only while the tokens settled in the last 60 s are below ``tpm``).
* **At most one second early**: a request may be refused for up to one second longer than an
  exact log would refuse it (its oldest bucket is counted whole until it is 61 s old).

Memory is at most 61 buckets per counter. The Redis backend runs the same arithmetic in Lua
(:mod:`gateway.limits.redis_scripts`); this class is the in-process one.
"""

from __future__ import annotations

import math
from collections import deque

WINDOW_S = 60
"""The window length, seconds."""

SPAN_S = WINDOW_S + 1
"""A bucket is counted while it is at most this many whole seconds old (exclusive)."""


class SlidingWindow:
    """Counts (requests or tokens) in one-second buckets over the last :data:`WINDOW_S`
    seconds. Not thread-safe; asyncio-safe since no method awaits."""

    __slots__ = ("buckets", "total")

    def __init__(self) -> None:
        self.buckets: deque[list[int]] = deque()  # [second, count], oldest first
        self.total = 0

    def sweep(self, now_s: float) -> None:
        """Drop the buckets no longer in the window at ``now_s``."""
        floor = math.floor(now_s) - WINDOW_S
        buckets = self.buckets
        while buckets and buckets[0][0] < floor:
            self.total -= buckets.popleft()[1]

    def add(self, now_s: float, n: int) -> None:
        """Count ``n`` at ``now_s`` (a clock that stepped back counts into the newest bucket)."""
        if n <= 0:
            return
        second = math.floor(now_s)
        buckets = self.buckets
        if buckets and buckets[-1][0] >= second:
            buckets[-1][1] += n
        else:
            buckets.append([second, n])
        self.total += n

    def retry_in(self, now_s: float, need: int, limit: int) -> float:
        """Seconds from ``now_s`` until ``total + need <= limit`` holds (0 if it does now);
        ``inf`` when ``need`` alone exceeds ``limit``. Call after :meth:`sweep`."""
        excess = self.total + need - limit
        if excess <= 0:
            return 0.0
        if need > limit:
            return math.inf
        freed = 0
        for second, count in self.buckets:
            freed += count
            if freed >= excess:
                return max(second + SPAN_S - now_s, 0.0)
        return float(WINDOW_S)  # unreachable while total is the buckets' sum

    def reset_in(self, now_s: float) -> float:
        """Seconds from ``now_s`` until the window is empty (0 if it is)."""
        if not self.buckets:
            return 0.0
        return max(self.buckets[-1][0] + SPAN_S - now_s, 0.0)
