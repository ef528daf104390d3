"""A graceful shutdown is bounded: on SIGTERM, turns still open after ``server.shutdown_timeout_s``
are cut, the process exits, and each cut turn has its transcript row saying so (status 503, stop
reason ``aborted``, the usage known so far), written before the transcript closed. Each client
gets the cause in its own dialect: a stream ends with an error event, a whole answer is a 503.

The real ``turnstile serve`` runs as a child process against the upstream stand-in, whose
answers never finish: two streams (one per client dialect) that stop after their first frames and
stay open, and a whole answer held before its first byte.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from standins import recordings
from standins.serve_process import ServeProcess, clean_env, free_port
from standins.servers import LoopThread
from standins.topology import KEY_ENV, KEYS
from standins.upstream import Gate, UpstreamStandin, held, replay, reset_mid_stream, stop_frame_index

BOUND_S = 1  # whole seconds (uvicorn's timeout_graceful_shutdown)
EXIT_MARGIN_S = 8.0  # start of the lifespan shutdown, transcript close, interpreter exit, busy machine
NEVER_S = 120.0  # the stand-in holds its answers this long: far past the bound and the margin
API = "anthropic_messages"
MODEL = "claude-sonnet-4-20250514"


@pytest.fixture
def standin() -> Iterator[UpstreamStandin]:
    loop = LoopThread()
    up = UpstreamStandin()
    loop.call(up.start())
    try:
        yield up
    finally:
        loop.call(up.stop())
        loop.close()


def _rows(db: Path) -> list[dict[str, object]]:
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in conn.execute("SELECT * FROM turns")]
    finally:
        conn.close()


def test_sigterm_cuts_open_turns_after_the_bound_and_records_each_as_aborted(
    standin: UpstreamStandin, tmp_path: Path
) -> None:
    ex = recordings.common(API, "simple", True)[0]
    gates = [Gate(timeout_s=NEVER_S) for _ in range(3)]
    standin.script(
        reset_mid_stream(ex, frames=stop_frame_index(ex) - 1, api=API, gate=gates[0]),
        reset_mid_stream(ex, frames=stop_frame_index(ex) - 1, api=API, gate=gates[1]),
        held(replay(recordings.common(API, "simple", False)[0], api=API), gates[2]),
    )
    db = tmp_path / "transcript.db"
    config = tmp_path / "turnstile.yaml"
    config.write_text(
        f"server:\n  db_path: {db}\n  shutdown_timeout_s: {BOUND_S}\n"
        "deployments:\n"
        f"  - {{name: an, api: {API}, model: {MODEL}, base_url: '{standin.url}', "
        f"api_key_env: {KEY_ENV[API]}, price: {{input: 3, output: 15}}}}\n"
    )
    server = ServeProcess(config, free_port(), cwd=tmp_path, env=clean_env(**{KEY_ENV[API]: KEYS[API]}))
    server.start()
    stream_ids: list[str] = []
    whole: list[httpx.Response] = []
    try:
        with httpx.Client(base_url=server.url, timeout=NEVER_S) as http:
            bodies = [
                (
                    "/v1/chat/completions",
                    {"model": "an", "stream": True, "messages": [{"role": "user", "content": "hi"}]},
                ),
                (
                    "/v1/messages",
                    {
                        "model": "an",
                        "stream": True,
                        "max_tokens": 64,
                        "messages": [{"role": "user", "content": "hi"}],
                    },
                ),
            ]
            with (
                http.stream("POST", bodies[0][0], json=bodies[0][1]) as a,
                http.stream("POST", bodies[1][0], json=bodies[1][1]) as b,
            ):
                readers = [a.iter_raw(), b.iter_raw()]  # kept: a dropped reader closes its connection
                for resp, reader in zip((a, b), readers, strict=True):
                    assert resp.status_code == 200
                    stream_ids.append(resp.headers["x-turnstile-request-id"])
                    assert next(reader)  # the first frames arrived; the rest never will

                def ask_whole() -> None:
                    whole.append(http.post("/v1/messages", json={**bodies[1][1], "stream": False}))

                waiter = threading.Thread(target=ask_whole)
                waiter.start()
                assert gates[2].waited.wait(10)  # the whole answer is held upstream too
                server.terminate()
                stopping = time.monotonic()
                code = server.wait(BOUND_S + EXIT_MARGIN_S)
                took = time.monotonic() - stopping
                waiter.join(10)
                endings = [b"".join(reader) for reader in readers]  # what the streams got last
    finally:
        server.kill()
    assert took < BOUND_S + EXIT_MARGIN_S and code in (0, -15), server.output()
    openai_end, anthropic_end = endings  # each stream ends with an error event naming the cause
    assert b"cut by shutdown" in openai_end and openai_end.endswith(b"data: [DONE]\n\n"), openai_end
    assert b"event: error" in anthropic_end and b"cut by shutdown" in anthropic_end, anthropic_end
    (answer,) = whole  # cut before its first byte: a 503 in the client's dialect, naming the cause
    assert answer.status_code == 503 and answer.json()["type"] == "error"
    assert "cut by shutdown" in answer.json()["error"]["message"]

    rows = _rows(db)
    assert len(rows) == 3, rows
    by_id = {r["request_id"]: r for r in rows}
    for rid in stream_ids:
        row = by_id[rid]
        assert row["status"] == 503 and row["stop"] == "aborted"
        assert "cut by shutdown" in str(row["error"]) and "shutdown_timeout_s" in str(row["error"])
        assert int(row["input_tokens"] or 0) > 0  # the usage known so far (Anthropic's message_start)
        assert "Hello" in str(row["response"]) or len(str(row["response"])) > 20
    cut_whole = by_id[answer.headers["x-turnstile-request-id"]]
    assert cut_whole["status"] == 503 and cut_whole["stream"] == 0
    assert "cut by shutdown" in str(cut_whole["error"])
