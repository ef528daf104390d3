"""Join stream frames that are ready at the same instant, without ever waiting for more.

A 50-chunk upstream answer often arrives in one network read; rendering it yields 50 SSE
frames at once. Sending each as its own ASGI message costs one socket write (a system call)
per frame and dominated the streaming profile (``bench/RESULTS.md``). :func:`coalesce` asks
its source for the next item and, when the item is available without suspending (no I/O to
wait for), appends it to the pending bytes; the moment the source would have to wait, the
pending bytes are handed on first. So nothing is ever held back waiting for data: a frame is
delayed only by the CPU time of the frames produced in the same instant after it — except the
first frame, which is always sent alone the moment it is ready (time to first byte does not
wait for the rest of a burst).

How: the source's ``__anext__`` coroutine is stepped once by hand. If it finishes, its value
was ready. If it suspends on a future, that future is handed to the running task exactly as
``await`` would (:func:`_resume`), after the pending bytes were sent.
"""

from __future__ import annotations

import types
from collections.abc import AsyncIterator, Coroutine, Generator
from typing import Any

import structlog

log = structlog.get_logger("turnstile.coalesce")


@types.coroutine
def _resume(coro: Coroutine[Any, Any, Any], pending: Any) -> Generator[Any, Any, Any]:
    """Finish ``coro``, which is suspended on ``pending`` (what it yielded), under the
    current task: the same protocol ``await coro`` follows (send results, throw exceptions
    such as cancellation into it)."""
    while True:
        try:
            sent = yield pending
        except GeneratorExit:
            coro.close()
            raise
        except BaseException as exc:
            try:
                pending = coro.throw(exc)
            except StopIteration as stop:
                return stop.value
        else:
            try:
                pending = coro.send(sent)
            except StopIteration as stop:
                return stop.value


async def coalesce(source: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """Yield the items of ``source`` joined: each yielded chunk is every item that was ready
    without waiting since the last one. Order and bytes are unchanged; the source's
    exceptions propagate after the bytes already produced are yielded."""
    buf: list[bytes] = []
    coro: Coroutine[Any, Any, bytes] | None = None
    first = True
    try:
        while True:
            if first and buf:  # the first frame goes out alone, at once: time to first byte
                first = False
                chunk = buf[0]
                buf = []
                yield chunk
            coro = source.__anext__()  # type: ignore[assignment]
            assert coro is not None
            try:
                pending = coro.send(None)
            except StopIteration as stop:  # ready without waiting
                coro = None
                buf.append(stop.value)
                continue
            except StopAsyncIteration:
                coro = None
                break
            except BaseException:
                coro = None
                if buf:
                    yield b"".join(buf)
                    buf = []
                raise
            if buf:  # the source must wait: send what is ready first
                chunk = b"".join(buf)
                buf = []
                yield chunk
            try:
                item = await _resume(coro, pending)
            except StopAsyncIteration:
                coro = None
                break
            coro = None
            buf.append(item)
        if buf:
            yield b"".join(buf)
    finally:
        if coro is not None:  # abandoned while the source was waiting (client went away)
            try:
                coro.close()
            except RuntimeError:
                log.warning("stream_source_not_closed_cleanly")
