"""One thread that runs a store's blocking calls (SQLite) in order for an event loop: the
transcript writer's and the workers' shared limit counters' (:mod:`gateway.limits.sqlite_backend`).
"""

from __future__ import annotations

import asyncio
import queue
import threading
from typing import Any


def _hand_over(future: asyncio.Future[Any], value: Any, error: BaseException | None) -> None:
    if not future.done():  # the awaiting task may have been cancelled meanwhile
        if error is None:
            future.set_result(value)
        else:
            future.set_exception(error)


class StoreThread:
    """One thread that runs the store's blocking calls (SQLite), in order, and hands each outcome
    back to the event loop. Costs the loop a queue put and one callback per call, where
    ``asyncio.to_thread`` costs a thread-pool submission, a semaphore and two chained futures
    (about 600 bytecodes a call, ``bench.inproc --opcodes``) — once per writer cycle, and with
    group commit a lone turn is a cycle."""

    def __init__(self, loop: asyncio.AbstractEventLoop, name: str = "store") -> None:
        self._loop = loop
        self._jobs: queue.SimpleQueue[tuple[Any, tuple[Any, ...], asyncio.Future[Any]] | None] = (
            queue.SimpleQueue()
        )
        threading.Thread(target=self._main, name=name, daemon=True).start()

    def run(self, fn: Any, *args: Any) -> asyncio.Future[Any]:
        """``fn(*args)`` in the thread; the future gets its result or exception."""
        future = self._loop.create_future()
        self._jobs.put((fn, args, future))
        return future

    def stop(self) -> None:
        """End the thread once the calls already handed to it have run."""
        self._jobs.put(None)

    def _main(self) -> None:
        hand_back = self._loop.call_soon_threadsafe
        while (job := self._jobs.get()) is not None:
            fn, args, future = job
            outcome: tuple[Any, BaseException | None]
            try:
                outcome = (fn(*args), None)
            except BaseException as exc:  # handed to the awaiting task, which decides
                outcome = (None, exc)
            try:
                hand_back(_hand_over, future, *outcome)
            except RuntimeError:  # the loop is closed: nobody is waiting any more
                return
