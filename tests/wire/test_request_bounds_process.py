"""Request bounds against the real gateway process: a body of hundreds of thousands of tiny
messages is refused naming the limit; a large request within the limits keeps the server
answering others while it is worked on; afterwards the process gives the memory back; JSON
nested past the limit on ``count_tokens`` is one 400 and one log line.

Before the limits, one 18 MB request of 590,000 messages held the event loop for tens of
seconds (``/health`` unanswered for 8-27 s) and left the process about 1.1 GB larger; deep JSON
on ``count_tokens`` was a plain-text 500 and about 2,950 lines of log."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from standins import recordings
from standins.process import GatewayProcess
from standins.servers import LoopThread
from standins.topology import MATRIX, build_config
from standins.upstream import Gate, UpstreamStandin, held, replay

MODEL = MATRIX["openai_chat"][0]
MAX_BODY = 24 * 1024 * 1024
RSS_SLACK_KB = 150 * 1024
"""Resident memory the process may keep after the large requests (kB): the largest request
here is an 18 MB body, its decoded objects about twice that, plus allocator slack."""


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
    config = build_config(standin.url, str(tmp_path / "transcript.db"))
    config = config.model_copy(
        update={"server": config.server.model_copy(update={"max_body_bytes": MAX_BODY})}
    )
    gp = GatewayProcess(config, tmp_path)
    gp.start()
    yield gp
    gp.stop()


def _answer(standin: UpstreamStandin, gate: Gate | None = None) -> None:
    ex = recordings.common("openai_chat", "simple", False)[0]
    standin.script(held(replay(ex, api="openai_chat"), gate) if gate else replay(ex, api="openai_chat"))


def _warm(gp: GatewayProcess, standin: UpstreamStandin) -> int:
    for _ in range(10):
        _answer(standin)
        resp = httpx.post(
            f"{gp.url}/v1/chat/completions",
            json={"model": MODEL, "messages": [{"role": "user", "content": "hi"}]},
            timeout=30,
        )
        assert resp.status_code == 200, resp.text
    return gp.status()["VmRSS"]


def _log_lines_of(gp: GatewayProcess, rid: str, timeout_s: float = 10.0) -> list[str]:
    """The log lines naming request ``rid``, once at least one is written (the line may follow
    the answer's last byte); bounded by ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        lines = [line for line in gp.log().splitlines() if rid in line]
        if lines or time.monotonic() > deadline:
            return lines
        time.sleep(0.05)


def _rss_settles_below(gp: GatewayProcess, bound_kb: int, timeout_s: float = 20.0) -> int:
    deadline = time.monotonic() + timeout_s
    while True:
        rss = gp.status()["VmRSS"]
        if rss <= bound_kb or time.monotonic() > deadline:
            return rss
        time.sleep(0.2)


def test_a_request_of_590000_messages_is_refused_naming_the_limit_and_the_memory_goes_back(
    gateway: GatewayProcess, standin: UpstreamStandin
) -> None:
    baseline = _warm(gateway, standin)
    standin.received.clear()
    body = orjson.dumps({"model": MODEL, "messages": [{"role": "user", "content": "hi"}] * 590_000})
    resp = httpx.post(
        f"{gateway.url}/v1/chat/completions",
        content=body,
        headers={"content-type": "application/json"},
        timeout=60,
    )

    assert resp.status_code == 413, resp.text[:300]
    err = resp.json()["error"]
    assert err["message"] == (
        "messages: 590000 messages; at most 5000 are accepted per request (limit server.max_request_messages)"
    )
    assert err["param"] == "messages"
    assert standin.received == []
    rss = _rss_settles_below(gateway, baseline + RSS_SLACK_KB)
    assert rss <= baseline + RSS_SLACK_KB, f"RSS {rss // 1024} MB after, {baseline // 1024} MB before"


def test_a_large_request_within_the_limits_keeps_health_answering_while_it_is_worked_on(
    gateway: GatewayProcess, standin: UpstreamStandin
) -> None:
    baseline = _warm(gateway, standin)
    messages = [{"role": "user" if i % 2 == 0 else "assistant", "content": "x" * 3_500} for i in range(4_999)]
    body = orjson.dumps({"model": MODEL, "messages": messages})  # 17.6 MB, 4,999 messages
    uploaded = threading.Event()
    reached_upstream = threading.Event()
    standin.on_request = lambda _: reached_upstream.set()
    gate = Gate(timeout_s=30.0)
    _answer(standin, gate)
    result: dict[str, Any] = {}

    def chunks() -> Iterator[bytes]:
        for i in range(0, len(body), 1 << 20):
            yield body[i : i + (1 << 20)]
        uploaded.set()

    def send() -> None:
        result["resp"] = httpx.post(
            f"{gateway.url}/v1/chat/completions",
            content=chunks(),
            headers={"content-type": "application/json"},
            timeout=120,
        )

    sender = threading.Thread(target=send)
    sender.start()
    try:
        assert uploaded.wait(60)
        answered_in_flight = 0
        while not reached_upstream.is_set():  # the gateway parses, guards and builds the request
            resp = httpx.get(f"{gateway.url}/health", timeout=30)
            assert resp.status_code == 200
            if not reached_upstream.is_set():
                answered_in_flight += 1
        gate.release()
        sender.join(120)
    finally:
        gate.release()
        standin.on_request = None
    assert result["resp"].status_code == 200, result["resp"].text[:300]
    assert answered_in_flight >= 1, "/health was not answered while the large request was worked on"
    rss = _rss_settles_below(gateway, baseline + RSS_SLACK_KB)
    assert rss <= baseline + RSS_SLACK_KB, f"RSS {rss // 1024} MB after, {baseline // 1024} MB before"


def test_deep_json_on_count_tokens_is_one_400_in_its_dialect_and_one_log_line(
    gateway: GatewayProcess,
) -> None:
    deep: dict[str, Any] = {}
    for _ in range(700):
        deep = {"a": deep}
    use = {"type": "tool_use", "id": "t1", "name": "f", "input": deep}
    result = {"type": "tool_result", "tool_use_id": "t1", "content": "ok"}
    messages = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [use]},
        {"role": "user", "content": [result]},
    ]
    body = {"model": MODEL, "messages": messages}
    resp = httpx.post(
        f"{gateway.url}/v1/messages/count_tokens",
        content=json.dumps(body).encode(),  # the stdlib encoder writes any depth
        headers={"content-type": "application/json"},
        timeout=60,
    )

    assert resp.status_code == 400
    assert resp.json()["type"] == "error" and resp.json()["error"]["type"] == "invalid_request_error"
    rid = resp.headers["x-turnstile-request-id"]
    lines = _log_lines_of(gateway, rid)
    assert len(lines) == 1 and '"status":400' in lines[0], lines
    assert "Traceback" not in gateway.log()
