"""The upstream HTTP hot path: one pooled aiohttp session, four timeouts, a byte cap, SSE framing.

Timeouts (seconds, from :class:`gateway.config.TimeoutConfig`): ``connect`` (TCP + TLS),
``first_byte`` (request sent -> response headers; for a whole-body call also the longest
stall while the body arrives), ``between_chunks`` (gap between two reads
of a stream body) and ``total`` (whole call). A cancelled caller (client disconnect) cancels
the read and releases the connection, which aborts the upstream request.

Size: an answer (a whole body, or every byte of a stream) is counted as it arrives, after
decompression, and refused with :class:`UpstreamTooLarge` the moment it passes its cap
(``max_bytes``); a declared ``content-length`` over the cap is refused before reading. Nothing
past the cap is read or held: the connection is dropped. An error body is read up to
:data:`ERROR_BODY_BYTES`. ``on_large`` (when given) is called after an answer of more than
:data:`LARGE_ANSWER_BYTES`, so the memory it took can be given back (:mod:`gateway.memory`).
"""

from __future__ import annotations

import asyncio
import email.utils
import time
from collections.abc import AsyncIterator, Callable
from contextvars import ContextVar

import aiohttp

from gateway.config import TimeoutConfig
from gateway.errors import UpstreamError, UpstreamProtocolError, UpstreamTimeout, UpstreamTooLarge
from gateway.providers.sse import SseDecoder
from gateway.providers.wire import UpstreamRequest, WireModule

DEFAULT_MAX_BYTES = 8 * 1024 * 1024
"""The default cap on one answer (``server.max_response_bytes``), bytes."""

ERROR_BODY_BYTES = 64 * 1024
"""Bytes of an upstream error body read for its message (the rest is dropped)."""

LARGE_ANSWER_BYTES = 256 * 1024
"""Answers larger than this (bytes) call ``on_large``."""

UPSTREAM_TRACEPARENT: ContextVar[str | None] = ContextVar("turnstile_upstream_traceparent", default=None)
"""The W3C ``traceparent`` sent with the upstream request being opened (the span of the
attempt: :mod:`gateway.tracing`), set by the attempt layer just before it calls the provider
and cleared once the request is out; None (tracing off): no header. Every upstream HTTP request
is opened by :func:`_open`, the one place that adds it."""


def make_session(limit: int = 0) -> aiohttp.ClientSession:
    """A pooled client session for all upstream calls (``limit`` 0 = no connection cap).

    Made once in the app lifespan and closed there; compressed stream bodies are accepted."""
    connector = aiohttp.TCPConnector(limit=limit, ttl_dns_cache=300, enable_cleanup_closed=True)
    return aiohttp.ClientSession(connector=connector, auto_decompress=True, trust_env=False)


class GapExpired(Exception):
    """Raised into a stream's read by :class:`GapWatch`: no data for ``between_chunks``."""


class TotalExpired(Exception):
    """Raised into a stream's read by :class:`GapWatch`: the ``total`` timeout passed."""


class GapWatch:
    """The ``between_chunks`` and ``total`` timeouts of one upstream stream with one timer per
    *gap* instead of one per read. Only time spent waiting for the upstream counts as a gap:
    :meth:`waiting` before each read notes the loop time, :meth:`read` after it ends the wait
    (time spent handing the data on to a slow client is not the upstream's silence). The timer,
    when it fires, re-arms itself at the earlier of the wait's start + ``between_s`` and
    ``deadline`` while that is ahead, else raises :class:`GapExpired` (or
    :class:`TotalExpired` past ``deadline``) into the pending read (``content.set_exception``).
    An ``asyncio.timeout`` around every read and aiohttp's own total timer cost the loop ~210
    bytecodes a chunk (``bench.inproc --opcodes --case openai-paced``: 74,214 bytecodes a
    42-read stream before, 64,846 after). ``deadline`` is in loop time (s)."""

    __slots__ = ("_between", "_content", "_deadline", "_handle", "_loop", "_reading", "_since")

    def __init__(self, between_s: float, content: aiohttp.StreamReader, deadline: float) -> None:
        self._loop = asyncio.get_running_loop()
        self._between = between_s
        self._content = content
        self._deadline = deadline
        self._since = self._loop.time()
        self._reading = False
        self._handle: asyncio.TimerHandle | None = self._loop.call_at(self._due(), self._check)

    def _due(self) -> float:
        return min(self._since + self._between, self._deadline)

    def waiting(self) -> None:
        """A read for upstream data starts now."""
        self._since = self._loop.time()
        self._reading = True

    def read(self) -> None:
        """The read ended (data, or the end of the stream)."""
        self._reading = False

    def _check(self) -> None:
        now = self._loop.time()
        if not self._reading and now < self._deadline:  # not waiting on the upstream
            self._handle = self._loop.call_at(min(now + self._between, self._deadline), self._check)
            return
        due = self._due()
        if now < due:
            self._handle = self._loop.call_at(due, self._check)
            return
        self._handle = None
        self._content.set_exception(TotalExpired() if now >= self._deadline else GapExpired())

    def cancel(self) -> None:
        """The stream ended: no more checks."""
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None


def parse_retry_after(value: str | None) -> float | None:
    """Seconds to wait from a ``retry-after`` header: delta-seconds or an HTTP date
    (RFC 9110 §10.2.3). Returns None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


_CLIENT_TIMEOUTS: dict[tuple[float, float, float, bool], aiohttp.ClientTimeout] = {}


def _timeout(t: TimeoutConfig, stream: bool) -> aiohttp.ClientTimeout:
    """aiohttp's timeouts for a call (one object per distinct setting, made once).

    A whole-body call bounds each read with ``sock_read = first_byte``: the wait for the
    response headers after the request is sent, and any stall while its body arrives. A stream
    has no ``sock_read`` and no aiohttp ``total`` (its gaps are ``between_chunks`` and its
    total ``total``, both kept by one :class:`GapWatch` timer in :func:`send_stream_reads`:
    aiohttp's total costs a timer context on every read); the wait for its headers is bounded
    in :func:`_open`."""
    key = (t.connect, t.first_byte, t.total, stream)
    timeout = _CLIENT_TIMEOUTS.get(key)
    if timeout is None:
        if len(_CLIENT_TIMEOUTS) > 1024:  # bounded: settings are few; tests make many
            _CLIENT_TIMEOUTS.clear()
        timeout = _CLIENT_TIMEOUTS[key] = aiohttp.ClientTimeout(
            total=None if stream else t.total,  # a stream's total is kept by its GapWatch
            connect=t.connect,
            sock_connect=t.connect,
            sock_read=None if stream else t.first_byte,
        )
    return timeout


def _headers_timeout(t: TimeoutConfig, deployment: str, stream: bool) -> UpstreamTimeout:
    if stream:  # one timer over connecting and waiting for the headers
        within = (
            f"within {t.connect + t.first_byte:.1f}s "
            f"(timeouts connect {t.connect:g}s + first_byte {t.first_byte:g}s)"
        )
    else:  # aiohttp bounds the two phases separately
        within = f"in time (timeouts connect {t.connect:g}s, then first_byte {t.first_byte:g}s)"
    return UpstreamTimeout(f"deployment {deployment!r}: no response headers {within}", deployment=deployment)


async def _open(
    session: aiohttp.ClientSession, up: UpstreamRequest, t: TimeoutConfig, deployment: str
) -> aiohttp.ClientResponse:
    headers = up.headers
    parent = UPSTREAM_TRACEPARENT.get()
    if parent is not None:
        headers = {**headers, "traceparent": parent}
    try:
        if not up.stream:  # connect and sock_read bound the wait for headers: no extra timer
            return await session.request(
                up.method, up.url, data=up.body, headers=headers, timeout=_timeout(t, False)
            )
        # asyncio.timeout, not wait_for: no extra task per call (Python 3.11's wait_for makes one).
        async with asyncio.timeout(min(t.connect + t.first_byte, t.total)):
            return await session.request(
                up.method, up.url, data=up.body, headers=headers, timeout=_timeout(t, True)
            )
    except (TimeoutError, aiohttp.ServerTimeoutError) as err:
        raise _headers_timeout(t, deployment, up.stream) from err
    except aiohttp.ClientError as err:
        raise UpstreamError(
            f"deployment {deployment!r}: cannot reach upstream: {err}", status=502, deployment=deployment
        ) from err


SERVER_CAP = "server.max_response_bytes"
"""The setting a cap comes from, as named in the error (a deployment may set its own)."""


def _too_large(
    deployment: str, limit: int, size: int, setting: str, *, declared: bool = False
) -> UpstreamTooLarge:
    what = f"declares {size} bytes (content-length)" if declared else f"passed {limit} bytes"
    return UpstreamTooLarge(
        f"deployment {deployment!r}: answer {what}, over the cap of {limit} bytes "
        f"({setting}); the rest was not read",
        deployment=deployment,
        limit_bytes=limit,
        read_bytes=size,
    )


async def _read_capped(resp: aiohttp.ClientResponse, limit: int, deployment: str, setting: str) -> bytes:
    """The whole body of ``resp``, read in chunks with a running count; raises
    :class:`UpstreamTooLarge` past ``limit`` bytes (or when it declares more)."""
    declared = resp.content_length
    if declared is not None:
        if declared > limit:
            raise _too_large(deployment, limit, declared, setting, declared=True)
        if "content-encoding" not in resp.headers:  # exactly ``declared`` bytes follow: one read
            return await resp.read()
    content = resp.content
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = await content.readany()
        if not chunk:
            break
        size += len(chunk)
        if size > limit:
            chunks.clear()  # not kept alive by the traceback's frame
            raise _too_large(deployment, limit, size, setting)
        chunks.append(chunk)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


async def _read_head(resp: aiohttp.ClientResponse, limit: int) -> bytes:
    """At most ``limit`` bytes from the start of the body of ``resp``."""
    chunks: list[bytes] = []
    size = 0
    while size < limit:
        chunk = await resp.content.readany()
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)[:limit]


async def _raise_for_status(resp: aiohttp.ClientResponse, wire: WireModule, deployment: str) -> None:
    if resp.status < 400:
        return
    body = await _read_head(resp, ERROR_BODY_BYTES)
    message = wire.error_message(resp.status, body)
    raise UpstreamError(
        f"deployment {deployment!r} answered {resp.status}: {message}",
        status=resp.status,
        retry_after_s=parse_retry_after(resp.headers.get("retry-after")),
        deployment=deployment,
        body=body[:2000].decode("utf-8", "replace"),
    )


async def send(
    session: aiohttp.ClientSession,
    up: UpstreamRequest,
    t: TimeoutConfig,
    wire: WireModule,
    deployment: str,
    max_bytes: int = DEFAULT_MAX_BYTES,
    on_large: Callable[[], None] | None = None,
    *,
    cap_name: str = SERVER_CAP,
) -> bytes:
    """POST ``up`` and return the whole response body (bytes, at most ``max_bytes``, the cap
    the setting ``cap_name`` gives).

    Raises :class:`UpstreamError` for a status >= 400 (with ``retry_after_s``),
    :class:`UpstreamTimeout` for any timeout, :class:`UpstreamProtocolError` for a body cut
    off mid-transfer and :class:`UpstreamTooLarge` for a body past ``max_bytes``."""
    resp = await _open(session, up, t, deployment)
    async with resp:
        await _raise_for_status(resp, wire, deployment)
        try:
            body = await _read_capped(resp, max_bytes, deployment, cap_name)
        except UpstreamTooLarge:
            if on_large is not None:
                on_large()
            raise
        except (TimeoutError, aiohttp.ServerTimeoutError) as err:
            raise UpstreamTimeout(
                f"deployment {deployment!r}: response body not complete (no data for {t.first_byte:g}s, "
                f"timeout first_byte, or past the total timeout of {t.total:g}s)",
                deployment=deployment,
            ) from err
        except aiohttp.ClientPayloadError as err:
            raise UpstreamProtocolError(
                f"deployment {deployment!r}: response body cut off: {err}", deployment=deployment
            ) from err
        except aiohttp.ClientError as err:
            raise UpstreamError(
                f"deployment {deployment!r}: connection lost: {err}", status=502, deployment=deployment
            ) from err
    if on_large is not None and len(body) > LARGE_ANSWER_BYTES:
        on_large()
    return body


async def send_stream(
    session: aiohttp.ClientSession,
    up: UpstreamRequest,
    t: TimeoutConfig,
    wire: WireModule,
    deployment: str,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> AsyncIterator[tuple[str | None, bytes]]:
    """POST ``up`` and yield its server-sent events as ``(event_name, data_bytes)`` pairs,
    as they arrive (no batching).

    Errors as for :func:`send`; a connection reset mid-stream raises
    :class:`UpstreamProtocolError` ("stream cut off"), a gap longer than
    ``between_chunks`` raises :class:`UpstreamTimeout`, more than ``max_bytes`` in all raises
    :class:`UpstreamTooLarge`."""
    async for events in send_stream_reads(session, up, t, wire, deployment, max_bytes):
        for item in events:
            yield item


async def send_stream_reads(
    session: aiohttp.ClientSession,
    up: UpstreamRequest,
    t: TimeoutConfig,
    wire: WireModule,
    deployment: str,
    max_bytes: int = DEFAULT_MAX_BYTES,
    on_large: Callable[[], None] | None = None,
    *,
    cap_name: str = SERVER_CAP,
) -> AsyncIterator[list[tuple[str | None, bytes]]]:
    """:func:`send_stream` one network read at a time: yields the non-empty list of
    ``(event_name, data_bytes)`` pairs each read completed, the moment it arrives (one
    suspension per read instead of one per event; nothing is held back). Errors as for
    :func:`send_stream`."""
    started = asyncio.get_running_loop().time()
    resp = await _open(session, up, t, deployment)
    size = 0
    async with resp:
        await _raise_for_status(resp, wire, deployment)
        decoder = SseDecoder()
        content = resp.content
        watch = GapWatch(t.between_chunks, content, started + t.total)
        try:
            while True:
                watch.waiting()
                try:
                    chunk = await content.readany()
                except GapExpired as err:
                    raise UpstreamTimeout(
                        f"deployment {deployment!r}: no stream data for {t.between_chunks:g}s "
                        "(timeout between_chunks)",
                        deployment=deployment,
                    ) from err
                except TotalExpired as err:
                    raise UpstreamTimeout(
                        f"deployment {deployment!r}: stream not complete within the total timeout "
                        f"of {t.total:g}s",
                        deployment=deployment,
                    ) from err
                watch.read()
                if not chunk:
                    break
                size += len(chunk)
                if size > max_bytes:
                    raise _too_large(deployment, max_bytes, size, cap_name)
                events = decoder.feed(chunk)
                if events:
                    yield events
        except aiohttp.ServerTimeoutError as err:
            raise UpstreamTimeout(
                f"deployment {deployment!r}: stream not complete within the total timeout of {t.total:g}s",
                deployment=deployment,
            ) from err
        except aiohttp.ClientError as err:
            raise UpstreamProtocolError(
                f"deployment {deployment!r}: stream cut off: {err}", deployment=deployment
            ) from err
        finally:
            watch.cancel()
            if on_large is not None and size > LARGE_ANSWER_BYTES:
                on_large()
        events = decoder.close()
        if events:
            yield events
