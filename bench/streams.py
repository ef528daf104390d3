"""The stream ceiling: how many concurrent SSE streams a server relays without a stall.

The upstream (nginx, :data:`bench.bodies.PACED_CHUNKS` chunks one every
:data:`bench.bodies.PACED_GAP_S`) paces every answer. ``N`` clients each keep one stream open
at all times over one keep-alive connection — a new request as soon as the last answer ended —
started evenly over one answer's length, so that requests arrive at a steady rate instead of in
one burst. Each arrival of body bytes is timestamped (:class:`_Stream`, a bare
:class:`asyncio.Protocol` over uvloop: a few microseconds a chunk, so the client itself stays
far below what it measures). A stream's *gap* is the longest time between two arrivals after
its first byte; what a server *adds* is that gap less the upstream's own pacing gap, or its
time to first byte (the upstream's first chunk is immediate). A level passes when every
stream of the measuring window ended well, every client completed one at least, and no added
wait exceeded the stall bound (100 ms). :func:`ceiling` ramps ``N`` (64 → 2,048 by doubling) and stops at the
first level that fails.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

from bench.bodies import PACED_CHUNKS, PACED_GAP_S

STALL_MS = 100.0
"""An added chunk gap above this (ms) is a stall."""

LEVELS = (64, 128, 256, 512, 1024, 2048)


@dataclass
class Level:
    """One ramp level: ``streams`` concurrent; what the measuring window saw."""

    streams: int
    completed: int = 0
    clients_done: int = 0
    """Clients that completed one measured stream at least."""
    failed: int = 0
    gaps_ms: list[float] = field(default_factory=list)
    ttfb_ms: list[float] = field(default_factory=list)
    note: str = ""

    def added_max_ms(self) -> float:
        """The longest wait a server added (ms): the largest gap between chunks less the
        upstream's pacing gap, or the longest time to first byte (the upstream sends its first
        chunk at once), whichever is larger; 0 when none."""
        gap = max(self.gaps_ms, default=0.0) - PACED_GAP_S * 1000
        return max(0.0, gap, max(self.ttfb_ms, default=0.0))

    def passed(self) -> bool:
        """No stream failed, every client completed at least one measured stream (a client
        still waiting for its first byte has stalled), and no added wait above the bound."""
        return self.clients_done == self.streams and self.failed == 0 and self.added_max_ms() <= STALL_MS


class _Stream(asyncio.Protocol):
    """One keep-alive client connection sending the same streamed request again and again."""

    def __init__(self, request: bytes, on_done: asyncio.Queue[tuple[str, float, float, int]]) -> None:
        self.request = request
        self.done = on_done
        self.transport: asyncio.Transport | None = None
        self.sent = self.first = self.last = 0.0
        self.max_gap = 0.0
        self.tail = b""
        self.bytes = 0
        self.status_ok = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def send(self) -> None:
        assert self.transport is not None
        self.sent, self.first, self.max_gap, self.tail, self.bytes = time.perf_counter(), 0.0, 0.0, b"", 0
        self.status_ok = False
        self.transport.write(self.request)

    def data_received(self, data: bytes) -> None:
        now = time.perf_counter()
        if self.first == 0.0:
            self.first = now
            self.status_ok = data.startswith(b"HTTP/1.1 200")
        elif now - self.last > self.max_gap:
            self.max_gap = now - self.last
        self.last = now
        self.bytes += len(data)
        self.tail = (self.tail + data)[-64:]
        if self.tail.endswith(b"0\r\n\r\n"):  # the chunked body's last chunk
            ok = self.status_ok and b"[DONE]" in self.tail
            self.done.put_nowait(("ok" if ok else "bad", self.first - self.sent, self.max_gap, self.bytes))

    def connection_lost(self, exc: Exception | None) -> None:
        self.done.put_nowait(("lost", 0.0, 0.0, self.bytes))


async def _client(
    host: str,
    port: int,
    request: bytes,
    start_at: float,
    measure_from: float,
    stop_at: float,
    level: Level,
) -> None:
    loop = asyncio.get_running_loop()
    await asyncio.sleep(max(0.0, start_at - time.perf_counter()))
    done: asyncio.Queue[tuple[str, float, float, int]] = asyncio.Queue()
    try:
        transport, proto = await loop.create_connection(lambda: _Stream(request, done), host, port)
    except OSError as err:
        level.failed += 1
        level.note = level.note or f"connect: {err}"
        return
    finished_one = False
    try:
        while time.perf_counter() < stop_at:
            started = time.perf_counter()
            proto.send()
            limit = PACED_CHUNKS * PACED_GAP_S + 30.0
            try:
                status, ttfb, gap, _ = await asyncio.wait_for(done.get(), limit)
            except TimeoutError:
                status, ttfb, gap = "timeout", 0.0, 0.0
            if status != "ok":  # a warm-up stream that failed is a failure too
                level.failed += 1
                level.note = level.note or status
                break
            if started < measure_from:
                continue
            if not finished_one:
                finished_one = True
                level.clients_done += 1
            level.completed += 1
            level.gaps_ms.append(gap * 1000)
            level.ttfb_ms.append(ttfb * 1000)
    finally:
        transport.close()


def _request(host: str, port: int, path: str, body: bytes, headers: dict[str, str]) -> bytes:
    head = [f"POST {path} HTTP/1.1", f"host: {host}:{port}", f"content-length: {len(body)}"]
    head += [f"{k}: {v}" for k, v in headers.items()]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


async def run_level(
    host: str, port: int, path: str, body: bytes, headers: dict[str, str], streams: int
) -> Level:
    """``streams`` concurrent streams: start them over one answer's length, measure the streams
    that start during the next two answers' lengths, then stop. Bounded: every stream waits at
    most its answer's length + 30 s."""
    answer_s = PACED_CHUNKS * PACED_GAP_S
    level = Level(streams)
    request = _request(host, port, path, body, headers)
    t0 = time.perf_counter()
    measure_from, stop_at = t0 + answer_s, t0 + 3 * answer_s
    await asyncio.gather(
        *(
            _client(host, port, request, t0 + answer_s * i / streams, measure_from, stop_at, level)
            for i in range(streams)
        )
    )
    return level


async def ceiling(
    host: str,
    port: int,
    path: str,
    body: bytes,
    headers: dict[str, str],
    levels: tuple[int, ...] = LEVELS,
    log: bool = True,
) -> list[Level]:
    """Every level of ``levels`` in turn until one fails (that one included)."""
    out = []
    for n in levels:
        lv = await run_level(host, port, path, body, headers, n)
        out.append(lv)
        if log:
            print(
                f"    streams {n:5}: completed {lv.completed:5} failed {lv.failed:3} "
                f"added max gap {lv.added_max_ms():8.1f} ms  {lv.note}",
                flush=True,
            )
        if not lv.passed():
            break
    return out


def highest_passed(levels: list[Level]) -> int:
    """The largest stream count that passed (0: none did)."""
    return max((lv.streams for lv in levels if lv.passed()), default=0)
