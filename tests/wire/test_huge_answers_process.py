"""Huge upstream answers against the real gateway process: 16 concurrent 50 MB answers (whole
bodies chunked and with ``content-length``, and streams, from every wire API through both
client dialects) are each refused at ``server.max_response_bytes`` with a 502 (a started
stream ends with the dialect's error event), healthy requests in parallel are served, and the
process's peak resident memory stays bounded and it gives the memory back afterwards.

Before the cap, 16 concurrent 50 MB answers took the process from 0.18 to 3.6 GB of resident
memory and it kept 3.5 GB; the transcript grew 2.4 GB."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from standins import recordings
from standins.process import GatewayProcess
from standins.servers import LoopThread
from standins.topology import MATRIX, build_config
from standins.upstream import UpstreamStandin, huge, replay
from standins.wirekit import recorded_text

from gateway.config import ServerConfig
from gateway.transcript_cut import CUT_KEY

HUGE = 50 * 1024 * 1024
CAP = ServerConfig().max_response_bytes
STORED = ServerConfig().transcript_max_json_bytes
PEAK_SLACK_KB = 300 * 1024
"""Peak resident memory the burst may add (kB): 16 answers are read up to the 8 MiB cap at
most (128 MB of bytes), the streamed ones also as events held for the transcript."""
KEPT_SLACK_KB = 100 * 1024
"""Resident memory the process may keep once the burst is over (kB): what it took is given
back (gateway.memory); allocator slack remains."""
PATHS = {"openai": "/v1/chat/completions", "anthropic": "/v1/messages"}
# (client dialect, wire API, stream, declared content-length)
KINDS = [
    ("openai", "openai_chat", False, False),
    ("openai", "openai_chat", False, True),
    ("openai", "openai_chat", True, False),
    ("anthropic", "anthropic_messages", False, False),
    ("anthropic", "anthropic_messages", True, False),
    ("openai", "gemini", False, True),
    ("anthropic", "gemini", True, False),
    ("anthropic", "openai_chat", True, False),
]


@pytest.fixture(scope="module")
def standin() -> Iterator[UpstreamStandin]:
    loop = LoopThread()
    up = UpstreamStandin()
    loop.call(up.start())
    yield up
    loop.call(up.stop())
    loop.close()


@pytest.fixture
def gateway(standin: UpstreamStandin, tmp_path: Path) -> Iterator[GatewayProcess]:
    standin.reset()
    gp = GatewayProcess(build_config(standin.url, str(tmp_path / "transcript.db")), tmp_path)
    gp.start()
    yield gp
    gp.stop()


def _body(dialect: str, model: str, stream: bool) -> dict[str, Any]:
    body: dict[str, Any] = {"model": model, "messages": [{"role": "user", "content": "hi"}], "stream": stream}
    if dialect == "anthropic":
        body["max_tokens"] = 64
    return body


def _post(gp: GatewayProcess, dialect: str, model: str, stream: bool) -> httpx.Response:
    headers = {"x-api-key": "k", "anthropic-version": "2023-06-01"}
    return httpx.post(
        f"{gp.url}{PATHS[dialect]}", json=_body(dialect, model, stream), headers=headers, timeout=120
    )


def _healthy(gp: GatewayProcess, standin: UpstreamStandin, n: int) -> list[str]:
    ex = recordings.common("openai_chat", "simple", False)[0]
    texts = []
    for _ in range(n):
        standin.script(replay(ex, model="gpt-backup"))
        resp = _post(gp, "openai", "oa-backup", False)
        assert resp.status_code == 200, resp.text[:300]
        texts.append(resp.json()["choices"][0]["message"]["content"])
    assert texts == [recorded_text(ex, "openai_chat")] * n
    return texts


def _assert_refused(dialect: str, api: str, stream: bool, resp: httpx.Response) -> str:
    """The refusal's message; checks its dialect shape and that it names cap and deployment."""
    deployment = MATRIX[api][0]
    if not stream:
        assert resp.status_code == 502, resp.text[:300]
        body = resp.json()
        err = body["error"]
        if dialect == "anthropic":
            assert body["type"] == "error" and err["type"] == "api_error", body
    else:
        assert resp.status_code == 200, resp.text[:300]
        tail = resp.text[-2000:]
        if dialect == "openai":
            frames = [f for f in tail.split("\n\n") if f.startswith("data: {")]
            err = json.loads(frames[-1][6:])["error"]
            assert tail.endswith("data: [DONE]\n\n")
        else:
            frames = [f for f in tail.split("\n\n") if f.startswith("event: error")]
            err = json.loads(frames[-1].split("data: ", 1)[1])["error"]
            assert "message_stop" not in tail
        assert len(resp.content) < CAP + 1024 * 1024, "nothing past the cap was relayed"
    message = str(err["message"])
    assert f"over the cap of {CAP} bytes (server.max_response_bytes)" in message, message
    assert f"deployment {deployment!r}" in message, message
    return message


def test_sixteen_concurrent_50_mb_answers_are_each_refused_at_the_cap_while_healthy_requests_are_served(
    gateway: GatewayProcess, standin: UpstreamStandin, tmp_path: Path
) -> None:
    _healthy(gateway, standin, 5)
    before = gateway.status()
    jobs = [KINDS[i % len(KINDS)] for i in range(16)]
    for _dialect, api, stream, declared in jobs:
        model = MATRIX[api][1]
        standin.script(
            huge(
                recordings.common(api, "simple", stream)[0],
                HUGE,
                api=api,
                model=model,
                declare_length=declared,
            )
        )
    healthy_done = threading.Event()
    healthy_texts: list[str] = []

    def healthy_loop() -> None:
        try:
            healthy_texts.extend(_healthy(gateway, standin, 16))
        finally:
            healthy_done.set()

    with ThreadPoolExecutor(max_workers=17) as pool:
        healthy = pool.submit(healthy_loop)
        answers = list(pool.map(lambda job: _post(gateway, job[0], MATRIX[job[1]][0], job[2]), jobs))
        healthy.result(timeout=180)
    after = gateway.status()

    for (dialect, api, stream, _), resp in zip(jobs, answers, strict=True):
        _assert_refused(dialect, api, stream, resp)
    assert len(healthy_texts) == 16
    assert after["VmHWM"] < before["VmRSS"] + PEAK_SLACK_KB, (
        f"peak RSS {after['VmHWM'] // 1024} MB, {before['VmRSS'] // 1024} MB before the burst"
    )
    rows = _rows(tmp_path / "transcript.db", {r.headers["x-turnstile-request-id"] for r in answers})
    assert len(rows) == 16
    for status, error, response in rows:
        assert status == 502 and "server.max_response_bytes" in error
        assert response is None or len(response.encode()) <= STORED
    cut = [json.loads(r) for _, _, r in rows if r is not None]
    assert cut and all(c[CUT_KEY]["original_bytes"] > STORED for c in cut), "streams keep what was sent, cut"
    rss = _rss_settles_below(gateway, before["VmRSS"] + KEPT_SLACK_KB)
    assert rss <= before["VmRSS"] + KEPT_SLACK_KB, (
        f"RSS {rss // 1024} MB after, {before['VmRSS'] // 1024} MB before"
    )


def _rss_settles_below(gp: GatewayProcess, bound_kb: int, timeout_s: float = 20.0) -> int:
    deadline = time.monotonic() + timeout_s
    while True:
        rss = gp.status()["VmRSS"]
        if rss <= bound_kb or time.monotonic() > deadline:
            return rss
        time.sleep(0.2)


def _rows(db: Path, rids: set[str], timeout_s: float = 10.0) -> list[tuple[int, str, str | None]]:
    """The rows of ``rids``, waiting (bounded) for the batched writer to store them all."""
    marks = ",".join("?" * len(rids))
    deadline = time.monotonic() + timeout_s
    while True:
        conn = sqlite3.connect(db)
        try:
            sql = f"SELECT status, error, response FROM turns WHERE request_id IN ({marks})"
            rows = list(conn.execute(sql, list(rids)))
        finally:
            conn.close()
        if len(rows) == len(rids) or time.monotonic() > deadline:
            return rows
        time.sleep(0.05)
