"""Stored responses under concurrent load and ``kill -9``: every stored response a client was
answered before the kill reads back after the restart (``GET /v1/responses/{id}``, same text),
and every chain continues from it (``previous_response_id``).

The real ``turnstile serve`` (keyless demo deployment, no MCP servers) on a fresh SQLite file.
:data:`WORKERS` client threads each run a chain of Responses turns (whole and streamed
alternately), and at every step fork the same parent twice at once; Gemini turns run alongside.
The gateway is SIGKILLed once answers flow, then started again on the same file.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
from standins.serve_process import ServeProcess, free_port

WORKERS = 50
ANSWERS_BEFORE_KILL = 120
LOAD_BOUND_S = 20.0
GEMINI = {"contents": [{"role": "user", "parts": [{"text": "gemini alongside"}]}]}


def _answer(http: httpx.Client, body: dict[str, Any]) -> dict[str, Any] | None:
    """The Response object of one turn (whole, or a stream's ``response.completed``), or None
    when the answer did not arrive in full."""
    if not body.get("stream"):
        resp = http.post("/v1/responses", json=body)
        return resp.json() if resp.status_code == 200 else None
    with http.stream("POST", "/v1/responses", json=body) as resp:
        if resp.status_code != 200:
            return None
        data = b"".join(resp.iter_raw())
    for line in data.splitlines():
        if line.startswith(b"data: ") and b'"response.completed"' in line:
            return json.loads(line[6:])["response"]  # type: ignore[no-any-return]
    return None


def _text(response: dict[str, Any]) -> str:
    return "".join(
        c["text"] for o in response["output"] if o["type"] == "message" for c in o["content"] if "text" in c
    )


class Load:
    """Chains of stored responses; ``answered`` maps response id -> answered text."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.answered: dict[str, str] = {}
        self.leaves: dict[int, str] = {}
        self.lock = threading.Lock()
        self.stop = threading.Event()

    def count(self) -> int:
        with self.lock:
            return len(self.answered)

    def _keep(self, response: dict[str, Any] | None) -> None:
        if response is not None:
            with self.lock:
                self.answered[response["id"]] = _text(response)

    def worker(self, n: int) -> None:
        with httpx.Client(base_url=self.url, timeout=20.0) as http, ThreadPoolExecutor(2) as forks:
            parent: str | None = None
            step = 0
            while not self.stop.is_set():
                step += 1
                with contextlib.suppress(httpx.TransportError, httpx.StreamError):
                    if n % 10 == 0:
                        http.post("/v1beta/models/demo:generateContent", json=GEMINI)
                        continue
                    bodies = [
                        {"model": "demo", "input": f"w{n} s{step} b{b}", "stream": (step + b) % 2 == 0}
                        | ({"previous_response_id": parent} if parent else {})
                        for b in (0, 1)
                    ]  # two continuations of one parent at once: two branches
                    answers = list(forks.map(lambda body: _answer(http, body), bodies))
                    for a in answers:
                        self._keep(a)
                    if answers[0] is not None:
                        parent = answers[0]["id"]
                        with self.lock:
                            self.leaves[n] = parent


def test_stored_responses_answered_before_kill_9_read_back_and_continue(tmp_path: Path) -> None:
    db = tmp_path / "transcript.db"
    config = tmp_path / "turnstile.yaml"
    config.write_text(
        f"server:\n  db_path: {db}\n"
        "deployments:\n  - {name: demo, api: demo, model: turnstile-demo, price: {input: 0, output: 0}}\n"
    )
    server = ServeProcess(config, free_port(), cwd=tmp_path)
    server.start()
    load = Load(server.url)
    with ThreadPoolExecutor(WORKERS) as pool:
        workers = [pool.submit(load.worker, i) for i in range(WORKERS)]
        try:
            deadline = time.monotonic() + LOAD_BOUND_S
            while load.count() < ANSWERS_BEFORE_KILL and time.monotonic() < deadline:
                time.sleep(0.01)  # polling the answer count, not a synchronisation
            server.kill()
        finally:
            load.stop.set()
            server.kill()
        for w in workers:
            w.result(timeout=60)
    answered = dict(load.answered)
    assert len(answered) >= ANSWERS_BEFORE_KILL, f"{len(answered)} answers before the kill"
    server.start()
    try:
        with httpx.Client(base_url=server.url, timeout=20.0) as http:
            lost = []
            for rid, text in answered.items():
                got = http.get(f"/v1/responses/{rid}")
                if got.status_code != 200 or _text(got.json()) != text:
                    lost.append((rid, got.status_code, got.text[:200]))
            assert not lost, f"{len(lost)} of {len(answered)} answered responses lost: {lost[:3]}"
            for leaf in load.leaves.values():
                got = http.post(
                    "/v1/responses", json={"model": "demo", "input": "after", "previous_response_id": leaf}
                )
                assert got.status_code == 200, got.text
                items = http.get(f"/v1/responses/{got.json()['id']}/input_items")
                assert items.status_code == 200 and len(items.json()["data"]) == 1
    finally:
        server.kill()
