"""Graceful shutdown, bounded: how long open turns may still run after SIGTERM, and what a turn
cut by it is.

On SIGTERM uvicorn stops accepting connections and waits for the open requests at most
``server.shutdown_timeout_s`` seconds (its ``timeout_graceful_shutdown``, passed by
``turnstile serve``); then it cancels the request tasks still running. A turn ended by that
cancellation is *cut by shutdown*: it is recorded with status 503, stop reason ``aborted``, the
usage known so far and the error :class:`~gateway.errors.TurnCutByShutdown`, and its client
gets the gateway's last word in its own dialect (:func:`answer_cut`): a 503 when no answer had
begun, else a final ``StreamError`` event ending the stream (the streaming contract: after the
first byte, failures are a final error event). A client that goes
away mid-stream also ends its turn by a cancellation — the one
:class:`~gateway.sse_response.EventStream` requests with the message :data:`CLIENT_GONE` — and
that turn is recorded as 499, as before.

The rows of cut turns are written before the transcript closes: :class:`OpenTurns` counts the
turns in flight (the server's front middleware enters and leaves it around each turn), and the
lifespan's shutdown waits for that count to reach zero (bounded) before closing the transcript.
"""

from __future__ import annotations

import asyncio

from gateway.errors import TurnCutByShutdown

CLIENT_GONE = "turnstile: the client went away"
"""The message of the cancellation that ends a stream whose client disconnected."""


def cut_by_shutdown(exc: asyncio.CancelledError) -> TurnCutByShutdown | None:
    """The error to record for a turn that ``exc`` ended: :class:`TurnCutByShutdown` when the
    server cancelled it, None when its client went away (:data:`CLIENT_GONE`)."""
    if exc.args and exc.args[0] == CLIENT_GONE:
        return None
    return TurnCutByShutdown()


def answer_cut(exc: asyncio.CancelledError) -> TurnCutByShutdown | None:
    """For the server's last word on a turn the shutdown bound cut (a 503, or a final error
    event of a stream, in the client's dialect): the error to answer with, the cancellation
    absorbed (``Task.uncancel``) so that the answer can still be sent. None, and nothing
    absorbed, when the client went away (then the caller re-raises)."""
    cut = cut_by_shutdown(exc)
    if cut is not None:
        task = asyncio.current_task()
        if task is not None:
            task.uncancel()
    return cut


class OpenTurns:
    """How many turns are in flight (``count``): each one from its request's arrival until its
    answer was sent or cut, its transcript row queued and committed (or the commit bound passed)."""

    def __init__(self) -> None:
        self.count = 0
        self._drained: asyncio.Event | None = None

    def enter(self) -> None:
        """A turn started."""
        self.count += 1

    def leave(self) -> None:
        """A turn finished (its row recorded)."""
        self.count -= 1
        if self._drained is not None and self.count <= 0:
            self._drained.set()

    async def drained(self, timeout_s: float) -> bool:
        """Wait until no turn is in flight, at most ``timeout_s`` seconds; False when some still
        were after that."""
        if self.count <= 0:
            return True
        self._drained = asyncio.Event()
        try:
            await asyncio.wait_for(self._drained.wait(), timeout_s)
        except TimeoutError:
            return False
        return True


__all__ = ["CLIENT_GONE", "OpenTurns", "answer_cut", "cut_by_shutdown"]
