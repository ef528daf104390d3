"""``kill -9`` under load loses no answered turn: every request whose whole answer a client
received has its transcript row on disk, whatever moment the gateway was killed at.

The real ``turnstile serve`` runs as a child process on a fresh SQLite file (the keyless demo
deployment, no MCP servers). Client threads drive turns without pause — OpenAI and Anthropic,
streamed and not, plus refused requests (an error answer is an answer too) — and note the
request id (``x-turnstile-request-id``) of every answer they received in full: a whole JSON body,
or a stream up to its last frame (``data: [DONE]`` / ``message_stop``). The gateway is killed
with SIGKILL at a random moment once answers flow, started again on the same file, several
times; then the file must hold a row for every answered request id.
"""

from __future__ import annotations

import contextlib
import random
import sqlite3
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
from standins.serve_process import ServeProcess, free_port

KILLS = 3
THREADS = 12
ANSWERS_BEFORE_KILL = 40  # per round: the kill comes while answers flow, not at start-up
ROUND_BOUND_S = 30.0  # a round's load phase ends by then even on a loaded machine (40 answers come first)
KILL_JITTER_S = 0.4  # the kill comes up to this long after ANSWERS_BEFORE_KILL were seen

USER = [{"role": "user", "content": "durability check"}]
TURNS = [
    ("/v1/chat/completions", {"model": "demo", "messages": USER}, "json"),
    ("/v1/chat/completions", {"model": "demo", "messages": USER, "stream": True}, b"data: [DONE]"),
    ("/v1/messages", {"model": "demo", "max_tokens": 64, "messages": USER}, "json"),
    (
        "/v1/messages",
        {"model": "demo", "max_tokens": 64, "messages": USER, "stream": True},
        b"event: message_stop",
    ),
    ("/v1/chat/completions", {"model": "demo", "messages": "not a list"}, "json"),  # refused: 400
]


class Load:
    """Client threads sending :data:`TURNS` round-robin; ``answered`` collects request ids."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.answered: set[str] = set()
        self.lock = threading.Lock()
        self.up = threading.Event()
        self.stop = threading.Event()

    def count(self) -> int:
        with self.lock:
            return len(self.answered)

    def _one(self, http: httpx.Client, n: int) -> None:
        path, body, end = TURNS[n % len(TURNS)]
        if end == "json":
            resp = http.post(path, json=body)
            resp.json()  # the whole body arrived (content-length checked by the client)
            rid = resp.headers["x-turnstile-request-id"]
        else:
            with http.stream("POST", path, json=body) as resp:
                rid = resp.headers["x-turnstile-request-id"]
                assert resp.status_code == 200
                data = b"".join(resp.iter_raw())
            if end not in data:
                return  # cut before its last frame: not an answer the client received
        with self.lock:
            self.answered.add(rid)

    def worker(self, seed: int) -> None:
        n = seed
        with httpx.Client(base_url=self.url, timeout=10.0) as http:
            while not self.stop.is_set():
                if not self.up.wait(1.0):
                    continue
                n += 1
                # an error: the gateway was killed under this request, nothing was answered
                with contextlib.suppress(httpx.TransportError, httpx.StreamError):
                    self._one(http, n)


def test_every_answer_a_client_received_has_its_transcript_row_after_kill_9(tmp_path: Path) -> None:
    db = tmp_path / "transcript.db"
    config = tmp_path / "turnstile.yaml"
    config.write_text(
        f"server:\n  db_path: {db}\n"
        "deployments:\n  - {name: demo, api: demo, model: turnstile-demo, price: {input: 0, output: 0}}\n"
    )
    server = ServeProcess(config, free_port(), cwd=tmp_path)
    load = Load(server.url)
    rng = random.Random(11)
    per_round: list[int] = []
    with ThreadPoolExecutor(THREADS) as pool:
        workers = [pool.submit(load.worker, i) for i in range(THREADS)]
        try:
            for _ in range(KILLS):
                server.start()
                before = load.count()
                load.up.set()
                deadline = time.monotonic() + ROUND_BOUND_S
                while load.count() - before < ANSWERS_BEFORE_KILL and time.monotonic() < deadline:
                    time.sleep(0.01)  # polling the answer count, not a synchronisation
                time.sleep(rng.uniform(0, KILL_JITTER_S))  # the random moment of the kill
                server.kill()
                load.up.clear()
                per_round.append(load.count() - before)
        finally:
            load.stop.set()
            server.kill()
        for w in workers:
            w.result(timeout=30)

    conn = sqlite3.connect(db)
    try:
        rows = {rid for (rid,) in conn.execute("SELECT request_id FROM turns")}
    finally:
        conn.close()
    missing = load.answered - rows
    summary = (
        f"{len(load.answered)} answered turns (per round {per_round}), {len(rows)} rows, "
        f"{len(missing)} answered turns missing after {KILLS} x kill -9"
    )
    print(summary)
    assert all(n >= ANSWERS_BEFORE_KILL for n in per_round), summary
    assert not missing, summary
