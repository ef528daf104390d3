"""``kill -9`` in the middle of a keyed session turn under a hard budget (field finding F6):
afterwards the ledger, the session log and the budget counters agree — the killed turn has no
transcript row, no answer in the session (its question is a dead branch), and its reservation
is neither spent nor kept: it is released when its lease ends (``limits.lease_ttl_s``), never
half settled.

The real ``turnstile serve`` child process on a fresh SQLite file, the shared counters in the
test Redis under a prefix of this test's own (they must survive the kill), the deployment
pointing at the upstream stand-in, which holds the streamed answer after its first frame until
the gateway was SIGKILLed.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from standins.serve_process import ServeProcess, clean_env, free_port
from standins.tool_answers import text_answer
from standins.upstream import Gate, UpstreamStandin, replay, reset_mid_stream

SID = "killed-keyed-turn"
BOUND_S = 15.0
LEASE_S = 3
REDIS_URL = os.environ.get("TURNSTILE_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
ADMIN_ENV = "KILL9_LIMITS_ADMIN_KEY"
ADMIN = "kill9-limits-admin"


def _redis() -> Any:
    import redis

    client = redis.Redis.from_url(REDIS_URL, socket_timeout=3, decode_responses=True)
    try:
        client.ping()
    except redis.RedisError as err:
        reason = f"Redis at {REDIS_URL} is unreachable ({err})"
        if os.environ.get("TURNSTILE_REQUIRE_SERVICES") == "1":
            pytest.fail(reason + "; TURNSTILE_REQUIRE_SERVICES=1 requires it")
        pytest.skip(reason)
    return client


@pytest.fixture
def keyed(tmp_path: Path, upstream: UpstreamStandin) -> Iterator[tuple[ServeProcess, Any, str]]:
    client = _redis()
    prefix = f"kill9-{uuid.uuid4().hex[:8]}:"
    config = tmp_path / "turnstile.yaml"
    config.write_text(
        f"server:\n  db_path: {tmp_path / 'transcript.db'}\n"
        f"redis: {{url: '{REDIS_URL}', prefix: '{prefix}'}}\n"
        f"limits: {{lease_ttl_s: {LEASE_S}}}\n"
        f"access: {{auth: required, admin_key_env: {ADMIN_ENV}}}\n"
        "deployments:\n"
        f"  - {{name: chat, api: openai_chat, model: gpt-4o-mini, base_url: '{upstream.url}/v1', "
        "api_key_env: KILL9_TEST_UPSTREAM_KEY, price: {input: 1000000, output: 1000000}}\n"
    )
    env = clean_env(KILL9_TEST_UPSTREAM_KEY="sk-upstream", **{ADMIN_ENV: ADMIN})
    proc = ServeProcess(config, free_port(), cwd=tmp_path, env=env)
    proc.start()
    try:
        yield proc, client, prefix
    finally:
        proc.kill()
        for k in client.scan_iter(match=f"{prefix}*"):
            client.delete(k)


def _counter(client: Any, prefix: str, key_id: str) -> tuple[float, float, list[float]]:
    """``(spent, reserved, hold deadlines)`` of the key's total budget: USD, USD, epoch s."""
    [h] = list(client.scan_iter(match=f"{prefix}b:key:{key_id}:total:*"))
    holds = [s / 1000 for _, s in client.zrange(h.replace(":b:", ":bh:", 1), 0, -1, withscores=True)]
    return int(client.hget(h, "s") or 0) / 1e9, int(client.hget(h, "r") or 0) / 1e9, holds


def _ledger(http: httpx.Client, key_id: str) -> float:
    got = http.get("/admin/spend", params={"group_by": "key"}, headers={"x-admin-key": ADMIN})
    assert got.status_code == 200, got.text
    return sum(r["cost_usd"] for r in got.json()["data"] if r["group"] == key_id)


def _text(entry: dict[str, Any]) -> str:
    return "".join(p.get("text", "") for p in entry["payload"]["message"]["content"])


def test_a_keyed_session_turn_killed_mid_stream_leaves_ledger_log_and_counters_agreeing(
    keyed: tuple[ServeProcess, Any, str], upstream: UpstreamStandin
) -> None:
    gateway, client, prefix = keyed
    held = Gate(timeout_s=BOUND_S)
    upstream.script(
        replay(text_answer("openai_chat", "a1", stream=False)),
        reset_mid_stream(text_answer("openai_chat", "half an answer", stream=True), 1, gate=held),
    )
    with httpx.Client(base_url=gateway.url, timeout=BOUND_S) as http:
        made = http.post(
            "/admin/keys",
            json={"name": "k", "budgets": [{"period": "total", "usd": 10_000, "hard": True}]},
            headers={"x-admin-key": ADMIN},
        )
        assert made.status_code == 201, made.text
        key_id, secret = made.json()["key"]["id"], made.json()["secret"]
        auth = {"authorization": f"Bearer {secret}", "x-turnstile-session": SID}
        body = {"model": "chat", "max_tokens": 20}
        first = http.post(
            "/v1/chat/completions",
            json={**body, "messages": [{"role": "user", "content": "q1"}]},
            headers=auth,
        )
        assert first.status_code == 200, first.text
        with http.stream(
            "POST",
            "/v1/chat/completions",
            json={**body, "messages": [{"role": "user", "content": "q2"}], "stream": True},
            headers=auth,
        ) as resp:
            assert resp.status_code == 200
            for line in resp.iter_lines():  # the answer is flowing: the kill is mid-turn
                if "half an answer" in line:
                    break
            killed_at = time.time()
            gateway.kill()
        held.release()

    gateway.start()
    with httpx.Client(base_url=gateway.url, timeout=BOUND_S) as http:
        spent_before = _ledger(http, key_id)
        spent, reserved, deadlines = _counter(client, prefix, key_id)
        assert spent == pytest.approx(spent_before, abs=1e-6), "the killed turn is not charged"
        # its holds (the admission and its history's, ContextHold) are still there, until the lease
        assert reserved > 0 and 1 <= len(deadlines) <= 2
        assert max(deadlines) <= killed_at + LEASE_S + 1
        log = http.get(f"/v1/sessions/{SID}", headers={"x-admin-key": ADMIN}).json()
        own = {e["id"]: e for e in log["entries"]}
        (dead,) = [e for e in own.values() if _text(e) == "q2"]
        assert not [e for e in own.values() if e["parent_id"] == dead["id"]], "no answer in the log"
        while time.time() <= max(deadlines):  # bounded (LEASE_S): the lease is a wall-clock deadline
            time.sleep(0.05)
        upstream.script(replay(text_answer("openai_chat", "a3", stream=False)))
        third = http.post(  # its admission sweeps the dead hold
            "/v1/chat/completions",
            json={**body, "messages": [{"role": "user", "content": "q3"}]},
            headers=auth,
        )
        assert third.status_code == 200, third.text
        spent, reserved, deadlines = _counter(client, prefix, key_id)
        assert (reserved, deadlines) == (0, [])
        assert spent == pytest.approx(_ledger(http, key_id), abs=1e-6)
        answered = [e for e in log["entries"] if e["payload"].get("message", {}).get("role") == "assistant"]
        assert len(answered) == 1  # a1: the ledger's one answered session turn before the kill
