"""Client connection bounds (gateway/serving.py) on a real uvicorn server with a tiny app: the
header deadline (first request and kept-alive next ones), the body gap, the connection cap
(the longest-waiting connection goes first; 503 when none waits) and the fd limit raise."""

from __future__ import annotations

import asyncio
import json
import resource
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from gateway.serving import STATE_KEY, ConnectionGuard, GuardedHttpToolsProtocol

TIMEOUT_S = 0.5


async def _echo(request: Request) -> PlainTextResponse:
    body = await request.body()
    if request.query_params.get("hold"):
        await asyncio.sleep(float(request.query_params["hold"]))
    return PlainTextResponse(f"got {len(body)}")


@pytest.fixture
async def server() -> AsyncIterator[tuple[int, ConnectionGuard]]:
    """A guarded uvicorn on a free port, with no minimum body rate."""
    async with _serving(0.0) as served:
        yield served


@pytest.fixture
async def rate_server() -> AsyncIterator[tuple[int, ConnectionGuard]]:
    """A guarded uvicorn on a free port whose request bodies must average 100 B/s."""
    async with _serving(100.0) as served:
        yield served


@asynccontextmanager
async def _serving(min_rate: float) -> AsyncIterator[tuple[int, ConnectionGuard]]:
    guard = ConnectionGuard(
        header_timeout_s=TIMEOUT_S,
        body_timeout_s=TIMEOUT_S,
        max_connections=4,
        body_min_bytes_per_s=min_rate,
    )

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[dict[str, Any]]:
        yield {STATE_KEY: guard}

    app = Starlette(routes=[Route("/", _echo, methods=["GET", "POST"])], lifespan=lifespan)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(
        app, http=GuardedHttpToolsProtocol, lifespan="on", log_level="warning", timeout_keep_alive=30
    )
    srv = uvicorn.Server(config)
    task = asyncio.create_task(srv.serve(sockets=[sock]))
    async with asyncio.timeout(10):
        while not srv.started:
            await asyncio.sleep(0.01)
    yield sock.getsockname()[1], guard
    srv.should_exit = True
    await asyncio.wait_for(task, 10)


async def _open(port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_connection("127.0.0.1", port)


async def _response(reader: asyncio.StreamReader) -> bytes:
    async with asyncio.timeout(10):
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(
            int(h.split(b":")[1]) for h in head.split(b"\r\n") if h.lower().startswith(b"content-length")
        )
        return head + await reader.readexactly(length)


async def _until(cond: Any) -> None:
    async with asyncio.timeout(10):
        while not cond():
            await asyncio.sleep(0.005)


async def _until_closed(reader: asyncio.StreamReader) -> bytes:
    """Everything the server sends until it closes the connection (bounded wait)."""
    async with asyncio.timeout(10):
        return await reader.read()


async def test_a_connection_that_sends_nothing_gets_408_at_the_header_deadline(
    server: tuple[int, ConnectionGuard],
) -> None:
    port, guard = server
    reader, writer = await _open(port)
    assert (await _until_closed(reader)).startswith(b"HTTP/1.1 408 Request Timeout")
    assert guard.timed_out == 1
    writer.close()


async def test_headers_trickled_a_byte_at_a_time_are_cut_at_the_deadline(
    server: tuple[int, ConnectionGuard],
) -> None:
    port, _ = server
    reader, writer = await _open(port)
    closed = asyncio.create_task(_until_closed(reader))
    for byte in b"GET / HTTP/1.1\r\nhost: x\r\nx-slow: " + b"y" * 100:
        if closed.done():
            break
        writer.write(bytes([byte]))
        await asyncio.sleep(0.05)
    assert (await closed).startswith(b"HTTP/1.1 408")
    writer.close()


async def test_a_kept_alive_connection_trickling_its_next_request_is_cut_at_the_deadline(
    server: tuple[int, ConnectionGuard],
) -> None:
    port, guard = server
    reader, writer = await _open(port)
    writer.write(b"GET / HTTP/1.1\r\nhost: x\r\n\r\n")
    assert b"got 0" in await _response(reader)
    await asyncio.sleep(TIMEOUT_S * 1.5)  # kept alive past the first deadline: the next request has its own
    writer.write(b"GET / HT")  # the next request, never finished
    assert (await _until_closed(reader)).startswith(b"HTTP/1.1 408")
    assert guard.timed_out == 1
    writer.close()


async def test_a_body_that_stops_is_cut_after_the_gap_and_a_slow_moving_one_is_served(
    server: tuple[int, ConnectionGuard],
) -> None:
    port, _ = server
    reader, writer = await _open(port)
    writer.write(b"POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 10\r\n\r\n")
    for _ in range(10):  # slower in all than the gap, never a gap as long
        writer.write(b"z")
        await asyncio.sleep(TIMEOUT_S / 4)
    assert b"got 10" in await _response(reader)
    writer.write(b"POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 10\r\n\r\nzz")
    assert (await _until_closed(reader)).startswith(b"HTTP/1.1 408")
    writer.close()


async def test_past_the_cap_a_new_connection_closes_the_one_waiting_longest(
    server: tuple[int, ConnectionGuard],
) -> None:
    port, guard = server
    waiting = []
    for n in range(1, 5):  # accepted in this order
        waiting.append(await _open(port))
        await _until(lambda n=n: guard.open == n)  # type: ignore[misc]
    reader, writer = await _open(port)
    writer.write(b"GET / HTTP/1.1\r\nhost: x\r\n\r\n")
    assert b"got 0" in await _response(reader)
    assert await _until_closed(waiting[0][0]) == b"", "the oldest waiting connection was closed"
    assert guard.evicted == 1
    for _, w in [*waiting, (reader, writer)]:
        w.close()


async def test_past_the_cap_with_every_connection_busy_a_new_one_gets_503(
    server: tuple[int, ConnectionGuard],
) -> None:
    port, guard = server
    busy = []
    for _ in range(4):
        r, w = await _open(port)
        w.write(b"GET /?hold=2 HTTP/1.1\r\nhost: x\r\n\r\n")
        busy.append((r, w))
    await _until(lambda: guard.open == 4 and not guard.idle)  # all four through their headers
    reader, writer = await _open(port)
    refused = await _until_closed(reader)
    assert refused.startswith(b"HTTP/1.1 503 Service Unavailable")
    head, _, body = refused.partition(b"\r\n\r\n")
    assert b"content-type: application/json" in head and b"retry-after: 1" in head
    assert json.loads(body) == {
        "error": {
            "type": "overloaded_error",
            "message": "the gateway holds its limit of 4 client connections (server.max_connections), "
            "none of them idle or slow; retry shortly",
        }
    }
    assert guard.refused == 1
    for r, w in busy:
        assert b"got 0" in await _response(r)
        w.close()
    writer.close()


def _json_error(raw: bytes) -> dict[str, Any]:
    head, _, body = raw.partition(b"\r\n\r\n")
    assert b"content-type: application/json" in head and b"connection: close" in head, head
    length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
    assert len(body) == length
    return dict(json.loads(body)["error"])


async def test_a_body_slower_than_the_minimum_rate_gets_a_json_408_after_the_grace_period(
    rate_server: tuple[int, ConnectionGuard],
) -> None:
    port, guard = rate_server
    reader, writer = await _open(port)
    writer.write(b"POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 100000\r\n\r\n")
    closed = asyncio.create_task(_until_closed(reader))
    sent = 0
    while not closed.done():  # 1 byte every 0.05 s: 20 B/s, never a gap near the 0.5 s one
        writer.write(b"z")
        sent += 1
        await asyncio.sleep(0.05)
    raw = await closed
    assert raw.startswith(b"HTTP/1.1 408 Request Timeout")
    err = _json_error(raw)
    assert err["type"] == "timeout_error"
    assert "slower than server.body_min_bytes_per_s (100 B/s)" in err["message"], err
    assert sent < 40, "cut soon after the grace period (body_timeout_s)"
    assert guard.timed_out == 1
    writer.close()


async def test_a_body_faster_than_the_minimum_rate_is_served_however_long_it_takes(
    rate_server: tuple[int, ConnectionGuard],
) -> None:
    port, guard = rate_server
    reader, writer = await _open(port)
    writer.write(b"POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 300\r\n\r\n")
    for _ in range(20):  # 15 bytes every 0.05 s: 300 B/s for 1 s, twice the grace period
        writer.write(b"z" * 15)
        await asyncio.sleep(0.05)
    assert b"got 300" in await _response(reader)
    assert guard.timed_out == 0
    writer.close()


async def test_past_the_cap_a_new_connection_closes_the_body_furthest_behind_the_minimum_rate(
    rate_server: tuple[int, ConnectionGuard],
) -> None:
    port, guard = rate_server
    slow = []
    for n in range(1, 5):  # four slow bodies, the first the furthest behind
        r, w = await _open(port)
        w.write(b"POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 100000\r\n\r\nz")
        slow.append((r, w))
        await _until(lambda n=n: guard.open == n and not guard.idle)  # type: ignore[misc]
        await asyncio.sleep(0.01)
    reader, writer = await _open(port)
    writer.write(b"GET / HTTP/1.1\r\nhost: x\r\n\r\n")
    assert b"got 0" in await _response(reader)
    raw = await _until_closed(slow[0][0])
    assert raw.startswith(b"HTTP/1.1 408") and "server.max_connections" in _json_error(raw)["message"]
    assert guard.evicted == 1 and guard.refused == 0
    for _, w in [*slow, (reader, writer)]:
        w.close()


def test_the_soft_fd_limit_is_raised_to_the_hard_limit() -> None:
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard != resource.RLIM_INFINITY and hard < 512:
        pytest.skip("the hard fd limit is too low to lower the soft one under it")
    code = "from gateway.serving import raise_fd_limit; print(*raise_fd_limit())"
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (256, 512)),
    )
    assert out.stdout.split() == ["512", "512"]
