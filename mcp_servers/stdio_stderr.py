"""A stdio MCP server's standard error, into the gateway's log with bounds.

A server is code from outside and its stderr is its own business: many servers log there, a
hostile or broken one may write gigabytes of it or print text shaped like the gateway's own log
lines. The stdio transport (:mod:`mcp_servers.stdio_transport`) gives the server (and, through
the launcher, every descendant of it) a pipe as stderr, never the gateway's own stderr, and
:func:`drain_stderr` reads that pipe for as long as it is open:

* **one line, one event.** Each line becomes one structured log event ``mcp_server_stderr``
  (level info) with ``server``, ``line`` (the text as a string value: the log renderer escapes
  it, so it can never end the gateway's log line or forge another), ``bytes`` (the line's full
  size) and ``omitted_bytes``. Bytes that are not UTF-8 are replaced, control characters other
  than tab are written as ``\\xNN``; empty lines are skipped.
* **bounded length.** Only the first ``line_bytes`` of a line are kept (``omitted_bytes``
  says how many were cut); a longer line is never held whole (at most ``line_bytes`` plus a few
  KiB of it are in memory, :class:`mcp_servers.stdio_framing.LineFramer`).
* **bounded rate.** Two token buckets per server connection: ``lines_per_s`` lines and
  ``bytes_per_s`` bytes of kept text, each holding at most one second's worth (the largest
  burst). A line that finds either bucket short is counted and dropped, not logged; at most
  once every :data:`DROP_SUMMARY_S` seconds, and when the pipe closes, one event
  ``mcp_server_stderr_dropped`` (level warning) says how many ``lines`` and ``bytes`` were
  dropped since the last one. So a server flooding stderr costs the log about
  ``bytes_per_s`` plus one summary per interval, whatever it writes.
* **never blocks the server.** The pipe is read as fast as it fills, whether lines are logged
  or dropped, so a server writing stderr never waits on the gateway's log.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anyio
import structlog
from anyio.abc import ByteReceiveStream

from mcp_servers.config import McpServerSpec
from mcp_servers.stdio_framing import LineFramer, Oversize

log = structlog.get_logger("turnstile.mcp.stderr")

DROP_SUMMARY_S = 10.0
"""At most one ``mcp_server_stderr_dropped`` event per server connection in this many seconds."""
_READ_BYTES = 256 * 1024
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")


@dataclass(frozen=True)
class StderrLimits:
    """What one server's stderr may put in the log: ``line_bytes`` (bytes kept of one line),
    ``lines_per_s`` and ``bytes_per_s`` (lines and kept bytes logged per second, each with a
    burst of one second's worth; 0 logs nothing, every line is counted as dropped)."""

    line_bytes: int
    lines_per_s: float
    bytes_per_s: float

    @classmethod
    def of(cls, spec: McpServerSpec) -> StderrLimits:
        """The limits a server's configuration sets (``stderr_*``)."""
        return cls(spec.stderr_line_bytes, spec.stderr_lines_per_s, spec.stderr_bytes_per_s)


class _Bucket:
    """A token bucket: ``rate`` tokens a second, at most ``rate`` held (one second's burst)."""

    __slots__ = ("_at", "_rate", "_tokens")

    def __init__(self, rate: float, now: float) -> None:
        self._rate = rate
        self._tokens = rate
        self._at = now

    def has(self, cost: float, now: float) -> bool:
        """Refill for the time since the last call; whether ``cost`` tokens are there."""
        self._tokens = min(self._rate, self._tokens + (now - self._at) * self._rate)
        self._at = now
        return cost <= self._tokens

    def spend(self, cost: float) -> None:
        self._tokens -= cost


def _shown(raw: bytes) -> str:
    text = raw.decode("utf-8", "replace").removesuffix("\r")
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


class StderrLog:
    """The log events of one server connection's stderr (see the module docstring).

    :meth:`feed` takes each chunk read from the pipe; :meth:`tick` writes a due drop summary
    when nothing is read; :meth:`close` ends the last unterminated line and writes the summary
    of what is still uncounted. ``clock`` is monotonic seconds (injectable for tests).
    """

    def __init__(
        self, server_id: str, limits: StderrLimits, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.server_id = server_id
        self.limits = limits
        self._clock = clock
        self._framer = LineFramer(limits.line_bytes)
        now = clock()
        self._lines = _Bucket(limits.lines_per_s, now)
        self._bytes = _Bucket(limits.bytes_per_s, now)
        self.logged = 0
        """Lines logged so far."""
        self.dropped_lines = 0
        """Lines dropped since the last summary."""
        self.dropped_bytes = 0
        """Bytes of those lines (their full size)."""
        self._drops_since: float | None = None

    def feed(self, chunk: bytes) -> None:
        """Log (or count as dropped) every line ``chunk`` completes."""
        for frame in self._framer.feed(chunk):
            self._line(frame)
        self.tick()

    def tick(self) -> None:
        """Write the drop summary when one is due (:data:`DROP_SUMMARY_S` after the first drop
        since the last summary)."""
        if self._drops_since is not None and self._clock() - self._drops_since >= DROP_SUMMARY_S:
            self._summary()

    def summary_due_in(self) -> float | None:
        """Seconds until a drop summary is due (None: nothing was dropped since the last)."""
        if self._drops_since is None:
            return None
        return max(0.0, DROP_SUMMARY_S - (self._clock() - self._drops_since))

    def close(self) -> None:
        """The pipe closed: log the unterminated last line, then summarise what was dropped."""
        for frame in self._framer.feed(b"\n"):
            self._line(frame)
        if self._drops_since is not None:
            self._summary()

    def _line(self, frame: bytes | Oversize) -> None:
        if isinstance(frame, Oversize):
            size, kept = frame.size, frame.head[: self.limits.line_bytes]
        else:
            size, kept = len(frame), frame
        now = self._clock()
        fits = self._lines.has(1, now) & self._bytes.has(len(kept), now)  # both refilled
        if fits:
            self._lines.spend(1)
            self._bytes.spend(len(kept))
            self.logged += 1
            log.info(
                "mcp_server_stderr",
                server=self.server_id,
                line=_shown(kept),
                bytes=size,
                omitted_bytes=size - len(kept),
            )
            return
        self.dropped_lines += 1
        self.dropped_bytes += size
        if self._drops_since is None:
            self._drops_since = now

    def _summary(self) -> None:
        since = self._drops_since if self._drops_since is not None else self._clock()
        log.warning(
            "mcp_server_stderr_dropped",
            server=self.server_id,
            lines=self.dropped_lines,
            bytes=self.dropped_bytes,
            seconds=round(self._clock() - since, 3),
            lines_per_s=self.limits.lines_per_s,
            bytes_per_s=self.limits.bytes_per_s,
        )
        self.dropped_lines = self.dropped_bytes = 0
        self._drops_since = None


async def drain_stderr(stream: ByteReceiveStream, sink: StderrLog, done: anyio.Event | None = None) -> None:
    """Read ``stream`` (the server's stderr pipe) into ``sink`` until it ends (every holder of
    its write end exited) or the task is cancelled; then :meth:`StderrLog.close` and set
    ``done``. Never raises for the pipe's faults."""
    try:
        while True:
            due = sink.summary_due_in()
            chunk: Any = None
            with anyio.move_on_after(due if due is not None else float("inf")):
                try:
                    chunk = await stream.receive(_READ_BYTES)
                except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                    break
            if chunk is None:
                sink.tick()
            else:
                sink.feed(chunk)
    finally:
        sink.close()
        if done is not None:
            done.set()
