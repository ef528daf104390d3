"""Giving freed heap memory back to the operating system after large requests.

CPython returns its small-object arenas when they empty, but strings, lists and buffers over
512 bytes come from the C allocator; glibc keeps freed blocks inside its heaps (one per thread
that allocated: the worker threads that parse large bodies have their own) and gives a heap's
pages back only from its top. After a burst of large requests or answers the process stays
hundreds of MB larger than it needs (measured: a 20 MB request of 590,000 messages left it
1.1 GB larger; 16 answers cut at a few MB each, several hundred MB).

:class:`MemoryReturn` calls glibc's ``malloc_trim(0)``, which releases the free pages of every
heap, after a quiet moment that follows work over a size threshold (and once more a little
later): it is requested with
:meth:`MemoryReturn.note` (cheap: a flag and, at most once per delay, a timer), and runs in a
worker thread so the event loop does not wait for it. Off glibc (musl, macOS) it does nothing.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import gc
import os
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


def resident_mb() -> float | None:
    """This process's resident memory (MB, from ``/proc/self/statm``), None off Linux."""
    try:
        with open("/proc/self/statm", "rb") as f:
            pages = int(f.read().split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return round(pages * os.sysconf("SC_PAGE_SIZE") / 1e6, 1)


class MemoryReturn:
    """Debounced ``malloc_trim(0)`` after large work (one per process, on ``app.state``).

    ``delay_s``: seconds after the last :meth:`note` before the trim runs (the request that
    asked has usually finished by then); ``again_s``: seconds after that for one more trim, for
    what is freed later (its transcript row, written in a batch)."""

    def __init__(self, delay_s: float = 1.0, again_s: float = 5.0) -> None:
        self.delay_s = delay_s
        self.again_s = again_s
        self._trim = _malloc_trim()
        self._timer: asyncio.TimerHandle | None = None
        self._running = False
        self._again = False
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
        self._again = True
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
            before = resident_mb()
            # What a failed turn held can sit in a reference cycle (an exception's traceback ->
            # its frames -> their locals, e.g. the chunks of an answer cut at the cap): the
            # young-generation threshold is high (gateway.server.GC_YOUNG_THRESHOLD) and such
            # cycles wait for a full collection. One now (milliseconds, once per burst), then
            # the C heap.
            gc.collect()
            await asyncio.to_thread(self._trim, 0)
            self.trims += 1
            log.info("memory_returned", rss_mb_before=before, rss_mb_after=resident_mb())
        except Exception:  # never fatal: memory is only not given back
            log.exception("malloc_trim_failed")
        finally:
            self._running = False
        if self._again and self._timer is None:  # once more, for what is freed later (transcript rows)
            self._again = False
            self._timer = asyncio.get_running_loop().call_later(self.again_s, self._start)

    def close(self) -> None:
        """Cancel a pending trim (shutdown)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
