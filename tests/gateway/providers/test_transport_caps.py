"""The answer cap (gateway/providers/transport.py) against a local aiohttp server that answers
more than it: a whole body (chunked, declared, gzip-compressed) or a stream is refused while it
is read, naming the cap and the deployment, and nothing past the cap is read."""

from __future__ import annotations

import gzip
from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from gateway.config import TimeoutConfig
from gateway.errors import UpstreamError, UpstreamTooLarge
from gateway.providers import openai_chat, transport
from gateway.providers.wire import UpstreamRequest

CAP = 256 * 1024
CHUNK = b"x" * 16_384
TOTAL_CHUNKS = 640  # 10 MiB, far past the cap
T = TimeoutConfig(connect=5, first_byte=10, between_chunks=10, total=30)


@pytest.fixture
async def big_server() -> AsyncIterator[tuple[str, dict[str, int]]]:
    """``POST /chunked``, ``/declared``, ``/gzip``, ``/stream`` and ``/error`` answer 10 MiB
    (``/gzip`` 10 MiB once decompressed, a few kB on the wire); ``sent`` counts the chunks
    each handler managed to write before the client stopped reading."""
    sent: dict[str, int] = {}

    async def answer(request: web.Request) -> web.StreamResponse:
        kind = request.match_info["kind"].rsplit("/", 1)[-1]  # a wire module's path: chunked
        sent[kind] = 0
        if kind == "gzip":
            body = gzip.compress(b'{"x":"' + CHUNK * TOTAL_CHUNKS + b'"}')
            return web.Response(
                body=body, headers={"content-type": "application/json", "content-encoding": "gzip"}
            )
        kind = kind if kind in ("declared", "stream", "error") else "chunked"
        sent[kind] = 0
        status = 500 if kind == "error" else 200
        ctype = "text/event-stream" if kind == "stream" else "application/json"
        resp = web.StreamResponse(status=status, headers={"content-type": ctype})
        if kind == "declared":
            resp.content_length = len(CHUNK) * TOTAL_CHUNKS
        await resp.prepare(request)
        try:
            for _ in range(TOTAL_CHUNKS):
                if kind == "stream":
                    await resp.write(
                        b'data: {"choices":[{"index":0,"delta":{"content":"' + CHUNK + b'"}}]}\n\n'
                    )
                else:
                    await resp.write(CHUNK)
                sent[kind] += 1
        except (ConnectionError, RuntimeError):
            pass
        return resp

    app = web.Application()
    app.router.add_post("/{kind:.+}", answer)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    yield f"http://127.0.0.1:{port}", sent
    await runner.cleanup()


@pytest.mark.parametrize("kind", ["chunked", "declared", "gzip"])
async def test_a_whole_body_past_the_cap_is_refused_naming_the_cap_and_the_deployment(
    big_server: tuple[str, dict[str, int]], kind: str
) -> None:
    url, sent = big_server
    up = UpstreamRequest(url=f"{url}/{kind}", headers={}, body=b"{}", stream=False)
    large: list[int] = []
    session = transport.make_session()
    try:
        with pytest.raises(UpstreamTooLarge) as exc:
            await transport.send(session, up, T, openai_chat, "dep-x", CAP, lambda: large.append(1))
    finally:
        await session.close()
    err = exc.value
    assert err.status == 502 and err.deployment == "dep-x" and err.limit_bytes == CAP
    assert f"over the cap of {CAP} bytes (server.max_response_bytes)" in err.message
    assert "'dep-x'" in err.message
    if kind == "declared":
        assert "declares 10485760 bytes (content-length)" in err.message
    else:
        # stopped within a read of the cap (a decompressed read can hold a few 256 KiB pieces)
        assert CAP < err.read_bytes <= CAP + 1024 * 1024
    assert large == [1]
    assert sent.get(kind, 0) < TOTAL_CHUNKS or kind == "gzip"


async def test_a_stream_past_the_cap_yields_its_events_then_raises(
    big_server: tuple[str, dict[str, int]],
) -> None:
    url, sent = big_server
    up = UpstreamRequest(url=f"{url}/stream", headers={}, body=b"{}", stream=True)
    events = 0
    session = transport.make_session()
    try:
        with pytest.raises(UpstreamTooLarge) as exc:
            async for batch in transport.send_stream_reads(session, up, T, openai_chat, "dep-s", CAP):
                events += len(batch)
    finally:
        await session.close()
    assert events >= 1, "what arrived below the cap is handed on"
    assert exc.value.read_bytes > CAP and "'dep-s'" in exc.value.message
    assert sent["stream"] < TOTAL_CHUNKS


async def test_an_error_body_is_read_only_to_its_head(big_server: tuple[str, dict[str, int]]) -> None:
    url, sent = big_server
    up = UpstreamRequest(url=f"{url}/error", headers={}, body=b"{}", stream=False)
    session = transport.make_session()
    try:
        with pytest.raises(UpstreamError) as exc:
            await transport.send(session, up, T, openai_chat, "dep-e", CAP)
    finally:
        await session.close()
    assert exc.value.status == 500
    assert not isinstance(exc.value, UpstreamTooLarge)
    assert len(exc.value.body or "") <= 2000
    assert sent["error"] < TOTAL_CHUNKS


async def test_an_answer_under_the_cap_is_returned_whole(
    big_server: tuple[str, dict[str, int]],
) -> None:
    url, _ = big_server
    up = UpstreamRequest(url=f"{url}/chunked", headers={}, body=b"{}", stream=False)
    large: list[int] = []
    session = transport.make_session()
    try:
        body = await transport.send(
            session, up, T, openai_chat, "dep", 20 * 1024 * 1024, lambda: large.append(1)
        )
    finally:
        await session.close()
    assert body == CHUNK * TOTAL_CHUNKS
    assert large == [1]  # 10 MiB is large: the memory it took is given back afterwards


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
async def test_a_deployment_cap_wins_over_the_server_cap_and_is_named(
    big_server: tuple[str, dict[str, int]], stream: bool
) -> None:
    from gateway.config import Deployment
    from gateway.providers.base import HttpProvider
    from gateway.schema import Request, TextPart, UserMessage

    url, _ = big_server
    dep = Deployment(name="small", api="openai_chat", model="m", base_url=f"{url}/v1", max_response_bytes=CAP)
    request = Request(model="m", messages=[UserMessage(content=[TextPart(text="hi")])], stream=stream)
    session = transport.make_session()
    provider = HttpProvider(openai_chat, session, T, max_response_bytes=64 * 1024 * 1024)
    try:
        with pytest.raises(UpstreamTooLarge) as exc:
            if stream:
                async for _ in provider.stream_batches(request, dep, "key"):
                    pass
            else:
                await provider.complete(request, dep, "key")
    finally:
        await session.close()
    assert exc.value.limit_bytes == CAP
    assert f"over the cap of {CAP} bytes (max_response_bytes of deployment 'small')" in exc.value.message
