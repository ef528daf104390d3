"""Wrong admin keys per client address (gateway/access/guessing.py): a window of failures,
then 429 until it has passed; every wrong key and the first refusal audited; the worker
processes of one machine count together through their shared file."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from gateway.access.guessing import KeyGuesses, TooManyKeyGuesses
from gateway.workers_state import WorkersState


class Clock:
    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


class Store:
    def __init__(self) -> None:
        self.events: list[Any] = []

    async def audit(self, event: Any) -> None:
        self.events.append(event)


async def test_wrong_keys_are_throttled_per_address_for_the_window() -> None:
    clock = Clock(0.0)
    throttle = KeyGuesses(failures=3, window_s=60, clock=clock)
    for _ in range(3):
        assert throttle.retry_after("1.2.3.4") is None
        await throttle.failed("1.2.3.4", "/ui/login")
    assert throttle.retry_after("1.2.3.4") == 60
    assert throttle.retry_after("5.6.7.8") is None  # another address is not held back
    clock.t = 45.0
    assert throttle.retry_after("1.2.3.4") == 15
    clock.t = 60.0
    assert throttle.retry_after("1.2.3.4") is None


async def test_each_wrong_key_is_audited_and_a_throttled_address_is_refused_with_one_more_event() -> None:
    clock, store = Clock(0.0), Store()
    guesses = KeyGuesses(failures=2, window_s=60, clock=clock)
    for _ in range(2):
        await guesses.check("1.2.3.4", "/admin/keys", store)
        await guesses.failed("1.2.3.4", "/admin/keys", store)
    for _ in range(3):
        with pytest.raises(TooManyKeyGuesses) as refused:
            await guesses.check("1.2.3.4", "/ui/login", store)
    assert refused.value.status == 429 and refused.value.retry_after_s == 60
    assert [e.action for e in store.events] == ["admin_key.refused"] * 2 + ["admin_key.throttled"]
    assert {e.actor for e in store.events} == {"client:1.2.3.4"}
    assert store.events[1].detail == {"failures_in_window": 2}


async def test_the_right_key_forgets_the_failures_of_its_address() -> None:
    guesses = KeyGuesses(failures=2, window_s=60, clock=Clock(0.0))
    await guesses.failed("1.2.3.4", "/admin/keys")
    guesses.succeeded("1.2.3.4")
    await guesses.failed("1.2.3.4", "/admin/keys")
    await guesses.check("1.2.3.4", "/admin/keys")  # one failure since: not throttled


async def test_workers_sharing_a_file_count_the_wrong_keys_of_an_address_together(tmp_path: Path) -> None:
    clock, store = Clock(0.0), Store()
    one, two = WorkersState(tmp_path / "w.db"), WorkersState(tmp_path / "w.db")  # two processes' views
    first = KeyGuesses(failures=3, window_s=60, clock=clock, shared=one)
    second = KeyGuesses(failures=3, window_s=60, clock=clock, shared=two)
    try:
        await first.failed("1.2.3.4", "/admin/keys", store)
        await second.failed("1.2.3.4", "/admin/keys", store)
        await first.check("1.2.3.4", "/admin/keys", store)  # two in the window: not yet
        clock.t = 10.0
        await first.failed("1.2.3.4", "/admin/keys", store)
        with pytest.raises(TooManyKeyGuesses) as refused:  # the third, counted in another worker
            await second.check("1.2.3.4", "/ui/login", store)
        assert refused.value.retry_after_s == 50
        assert store.events[-2].detail == {"failures_in_window": 3}  # across both workers
        await second.check("5.6.7.8", "/admin/keys")  # another address is not held back
        clock.t = 60.0  # the first two have left the window
        await second.check("1.2.3.4", "/admin/keys")
        await second.failed("1.2.3.4", "/admin/keys")
        await first.check("1.2.3.4", "/admin/keys")  # sees 2 (t=10, t=60) in the file
        first.succeeded("1.2.3.4")  # the right key: forgotten in every worker
        await asyncio.gather(*first._forgetting)
        assert await two.guesses("1.2.3.4", 0.0) == []
    finally:
        await one.aclose()
        await two.aclose()


async def test_a_shared_file_that_fails_leaves_each_worker_counting_alone(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a folder")
    broken = WorkersState(tmp_path / "file" / "w.db")
    guesses = KeyGuesses(failures=2, window_s=60, clock=Clock(0.0), shared=broken)
    for _ in range(2):
        await guesses.check("1.2.3.4", "/admin/keys")
        await guesses.failed("1.2.3.4", "/admin/keys")
    with pytest.raises(TooManyKeyGuesses):
        await guesses.check("1.2.3.4", "/admin/keys")
    await broken.aclose()
