"""Several gateway instances behind nginx round robin, one PostgreSQL database
(:mod:`standins.cluster`): a conversation continues whichever instance a request lands on.

Needs nginx and PostgreSQL (both on this machine kind and in CI); without them the tests skip
with the reason, unless ``TURNSTILE_REQUIRE_SERVICES=1`` makes that a failure.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest
from standins.cluster import Cluster, drop_database, fresh_database, nginx_binary
from standins.servers import LoopThread
from standins.tool_answers import text_answer
from standins.topology import KEY_ENV, KEYS, MATRIX, build_config
from standins.upstream import UpstreamStandin, replay

REQUIRED = os.environ.get("TURNSTILE_REQUIRE_SERVICES") == "1"


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
    try:
        db_url = fresh_database()
    except Exception as err:
        _skip(f"PostgreSQL is unreachable ({type(err).__name__}: {err})")
    loop = LoopThread()
    standin = UpstreamStandin()
    loop.call(standin.start())
    config = build_config(standin.url, str(tmp_path / "unused.db")).model_dump(mode="json", exclude_none=True)
    config["sessions"] = {**config.get("sessions", {}), "url": db_url}
    group = Cluster(tmp_path, config, env={KEY_ENV[api]: KEYS[api] for api in KEY_ENV})
    try:
        group.start(str(nginx))
        yield group, standin
    finally:
        group.stop()
        loop.call(standin.stop())
        loop.close()
        drop_database(db_url)


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
