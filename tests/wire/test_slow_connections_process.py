"""Slow and idle connections against the real gateway process: 1,100 connections that send
nothing, connections that trickle their headers a byte at a time or stop in the middle of a
body, all at once, with the process held to a small file-descriptor budget (soft 256, hard
512, so few sockets reach it). Normal requests made meanwhile are all served; the idle and
slow connections are closed by the server (the oldest-waiting at the connection cap, the rest
at their header deadline or body gap); the process never runs out of descriptors.

Slow bodies: 260 connections that each announce a 200 kB body and send it a byte a second (never
a gap long enough to trip ``server.body_timeout_s``), against ``server.max_connections`` 200.
Normal requests and ``/health`` are all served, each slow body is closed: to make room for a new
connection (the one furthest behind the minimum rate first), or with a JSON 408 once, past the
grace period, it averages less than ``server.body_min_bytes_per_s``.

Before: 1,100 idle connections exhausted the descriptors and 99 of 99 normal requests failed;
260 slow bodies held their slots forever and normal requests and ``/health`` got an empty 503."""

from __future__ import annotations

import contextlib
import resource
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from standins import recordings
from standins.process import GatewayProcess, open_fds
from standins.servers import LoopThread
from standins.topology import MATRIX, build_config
from standins.upstream import UpstreamStandin, replay

IDLE = 1_100
TRICKLING = 40
STALLED_BODIES = 20
NORMAL = 99
NOFILE = (256, 512)
HEADER_TIMEOUT_S = 1.0
HEAD = b"POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
"""A chat request's head as an SDK sends it (a loopback Host, JSON), without its length."""
BODY_TIMEOUT_S = 1.0
SLOW_BODIES = 260
SLOW_CAP = 200
SLOW_GRACE_S = 5.0
"""``body_timeout_s`` of the slow-body test: the grace period before the minimum rate applies,
long enough that the normal requests meet every slot taken by a slow body."""
SLOW_NORMAL = 50


@pytest.fixture(scope="module")
def standin() -> Iterator[UpstreamStandin]:
    loop = LoopThread()
    up = UpstreamStandin()
    loop.call(up.start())
    yield up
    loop.call(up.stop())
    loop.close()


@pytest.fixture
def enough_fds() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = IDLE + TRICKLING + STALLED_BODIES + 400
    if soft < need:
        if hard != resource.RLIM_INFINITY and hard < need:
            pytest.skip(f"this test needs {need} file descriptors; the hard limit is {hard}")
        resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))


@pytest.fixture
def gateway(standin: UpstreamStandin, tmp_path: Path, enough_fds: None) -> Iterator[GatewayProcess]:
    standin.reset()
    config = build_config(standin.url, str(tmp_path / "transcript.db"))
    server = config.server.model_copy(
        update={
            "header_timeout_s": HEADER_TIMEOUT_S,
            "body_timeout_s": BODY_TIMEOUT_S,
            "keep_alive_timeout_s": 2.0,
        }
    )
    gp = GatewayProcess(config.model_copy(update={"server": server}), tmp_path, nofile=NOFILE)
    gp.start()
    yield gp
    gp.stop()


@pytest.fixture
def slow_body_gateway(standin: UpstreamStandin, tmp_path: Path, enough_fds: None) -> Iterator[GatewayProcess]:
    standin.reset()
    config = build_config(standin.url, str(tmp_path / "transcript.db"))
    server = config.server.model_copy(
        update={
            "header_timeout_s": HEADER_TIMEOUT_S,
            "body_timeout_s": SLOW_GRACE_S,
            "body_min_bytes_per_s": 1024.0,
            "max_connections": SLOW_CAP,
        }
    )
    gp = GatewayProcess(config.model_copy(update={"server": server}), tmp_path)
    gp.start()
    yield gp
    gp.stop()


def _connect(port: int) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.setblocking(False)
    return s


def _closed_by_server(s: socket.socket) -> bool:
    """True when the server has closed ``s`` (EOF or reset, after an optional 408/503)."""
    try:
        while True:
            data = s.recv(65536)
            if not data:
                return True
            if not data.startswith((b"HTTP/1.1 408", b"HTTP/1.1 503")):
                return False
    except BlockingIOError:
        return False
    except OSError:
        return True


def test_a_thousand_idle_and_slow_connections_do_not_stop_normal_requests(
    gateway: GatewayProcess, standin: UpstreamStandin
) -> None:
    log = gateway.log()
    assert '"soft":512' in log and '"event":"fd_limit"' in log, "the soft fd limit is raised to the hard one"
    assert '"max_connections":192' in log, "half of what is left after the 128 reserved"
    port = gateway.port
    idle = [_connect(port) for _ in range(IDLE)]
    trickling = [_connect(port) for _ in range(TRICKLING)]
    stalled = [_connect(port) for _ in range(STALLED_BODIES)]
    for s in stalled:
        with contextlib.suppress(OSError):
            s.send(HEAD + b'content-length: 1000\r\n\r\n{"model"')
    stop = threading.Event()

    def trickle() -> None:  # one byte of a request line per connection every 0.2 s
        line = HEAD
        i = 0
        while not stop.wait(0.2):
            for s in trickling:
                with contextlib.suppress(OSError):
                    s.send(line[i % len(line) : i % len(line) + 1])
            i += 1

    trickler = threading.Thread(target=trickle, daemon=True)
    trickler.start()
    try:
        ex = recordings.common("openai_chat", "simple", False)[0]
        statuses = []
        peak_fds = 0
        for i in range(NORMAL):
            if i % 3 == 0:
                standin.script(replay(ex, api="openai_chat"))
                resp = httpx.post(
                    f"{gateway.url}/v1/chat/completions",
                    json={"model": MATRIX["openai_chat"][0], "messages": [{"role": "user", "content": "hi"}]},
                    timeout=10,
                )
            else:
                resp = httpx.get(f"{gateway.url}/health", timeout=10)
            statuses.append(resp.status_code)
            peak_fds = max(peak_fds, open_fds(gateway.pid))
        assert statuses == [200] * NORMAL

        # Every idle and slow connection is closed by the server, none stays past its deadline.
        pending = idle + trickling + stalled
        deadline = time.monotonic() + 10 * max(HEADER_TIMEOUT_S, BODY_TIMEOUT_S) + 10
        while pending and time.monotonic() < deadline:
            pending = [s for s in pending if not _closed_by_server(s)]
            time.sleep(0.1)
        assert not pending, f"{len(pending)} idle or slow connections are still open"
        assert peak_fds < NOFILE[1], f"the gateway held {peak_fds} descriptors"
        counts = httpx.get(f"{gateway.url}/health", timeout=10).json()["connections"]
        assert counts["max"] == 192 and counts["open"] <= 2, counts
        # each one closed by the server: at the cap for a newer one, or at its deadline
        assert counts["evicted"] + counts["timed_out"] == IDLE + TRICKLING + STALLED_BODIES, counts
        assert counts["timed_out"] > 0 and counts["refused"] == 0, counts
    finally:
        stop.set()
        trickler.join(5)
        for s in idle + trickling + stalled:
            s.close()
    resp = httpx.get(f"{gateway.url}/health", timeout=10)
    assert resp.status_code == 200


def _normal_requests(gateway: GatewayProcess, standin: UpstreamStandin, n: int) -> list[int]:
    """Statuses of ``n`` normal requests, each on a new connection: a chat turn every third,
    else ``/health``."""
    ex = recordings.common("openai_chat", "simple", False)[0]
    statuses = []
    for i in range(n):
        if i % 3 == 0:
            standin.script(replay(ex, api="openai_chat"))
            resp = httpx.post(
                f"{gateway.url}/v1/chat/completions",
                json={"model": MATRIX["openai_chat"][0], "messages": [{"role": "user", "content": "hi"}]},
                timeout=10,
            )
        else:
            resp = httpx.get(f"{gateway.url}/health", timeout=10)
        statuses.append(resp.status_code)
    return statuses


def test_slow_bodies_past_the_connection_cap_do_not_stop_normal_requests(
    slow_body_gateway: GatewayProcess, standin: UpstreamStandin
) -> None:
    gateway = slow_body_gateway
    head = HEAD + b"content-length: 200000\r\n\r\n{"
    slow = []
    for _ in range(SLOW_BODIES):
        s = _connect(gateway.port)
        with contextlib.suppress(OSError):
            s.send(head)
        slow.append(s)
    stop = threading.Event()

    def trickle() -> None:  # one byte of body per connection every second: 1 B/s, never a 5 s gap
        while not stop.wait(1.0):
            for s in slow:
                with contextlib.suppress(OSError):
                    s.send(b" ")

    trickler = threading.Thread(target=trickle, daemon=True)
    trickler.start()
    try:
        started = time.monotonic()
        statuses = _normal_requests(gateway, standin, SLOW_NORMAL)
        within_grace = time.monotonic() - started < SLOW_GRACE_S
        assert statuses == [200] * SLOW_NORMAL

        # Every slow body is closed by the server: at the cap, or past the grace period for its rate.
        pending = slow
        deadline = time.monotonic() + 3 * SLOW_GRACE_S + 10
        while pending and time.monotonic() < deadline:
            pending = [s for s in pending if not _closed_by_server(s)]
            time.sleep(0.1)
        assert not pending, f"{len(pending)} slow bodies are still open"
        counts = httpx.get(f"{gateway.url}/health", timeout=10).json()["connections"]
        assert counts["max"] == SLOW_CAP and counts["refused"] == 0, counts
        assert counts["evicted"] + counts["timed_out"] >= SLOW_BODIES, counts
        assert counts["evicted"] >= SLOW_BODIES - SLOW_CAP, counts
        if within_grace:  # every slot held by a slow body: the first normal request made room
            assert counts["evicted"] >= SLOW_BODIES - SLOW_CAP + 1, counts
        assert counts["timed_out"] > 0, counts
        log = gateway.log()
        assert "body_min_bytes_per_s" in log
    finally:
        stop.set()
        trickler.join(5)
        for s in slow:
            s.close()
