"""Giving memory back after large work: one ``malloc_trim`` after a burst, off the event loop."""

from __future__ import annotations

import asyncio

import pytest

from gateway.memory import MemoryReturn


async def _until(cond: object, timeout_s: float = 5.0) -> None:
    async with asyncio.timeout(timeout_s):
        while not cond():  # type: ignore[operator]
            await asyncio.sleep(0.005)


async def test_a_burst_of_large_requests_gives_memory_back_once_after_it() -> None:
    memory = MemoryReturn(delay_s=0.05)
    if not memory.available:
        pytest.skip("no glibc malloc_trim here")
    for _ in range(20):
        memory.note()
    await _until(lambda: memory.trims == 1)
    memory.note()
    await _until(lambda: memory.trims == 2)
    memory.close()
