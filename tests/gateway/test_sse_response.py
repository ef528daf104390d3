"""gateway.sse_response.EventStream: Starlette's StreamingResponse messages, the client's
disconnect cancels the body and ends the call normally, other cancellations propagate."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from starlette.responses import StreamingResponse

from gateway.sse_response import EventStream

SCOPE: dict[str, Any] = {"type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"}}


async def _body(*chunks: bytes) -> AsyncIterator[bytes]:
    for chunk in chunks:
        yield chunk


def _never_disconnects() -> Any:
    async def receive() -> dict[str, Any]:
        await asyncio.Event().wait()
        return {"type": "http.disconnect"}

    return receive


async def _run(response: StreamingResponse, scope: dict[str, Any] = SCOPE) -> list[dict[str, Any]]:
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await response(scope, _never_disconnects(), send)
    return sent


async def test_the_messages_are_starlettes() -> None:
    headers = {"x-turnstile-request-id": "r1", "cache-control": "no-cache"}
    ours = await _run(EventStream(_body(b"a", b"bc"), media_type="text/event-stream", headers=headers))
    theirs = await _run(
        StreamingResponse(_body(b"a", b"bc"), media_type="text/event-stream", headers=headers)
    )
    assert ours == theirs
    assert [m.get("body") for m in ours] == [None, b"a", b"bc", b""]
    assert (b"content-type", b"text/event-stream; charset=utf-8") in ours[0]["headers"]


async def test_a_finished_stream_leaves_no_cancellation_and_no_task_behind() -> None:
    before = asyncio.all_tasks()
    await _run(EventStream(_body(b"a"), media_type="text/event-stream"))
    task = asyncio.current_task()
    assert task is not None and task.cancelling() == 0
    await asyncio.sleep(0)  # the watcher ends on its cancellation
    assert asyncio.all_tasks() == before


async def test_a_client_disconnect_cancels_the_body_and_ends_the_call_normally() -> None:
    gone = asyncio.Event()
    waiting = asyncio.Event()
    closed: list[str] = []

    async def body() -> AsyncIterator[bytes]:
        try:
            yield b"first"
            waiting.set()
            await asyncio.Event().wait()  # an upstream that never sends more
            yield b"never"
        except asyncio.CancelledError:
            closed.append("cancelled")
            raise
        finally:
            await asyncio.sleep(0)  # awaits in cleanup still run (the pipeline records the turn)
            closed.append("finally")

    async def receive() -> dict[str, Any]:
        await gone.wait()
        return {"type": "http.disconnect"}

    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def handler() -> int:
        await EventStream(body(), media_type="text/event-stream")(SCOPE, receive, send)
        task = asyncio.current_task()
        assert task is not None
        await asyncio.sleep(0)  # not cancelled again
        return task.cancelling()

    call = asyncio.create_task(handler())
    await waiting.wait()
    gone.set()
    assert await call == 0
    assert closed == ["cancelled", "finally"]
    assert [m.get("body") for m in sent] == [None, b"first"]  # no end of body after a disconnect


async def test_a_cancellation_from_outside_propagates() -> None:
    started = asyncio.Event()

    async def body() -> AsyncIterator[bytes]:
        started.set()
        await asyncio.Event().wait()
        yield b"never"

    call = asyncio.create_task(_run(EventStream(body(), media_type="text/event-stream")))
    await started.wait()
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call


async def test_asgi_spec_2_4_takes_starlettes_own_path() -> None:
    scope = {"type": "http", "asgi": {"version": "3.0", "spec_version": "2.4"}}
    sent = await _run(EventStream(_body(b"x"), media_type="text/event-stream"), scope)
    assert [m.get("body") for m in sent] == [None, b"x", b""]
