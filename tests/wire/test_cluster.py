"""Several gateway instances behind nginx round robin, one PostgreSQL database and one Redis
(:mod:`standins.cluster`): a conversation continues whichever instance a request lands on — a
Responses chain, a session, and a tool loop on a thinking model whose client drops the signed
thinking (the thinking memory is shared).

Needs nginx, PostgreSQL and Redis (all on this machine kind and in CI); without them the tests
skip with the reason, unless ``TURNSTILE_REQUIRE_SERVICES=1`` makes that a failure.
"""

from __future__ import annotations

import os
import sqlite3
import uuid
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest
from standins import recordings
from standins.cluster import Cluster, drop_database, fresh_database, nginx_binary
from standins.servers import LoopThread
from standins.tool_answers import text_answer
from standins.topology import KEY_ENV, KEYS, MATRIX, build_config
from standins.upstream import UpstreamStandin, replay

REQUIRED = os.environ.get("TURNSTILE_REQUIRE_SERVICES") == "1"
REDIS_URL = os.environ.get("TURNSTILE_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


def _skip(reason: str) -> None:
    if REQUIRED:
        pytest.fail(f"{reason}; TURNSTILE_REQUIRE_SERVICES=1 requires it")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Cluster, UpstreamStandin]]:
    """Two instances on one fresh PostgreSQL database behind nginx, in front of the upstream
    stand-in (its own event loop thread); started once for this module."""
    tmp_path = tmp_path_factory.mktemp("cluster")
    nginx = nginx_binary()
    if nginx is None:
        _skip("nginx is not installed")
    import redis

    try:
        redis.Redis.from_url(REDIS_URL, socket_timeout=3).ping()
    except redis.RedisError as err:
        _skip(f"Redis at {REDIS_URL} is unreachable ({err})")
    try:
        db_url = fresh_database()
    except Exception as err:
        _skip(f"PostgreSQL is unreachable ({type(err).__name__}: {err})")
    prefix = f"turnstile-cluster-{uuid.uuid4().hex[:8]}:"
    loop = LoopThread()
    standin = UpstreamStandin()
    loop.call(standin.start())
    config = build_config(standin.url, str(tmp_path / "unused.db")).model_dump(mode="json", exclude_none=True)
    config["sessions"] = {**config.get("sessions", {}), "url": db_url}
    config["redis"] = {"url": REDIS_URL, "prefix": prefix}
    group = Cluster(tmp_path, config, env={KEY_ENV[api]: KEYS[api] for api in KEY_ENV})
    try:
        group.start(str(nginx))
        yield group, standin
    finally:
        group.stop()
        loop.call(standin.stop())
        loop.close()
        drop_database(db_url)
        shared = redis.Redis.from_url(REDIS_URL, socket_timeout=3)
        for k in shared.scan_iter(match=f"{prefix}*"):
            shared.delete(k)


@pytest.fixture
def cluster(running: tuple[Cluster, UpstreamStandin]) -> Iterator[tuple[Cluster, UpstreamStandin]]:
    """The running cluster with a clean stand-in script and request log."""
    running[1].reset()
    yield running
    running[1].reset()


def _rows_per_instance(group: Cluster) -> list[int]:
    counts = []
    for proc in group.instances:
        with sqlite3.connect(str(Path(proc.cwd) / "transcript.db")) as conn:
            counts.append(conn.execute("SELECT count(*) FROM turns").fetchone()[0])
    return counts


def _texts(body: dict) -> list[str]:
    out = []
    for item in body.get("messages") or []:
        content = item.get("content")
        out += [content] if isinstance(content, str) else [p.get("text") for p in content or []]
    return out


def test_responses_chain_continues_on_another_instance(cluster: tuple[Cluster, UpstreamStandin]) -> None:
    group, upstream = cluster
    api = "openai_chat"
    upstream.script(*(replay(text_answer(api, t, stream=False), api=api) for t in ("A1", "A2")))
    client = openai.OpenAI(base_url=f"{group.url}/v1", api_key="sk-client", max_retries=0, timeout=20)
    before = _rows_per_instance(group)
    first = client.responses.create(model=MATRIX[api][0], input="Q1")
    second = client.responses.create(model=MATRIX[api][0], input="Q2", previous_response_id=first.id)
    assert second.output_text == "A2", group.logs()
    assert _texts(upstream.requests()[1].body) == ["Q1", "A1", "Q2"]
    grown = [b - a for a, b in zip(before, _rows_per_instance(group), strict=True)]
    assert grown == [1, 1], f"round robin put the turns on one instance: {grown}"


def test_session_continues_on_another_instance(cluster: tuple[Cluster, UpstreamStandin]) -> None:
    group, upstream = cluster
    api = "openai_chat"
    upstream.script(*(replay(text_answer(api, t, stream=False), api=api) for t in ("A1", "A2")))
    client = openai.OpenAI(base_url=f"{group.url}/v1", api_key="sk-client", max_retries=0, timeout=20)
    before = _rows_per_instance(group)
    headers = {"x-turnstile-session": "cluster-session-1"}
    client.chat.completions.create(
        model=MATRIX[api][0], messages=[{"role": "user", "content": "Q1"}], extra_headers=headers
    )
    client.chat.completions.create(
        model=MATRIX[api][0], messages=[{"role": "user", "content": "Q2"}], extra_headers=headers
    )
    assert _texts(upstream.requests()[1].body) == ["Q1", "A1", "Q2"], group.logs()
    assert [b - a for a, b in zip(before, _rows_per_instance(group), strict=True)] == [1, 1]


WEATHER = [
    {
        "type": "function",
        "function": {
            "name": "weather",
            "description": "Get weather information for a location",
            "parameters": {
                "type": "object",
                "required": ["location"],
                "properties": {"location": {"description": "the city", "type": "string"}},
            },
        },
    }
]


def test_signed_thinking_a_client_dropped_is_restored_by_another_instance(
    cluster: tuple[Cluster, UpstreamStandin],
) -> None:
    """Round 1 of a tool loop on Claude (thinking on) answers on one instance; the client builds
    round 2 by hand, without the signed thinking, and it lands on the other instance, which
    restores it from the shared memory (the stand-in refuses a round 2 without it)."""
    group, upstream = cluster
    first, second = recordings.anthropic_thinking(False)[:2]
    upstream.script(replay(first, api="anthropic_messages"), replay(second, api="anthropic_messages"))
    one, other = (
        openai.OpenAI(base_url=f"{p.url}/v1", api_key="sk-client", max_retries=0, timeout=20)
        for p in group.instances
    )
    question = [{"role": "user", "content": "What's the weather in Florence, Italy?"}]
    kwargs = {"model": MATRIX["anthropic_messages"][0], "tools": WEATHER, "max_tokens": 4096}
    msg1 = one.chat.completions.create(messages=question, reasoning_effort="low", **kwargs).choices[0].message
    calls = [
        {"id": c.id, "type": "function", "function": c.function.to_dict()} for c in msg1.tool_calls or []
    ]
    assert calls, group.logs()
    back = {"role": "assistant", "content": msg1.content, "tool_calls": calls}  # no reasoning: dropped
    result = {"role": "tool", "tool_call_id": calls[0]["id"], "content": "40 C"}
    raw = other.chat.completions.with_raw_response.create(
        messages=[*question, back, result], reasoning_effort="low", **kwargs
    )
    assert raw.status_code == 200, group.logs()
    assert "x-turnstile-dropped" not in raw.headers, raw.headers.get("x-turnstile-dropped")
    blocks = upstream.requests()[1].body["messages"][1]["content"]
    assert [b["type"] for b in blocks] == ["thinking", "tool_use"], group.logs()
