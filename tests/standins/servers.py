"""Running the real servers for the wire tests: one background thread with an asyncio loop
hosts the upstream stand-in and the real gateway (``uvicorn.Server`` over
``gateway.server.create_app``), each on 127.0.0.1 at a random free port. Tests are plain
synchronous functions that drive the gateway with the official ``openai``/``anthropic``
SDK clients.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class LoopThread:
    """An asyncio event loop running in a daemon thread."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name="wire-test-loop", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def call(self, coro: Coroutine[Any, Any, T], timeout: float = 30.0) -> T:
        """Run ``coro`` in the loop and wait (bounded) for its result."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def close(self) -> None:
        """Stop the loop and join the thread."""
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)


class GatewayServer:
    """The real gateway app served by uvicorn inside :class:`LoopThread`'s loop."""

    def __init__(self, app: Any, options: dict[str, Any] | None = None) -> None:
        """``options``: uvicorn options in place of the guarded protocol without proxy headers
        (``gateway.serving.uvicorn_options`` gives exactly what `turnstile serve` passes)."""
        self.app = app
        self.options = options
        self.url = ""
        self._server: Any = None
        self._task: asyncio.Task[None] | None = None

    async def start(self, timeout_s: float = 20.0) -> None:
        """Bind 127.0.0.1:<random>, run the app's lifespan and wait until it serves."""
        import uvicorn

        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        from gateway.serving import GuardedHttpToolsProtocol

        # as `turnstile serve` runs it: the guarded protocol, uvicorn's proxy headers off
        options = self.options or {"http": GuardedHttpToolsProtocol, "proxy_headers": False}
        config = uvicorn.Config(
            self.app,
            lifespan="on",
            log_level="warning",
            access_log=False,
            timeout_graceful_shutdown=2,
            ws="none",
            **options,
        )
        self._server = uvicorn.Server(config)
        self._task = asyncio.get_running_loop().create_task(self._server.serve(sockets=[sock]))
        deadline = time.monotonic() + timeout_s
        while not self._server.started:
            if self._task.done():
                self._task.result()  # raises the start-up error
                raise RuntimeError("gateway server exited during start-up")
            if time.monotonic() > deadline:
                raise TimeoutError("gateway server did not start")
            await asyncio.sleep(0.01)
        self.url = f"http://127.0.0.1:{port}"

    async def stop(self) -> None:
        """Ask uvicorn to exit (runs the lifespan shutdown: transcript drained) and wait."""
        if self._server is not None and self._task is not None:
            self._server.should_exit = True
            await asyncio.wait_for(self._task, timeout=15)
