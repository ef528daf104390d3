"""Slow and idle connections against the real gateway process: 1,100 connections that send
nothing, connections that trickle their headers a byte at a time or stop in the middle of a
body, all at once, with the process held to a small file-descriptor budget (soft 256, hard
512, so few sockets reach it). Normal requests made meanwhile are all served; the idle and
slow connections are closed by the server (the oldest-waiting at the connection cap, the rest
at their header deadline or body gap); the process never runs out of descriptors.

Before: 1,100 idle connections exhausted the descriptors and 99 of 99 normal requests failed."""

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
BODY_TIMEOUT_S = 1.0


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
            s.send(b'POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-length: 1000\r\n\r\n{"model"')
    stop = threading.Event()

    def trickle() -> None:  # one byte of a request line per connection every 0.2 s
        line = b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\n"
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
