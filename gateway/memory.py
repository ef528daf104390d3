"""Giving freed heap memory back to the operating system after large requests.

CPython returns its small-object arenas when they empty, but strings, lists and buffers over
512 bytes come from the C allocator; glibc keeps freed blocks inside its heaps (one per thread
that allocated: the worker threads that parse large bodies have their own) and gives a heap's
pages back only from its top. After a burst of large requests or answers the process stays
hundreds of MB larger than it needs (measured: a 20 MB request of 590,000 messages left it
1.1 GB larger; 16 answers cut at a few MB each, several hundred MB).

:class:`MemoryReturn` calls glibc's ``malloc_trim(0)``, which releases the free pages of every
heap, once after a quiet moment that follows work over a size threshold: it is requested with
:meth:`MemoryReturn.note` (cheap: a flag and, at most once per delay, a timer), and runs in a
worker thread so the event loop does not wait for it. Off glibc (musl, macOS) it does nothing.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
from collections.abc import Callable

import structlog

log = structlog.get_logger("turnstile.memory")


def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``, or None where there is none."""
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        libc = ctypes.CDLL(name)
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim  # type: ignore[no-any-return]


class MemoryReturn:
    """Debounced ``malloc_trim(0)`` after large work (one per process, on ``app.state``).

    ``delay_s``: seconds after the last :meth:`note` before the trim runs (the objects of the
    request that asked are freed by then: its answer sent, its transcript row written)."""

    def __init__(self, delay_s: float = 1.0) -> None:
        self.delay_s = delay_s
        self._trim = _malloc_trim()
        self._timer: asyncio.TimerHandle | None = None
        self._running = False
        self.trims = 0

    @property
    def available(self) -> bool:
        """True when the C library can give memory back (glibc)."""
        return self._trim is not None

    def note(self) -> None:
        """Large work happened: trim once things are quiet (a later note moves the trim on)."""
        if self._trim is None:
            return
        loop = asyncio.get_running_loop()
        if self._timer is not None:
            self._timer.cancel()
        self._timer = loop.call_later(self.delay_s, self._start)

    def _start(self) -> None:
        self._timer = None
        if self._running:  # one at a time; the running one frees what there is
            return
        self._running = True
        asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        try:
            assert self._trim is not None
            await asyncio.to_thread(self._trim, 0)
            self.trims += 1
        except Exception:  # never fatal: memory is only not given back
            log.exception("malloc_trim_failed")
        finally:
            self._running = False

    def close(self) -> None:
        """Cancel a pending trim (shutdown)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
