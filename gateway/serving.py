"""Client connections under load: what one process may hold open, and for how long a
connection may take to send its request.

uvicorn (0.54, httptools) bounds only the wait between two requests on a kept-alive
connection (``timeout_keep_alive``). A connection that never sends a byte, or sends its
headers a byte at a time, or stops in the middle of a body, is held forever; 1,100 of them
exhausted the process's file descriptors and every other request failed. This module adds,
in a subclass of uvicorn's httptools protocol (:class:`GuardedHttpToolsProtocol`):

* **a header deadline** (``server.header_timeout_s``): the request line and headers must be in
  within that time of the connection opening (or, on a kept-alive connection, of the first
  byte of the next request), however slowly they trickle;
* **a body gap** (``server.body_timeout_s``): the longest wait between two reads of a request
  body;
* **a minimum body rate** (``server.body_min_bytes_per_s``): past a grace period of
  ``body_timeout_s`` from the end of its headers, a body must have averaged at least this
  rate; a body sent a byte every 20 s never trips the gap and would hold its slot forever;
* **a connection cap** (``server.max_connections``; by default half of the file descriptors
  left after a reserve, the other half being for the upstream connections of the turns in
  flight): past it, a new connection closes the connection that has been waiting longest for a
  request (kept alive between requests, or not yet through its headers); with none waiting,
  the body furthest behind the minimum rate (a ``408``); with none behind either, the new one
  gets ``503`` and is closed. uvicorn's own ``limit_concurrency`` is not used: it counts
  waiting connections too, so idle ones would turn every real request into a 503.

A timed-out connection gets ``408`` and is closed. Both answers, written before any dialect is
known, have a neutral JSON body ``{"error": {"type": ..., "message": ...}}`` (the shape both
the OpenAI and the Anthropic SDKs read a message from). A body cut this way is noted in the
request's scope state (:func:`body_cut`), so the app that was reading it records the request's
transcript row with status 408 rather than as a client that left. The cost on the request path is a few
attribute writes and dict operations per request; one timer per connection, armed when it
opens (and again only for a later request that does not arrive in one read).

:func:`raise_fd_limit` lifts the process's soft ``RLIMIT_NOFILE`` to its hard limit at start.
"""

from __future__ import annotations

import asyncio
import contextlib
import resource
from dataclasses import dataclass, field
from typing import Any

import orjson
import structlog
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

log = structlog.get_logger("turnstile.serving")

STATE_KEY = "turnstile.connections"
"""Key of the :class:`ConnectionGuard` in the ASGI lifespan state (uvicorn hands that state
to every connection's protocol)."""

FD_RESERVE = 128
"""File descriptors kept back from client connections: the transcript and session stores,
logs, MCP servers and their pipes."""

_IDLE, _HEADERS, _BODY, _APP = 0, 1, 2, 3

BODY_CUT_KEY = "turnstile.body_cut"
"""Key in a request's ASGI scope state: why the connection guard cut its body (a message, set
before the app's ``receive`` answers ``http.disconnect``); read by :func:`body_cut`."""


def body_cut(scope: Any) -> str | None:
    """Why the connection guard answered this request 408 while its body was read (the
    message it sent), or None when the client itself left."""
    state = scope.get("state")
    return state.get(BODY_CUT_KEY) if isinstance(state, dict) else None


def error_answer(status: str, kind: str, message: str, extra_headers: bytes = b"") -> bytes:
    """A whole HTTP/1.1 answer that closes the connection, ``status`` (``"408 Request
    Timeout"``) with the neutral JSON error body of ``kind`` and ``message``."""
    body = orjson.dumps({"error": {"type": kind, "message": message}})
    return (
        f"HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n".encode()
        + extra_headers
        + b"connection: close\r\n\r\n"
        + body
    )


def _timed_out(message: str) -> bytes:
    return error_answer("408 Request Timeout", "timeout_error", message)


def raise_fd_limit() -> tuple[int, int]:
    """Raise the soft ``RLIMIT_NOFILE`` to the hard limit where the system allows it;
    ``(soft, hard)`` afterwards (an unlimited hard limit is taken as 1,048,576)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else 1 << 20
    if soft < target:
        with contextlib.suppress(ValueError, OSError):  # not allowed here: keep what there is
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)


def default_max_connections() -> int:
    """Client connections one process holds at most when ``server.max_connections`` is unset:
    half of (soft fd limit - :data:`FD_RESERVE`), at least 16."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return max(16, (soft - FD_RESERVE) // 2)


@dataclass
class ConnectionGuard:
    """The bounds shared by the connections of one server process (seconds, connections,
    bytes per second; ``body_min_bytes_per_s`` 0 sets no minimum), the connections waiting for a
    request, oldest first (the first to close at the cap), and those reading a body (the next)."""

    header_timeout_s: float
    body_timeout_s: float
    max_connections: int
    body_min_bytes_per_s: float = 0.0
    idle: dict[Any, None] = field(default_factory=dict)
    bodies: dict[Any, None] = field(default_factory=dict)
    open: int = 0
    evicted: int = 0
    refused: int = 0
    timed_out: int = 0

    def snapshot(self) -> dict[str, int]:
        """Counts for ``/health``: connections open now and the cap; since start, how many were
        closed to make room (``evicted``), refused with 503 and timed out with 408."""
        return {
            "open": self.open,
            "max": self.max_connections,
            "waiting": len(self.idle),
            "reading_bodies": len(self.bodies),
            "evicted": self.evicted,
            "refused": self.refused,
            "timed_out": self.timed_out,
        }


class GuardedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with the header deadline, body gap and connection cap of
    the :class:`ConnectionGuard` found in the lifespan state (without one: plain uvicorn)."""

    _guard: ConnectionGuard | None = None
    _phase = _IDLE
    _deadline = 0.0
    _last = 0.0
    _body_start = 0.0
    _body_bytes = 0
    _timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        guard = self.app_state.get(STATE_KEY)
        if guard is None:
            return
        self._guard = guard
        guard.open += 1
        if guard.open > guard.max_connections and not self._make_room(guard):
            guard.refused += 1
            transport.write(
                error_answer(
                    "503 Service Unavailable",
                    "overloaded_error",
                    f"the gateway holds its limit of {guard.max_connections} client connections "
                    "(server.max_connections), none of them idle or slow; retry shortly",
                    b"retry-after: 1\r\n",
                )
            )
            transport.close()
            return
        guard.idle[self] = None
        self._start_headers(guard)
        self._timer = self.loop.call_later(guard.header_timeout_s, self._check)  # it may send nothing

    def _make_room(self, guard: ConnectionGuard) -> bool:
        """Close the connection that has waited longest for a request, else the body furthest
        behind the minimum rate (408); False when none waits and no body is behind."""
        for victim in guard.idle:
            del guard.idle[victim]
            guard.evicted += 1
            victim.transport.close()
            return True
        rate = guard.body_min_bytes_per_s
        if not guard.bodies or rate <= 0:
            return False
        now = self.loop.time()
        slowest = min(guard.bodies, key=lambda p: p._on_pace_until(rate))
        if slowest._on_pace_until(rate) >= now:
            return False
        del guard.bodies[slowest]
        guard.evicted += 1
        slowest._phase = _APP
        slowest.transport.write(
            _timed_out(
                f"request body closed to make room at the limit of {guard.max_connections} client "
                f"connections (server.max_connections): {slowest._body_bytes} bytes in "
                f"{now - slowest._body_start:.1f} s, slower than server.body_min_bytes_per_s "
                f"({rate:g} B/s)"
            )
        )
        slowest.transport.close()
        return True

    def _on_pace_until(self, rate: float) -> float:
        """When this connection's body falls below ``rate`` bytes per second on average (loop
        time, seconds): the earliest is the body furthest behind."""
        return self._body_start + self._body_bytes / rate

    def _start_headers(self, guard: ConnectionGuard) -> None:
        self._phase = _HEADERS
        self._deadline = self.loop.time() + guard.header_timeout_s

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        # A request not read whole in this one read is timed: the common one is, and costs no timer.
        phase = self._phase
        if phase in (_HEADERS, _BODY) and self._timer is None and self._guard is not None:
            delay = self._deadline - self.loop.time() if phase == _HEADERS else self._guard.body_timeout_s
            self._timer = self.loop.call_later(max(0.0, delay), self._check)

    def _check(self) -> None:
        """The timer: close a connection past its header deadline, body gap or (after the grace
        period) below the minimum body rate, else wait on."""
        self._timer = None
        guard = self._guard
        if guard is None or self.transport.is_closing():
            return
        now = self.loop.time()
        rate = guard.body_min_bytes_per_s
        slow = False
        if self._phase == _HEADERS:
            due = self._deadline
            why = (
                f"request line and headers not received within {guard.header_timeout_s:g} s "
                "(server.header_timeout_s)"
            )
        elif self._phase == _BODY:
            due = self._last + guard.body_timeout_s
            why = f"no request body bytes for {guard.body_timeout_s:g} s (server.body_timeout_s)"
            if rate > 0:
                # At ``start + bytes / rate`` the average falls below the minimum; never before the grace.
                behind = max(self._body_start + guard.body_timeout_s, self._on_pace_until(rate))
                if behind < due:
                    due, slow = behind, True
        else:
            return
        if now < due:
            self._timer = self.loop.call_later(due - now, self._check)
            return
        if slow:
            why = (
                f"request body of {self._body_bytes} bytes in {now - self._body_start:.1f} s is slower than "
                f"server.body_min_bytes_per_s ({rate:g} B/s)"
            )
        guard.timed_out += 1
        guard.idle.pop(self, None)
        guard.bodies.pop(self, None)
        if self._phase == _BODY:  # the app reading this body sees a disconnect: tell it why
            state = getattr(self, "scope", {}).get("state")
            if isinstance(state, dict):
                state[BODY_CUT_KEY] = why
        self._phase = _APP
        self.transport.write(_timed_out(why))
        self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        guard = self._guard
        if guard is not None:
            guard.open -= 1
            guard.idle.pop(self, None)
            guard.bodies.pop(self, None)
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
        super().connection_lost(exc)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        guard = self._guard
        if guard is not None and self._phase == _IDLE:  # the next request on a kept-alive connection
            self._start_headers(guard)

    def on_headers_complete(self) -> None:
        guard = self._guard
        if guard is not None:
            guard.idle.pop(self, None)
            guard.bodies[self] = None
            self._phase = _BODY
            self._last = self._body_start = now = self.loop.time()
            self._body_bytes = 0
            timer = self._timer  # armed for the header deadline: a shorter body gap comes first
            if timer is not None and timer.when() > now + guard.body_timeout_s:
                timer.cancel()
                self._timer = self.loop.call_later(guard.body_timeout_s, self._check)
        super().on_headers_complete()

    def on_body(self, body: bytes) -> None:
        if self._phase == _BODY:
            self._last = self.loop.time()
            self._body_bytes += len(body)
        super().on_body(body)

    def on_message_complete(self) -> None:
        if self._phase == _BODY and self._guard is not None:
            self._guard.bodies.pop(self, None)
        self._phase = _APP
        super().on_message_complete()

    def on_response_complete(self) -> None:
        guard = self._guard
        if guard is not None and not self.transport.is_closing():
            self._phase = _IDLE
            guard.idle[self] = None  # waits for its next request: first to go at the cap
        super().on_response_complete()


def uvicorn_options(server: Any) -> dict[str, Any]:
    """The ``uvicorn.run`` options for ``server`` (:class:`gateway.config.ServerConfig`): the
    guarded protocol, the keep-alive timeout (seconds), and uvicorn's own proxy headers off:
    uvicorn believes ``X-Forwarded-For`` from 127.0.0.1 by default, and on a loopback gateway
    every local client connects from there, so any of them could choose its address. The app
    believes them only from ``server.trusted_proxies`` (:func:`gateway.server.create_app`)."""
    return {
        "http": GuardedHttpToolsProtocol,
        "timeout_keep_alive": server.keep_alive_timeout_s,
        "proxy_headers": False,
    }


def make_guard(server: Any) -> ConnectionGuard:
    """The :class:`ConnectionGuard` for ``server`` (:class:`gateway.config.ServerConfig`), made
    in the lifespan of each worker process (its fd limit is the process's)."""
    cap = server.max_connections or default_max_connections()
    log.info(
        "connection_limits",
        max_connections=cap,
        fd_limit=resource.getrlimit(resource.RLIMIT_NOFILE)[0],
        header_timeout_s=server.header_timeout_s,
        body_timeout_s=server.body_timeout_s,
        body_min_bytes_per_s=server.body_min_bytes_per_s,
        keep_alive_timeout_s=server.keep_alive_timeout_s,
    )
    return ConnectionGuard(server.header_timeout_s, server.body_timeout_s, cap, server.body_min_bytes_per_s)
