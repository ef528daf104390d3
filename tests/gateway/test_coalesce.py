"""gateway.coalesce: frames ready at one instant are joined, the first frame goes out alone."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from gateway.coalesce import coalesce


async def _ready(*items: bytes) -> AsyncIterator[bytes]:
    for item in items:
        yield item


async def _collect(source: AsyncIterator[bytes]) -> list[bytes]:
    return [chunk async for chunk in coalesce(source)]


async def test_the_first_frame_is_sent_alone_and_the_rest_of_a_burst_is_joined() -> None:
    assert await _collect(_ready(b"a", b"b", b"c")) == [b"a", b"bc"]


async def test_frames_are_sent_before_the_source_waits() -> None:
    async def source() -> AsyncIterator[bytes]:
        yield b"1"
        yield b"2"
        yield b"3"
        await asyncio.sleep(0)
        yield b"4"
        yield b"5"

    assert await _collect(source()) == [b"1", b"23", b"45"]


async def test_a_single_frame_stream_is_unchanged() -> None:
    assert await _collect(_ready(b"only")) == [b"only"]
    assert await _collect(_ready()) == []


async def test_an_error_in_the_source_comes_after_the_bytes_already_made() -> None:
    async def source() -> AsyncIterator[bytes]:
        yield b"x"
        yield b"y"
        raise RuntimeError("boom")

    out: list[bytes] = []
    try:
        async for chunk in coalesce(source()):
            out.append(chunk)
    except RuntimeError as err:
        assert str(err) == "boom"
    else:
        raise AssertionError("the source's error was swallowed")
    assert out == [b"x", b"y"]
