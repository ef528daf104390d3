"""Upstream timeouts (gateway/providers/transport.py) against a local aiohttp server that
holds its answer open: each test ends when a timeout fires, with the message naming it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from gateway.config import TimeoutConfig
from gateway.errors import UpstreamTimeout
from gateway.providers import openai_chat, transport
from gateway.providers.wire import UpstreamRequest


@pytest.fixture
async def held_server() -> AsyncIterator[str]:
    """``POST /body`` sends headers and half a JSON body, ``POST /stream`` one SSE event; both
    then hold the connection open until the test ends."""
    release = asyncio.Event()

    async def half(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"content-type": request.match_info["ctype"]})
        await resp.prepare(request)
        await resp.write(b'data: {"choices":[]}\n\n' if "event-stream" in resp.content_type else b'{"id":')
        await release.wait()
        return resp

    app = web.Application()
    app.router.add_post("/{ctype:.+}", half)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    yield f"http://127.0.0.1:{port}"
    release.set()
    await runner.cleanup()


@pytest.mark.parametrize(
    ("between_chunks", "total", "message"),
    [
        (60, 0.3, r"total timeout of 0\.3s"),  # cut by the total timeout: named as such
        (0.3, 60, r"no stream data for 0\.3s \(timeout between_chunks\)"),  # a gap between reads
    ],
    ids=["total", "between_chunks"],
)
async def test_a_stream_timeout_names_the_timeout_that_fired(
    held_server: str, between_chunks: float, total: float, message: str
) -> None:
    t = TimeoutConfig(connect=5, first_byte=5, between_chunks=between_chunks, total=total)
    up = UpstreamRequest(url=f"{held_server}/text/event-stream", headers={}, body=b"{}", stream=True)
    session = transport.make_session()
    try:
        with pytest.raises(UpstreamTimeout, match=message):
            async for _ in transport.send_stream_reads(session, up, t, openai_chat, "dep"):
                pass
    finally:
        await session.close()


async def test_a_whole_body_stalling_mid_way_is_a_timeout_naming_first_byte(held_server: str) -> None:
    t = TimeoutConfig(connect=5, first_byte=0.3, between_chunks=60, total=60)
    up = UpstreamRequest(url=f"{held_server}/application/json", headers={}, body=b"{}", stream=False)
    session = transport.make_session()
    try:
        with pytest.raises(UpstreamTimeout, match=r"no data for 0\.3s, timeout first_byte"):
            await transport.send(session, up, t, openai_chat, "dep")
    finally:
        await session.close()


async def test_a_slow_reader_is_not_taken_for_a_silent_upstream() -> None:
    """Time the gateway spends handing data on (a slow client) is not a gap of the upstream's:
    only waiting for the upstream counts toward ``between_chunks``."""

    async def quick(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"content-type": "text/event-stream"})
        await resp.prepare(request)
        for i in range(3):
            await resp.write(b'data: {"n":%d}\n\n' % i)
        await resp.write(b"data: [DONE]\n\n")
        return resp

    app = web.Application()
    app.router.add_post("/s", quick)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    t = TimeoutConfig(connect=5, first_byte=5, between_chunks=0.2, total=60)
    up = UpstreamRequest(url=f"http://127.0.0.1:{port}/s", headers={}, body=b"{}", stream=True)
    session = transport.make_session()
    got: list[bytes] = []
    try:
        async for events in transport.send_stream_reads(session, up, t, openai_chat, "dep"):
            got += [data for _, data in events]
            await asyncio.sleep(0.5)  # the client's pace: slower than between_chunks on purpose
    finally:
        await session.close()
        await runner.cleanup()
    assert got[-1] == b"[DONE]" and len(got) == 4
