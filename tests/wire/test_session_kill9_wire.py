"""``kill -9`` in the middle of a session-bound stream (issue 14 break-test M3): the killed turn's
question stays in the log as a dead branch, and the next turn, after a restart, continues from
the last answered interaction: its upstream context holds its own question once, never merged
with the dead one.

The real ``turnstile serve`` child process on a fresh SQLite file, its deployment pointing at
the upstream stand-in; the stand-in sends the first frame of the streamed answer and holds the
rest until the test has read that frame through the gateway and SIGKILLed the gateway.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from standins.serve_process import ServeProcess, clean_env, free_port
from standins.tool_answers import text_answer
from standins.upstream import Gate, UpstreamStandin, replay, reset_mid_stream

SID = "killed-mid-stream"
BOUND_S = 15.0


@pytest.fixture
def gateway(tmp_path: Path, upstream: UpstreamStandin) -> Iterator[ServeProcess]:
    config = tmp_path / "turnstile.yaml"
    config.write_text(
        f"server:\n  db_path: {tmp_path / 'transcript.db'}\n"
        "deployments:\n"
        f"  - {{name: chat, api: openai_chat, model: gpt-4o-mini, base_url: '{upstream.url}/v1', "
        "api_key_env: KILL9_TEST_UPSTREAM_KEY, price: {input: 1, output: 1}}\n"
    )
    proc = ServeProcess(
        config, free_port(), cwd=tmp_path, env=clean_env(KILL9_TEST_UPSTREAM_KEY="sk-upstream")
    )
    proc.start()
    yield proc
    proc.kill()


def _turn(http: httpx.Client, question: str, **extra: Any) -> httpx.Response:
    body = {"model": "chat", "messages": [{"role": "user", "content": question}], **extra}
    return http.post("/v1/chat/completions", json=body, headers={"x-turnstile-session": SID})


def _text(entry: dict[str, Any]) -> str:
    content = entry["payload"]["message"]["content"]
    return "".join(p.get("text", "") for p in content)


def test_the_turn_after_a_kill_9_mid_stream_branches_past_the_dead_question(
    gateway: ServeProcess, upstream: UpstreamStandin
) -> None:
    held = Gate(timeout_s=BOUND_S)
    upstream.script(
        replay(text_answer("openai_chat", "a1", stream=False)),
        reset_mid_stream(text_answer("openai_chat", "half an answer", stream=True), 1, gate=held),
    )
    with httpx.Client(base_url=gateway.url, timeout=BOUND_S) as http:
        assert _turn(http, "q1").status_code == 200
        with http.stream(
            "POST",
            "/v1/chat/completions",
            json={"model": "chat", "messages": [{"role": "user", "content": "q2"}], "stream": True},
            headers={"x-turnstile-session": SID},
        ) as resp:
            assert resp.status_code == 200
            for line in resp.iter_lines():  # the answer is flowing: the kill is mid-stream
                if "half an answer" in line:
                    break
            gateway.kill()
        held.release()

    gateway.start()
    upstream.script(replay(text_answer("openai_chat", "a3", stream=False)))
    with httpx.Client(base_url=gateway.url, timeout=BOUND_S) as http:
        assert _turn(http, "q3").status_code == 200
        log = http.get(f"/v1/sessions/{SID}").json()
    assert upstream.requests()[-1].body["messages"] == [
        {"role": "user", "content": "q1"},
        {"role": "assistant", "content": "a1"},
        {"role": "user", "content": "q3"},
    ]
    assert [_text(e) for e in log["path"]] == ["q1", "a1", "q3", "a3"]
    own = {e["id"]: e for e in log["entries"]}
    (dead,) = [e for e in own.values() if _text(e) == "q2"]
    assert _text(own[dead["parent_id"]]) == "a1", "the dead question stays, as a branch of a1"
    assert not [e for e in own.values() if e["parent_id"] == dead["id"]]
