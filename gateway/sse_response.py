"""The HTTP response of a streaming turn: Starlette's ``StreamingResponse`` without its anyio
task group.

Under an ASGI server older than spec 2.4 (uvicorn announces 2.3), Starlette runs the body in an
anyio task group beside a task that waits for ``http.disconnect``, and whichever ends first
cancels the other. Creating and tearing down that group (cancel scopes, task handles, async
library detection) cost more CPU per stream than relaying fifty events. :class:`EventStream`
keeps the behaviour with plain asyncio: the body is sent from the request's own task, and one
helper task waits for ``http.disconnect`` and, if the client goes away first, cancels the
request's task; that cancellation is absorbed here, as the task group absorbed it, so the
request ends normally. The body iterator sees the same ``CancelledError`` at the point where it
was waiting (with the message :data:`gateway.shutdown.CLIENT_GONE`), and its ``finally`` blocks
run (the pipeline records the turn as 499; any other cancellation is the server's graceful-shutdown
bound cutting the turn, recorded as such). One
difference, on purpose: the cancellation is delivered once, so awaits in those ``finally``
blocks complete (anyio cancels every await again until the scope is left).

Headers, status and the ASGI messages sent are exactly Starlette's (this is a subclass that only
replaces ``__call__``); under ASGI spec 2.4 or later, and for websockets, Starlette's own
``__call__`` runs.
"""

from __future__ import annotations

import asyncio

from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from gateway.shutdown import CLIENT_GONE


class EventStream(StreamingResponse):
    """A :class:`StreamingResponse` (same constructor) whose disconnect watch needs no anyio
    task group (see module docstring). Raises what the body iterator raises; a client
    disconnect ends the call normally."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        spec = scope.get("asgi", {}).get("spec_version", "2.0")
        if scope["type"] != "http" or tuple(map(int, spec.split("."))) >= (2, 4):
            await super().__call__(scope, receive, send)
            return
        task = asyncio.current_task()
        assert task is not None
        gone = False
        failure: list[BaseException] = []

        async def watch() -> None:
            nonlocal gone
            try:
                while (await receive())["type"] != "http.disconnect":
                    pass
            except Exception as exc:  # handed to the request's task, as the task group would
                failure.append(exc)
            gone = True
            task.cancel(CLIENT_GONE)  # the pipeline records such a turn as 499 (gateway.shutdown)

        watcher = asyncio.get_running_loop().create_task(watch())
        try:
            await self.stream_response(send)
        except asyncio.CancelledError:
            if not gone:
                raise  # cancelled from outside (server shutdown): not ours to absorb
            if failure:
                raise failure[0] from None
        finally:
            watcher.cancel()  # it cannot cancel this task any more after this line
            if gone:
                task.uncancel()  # the one cancellation the watcher requested
        if self.background is not None:
            await self.background()
