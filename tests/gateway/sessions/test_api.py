"""Sessions through the HTTP app: binding a turn, recording, compaction to a small window,
overflow retry, fork/label/compact routes, and the CLI."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient
from typer.testing import CliRunner

from gateway.config import Deployment, GatewayConfig, ModelAlias, SessionsConfig, Settings
from gateway.errors import UpstreamError
from gateway.providers.demo import DemoProvider
from gateway.schema import Request, Response
from gateway.server import create_app
from gateway.sessions.turns import is_context_overflow, session_id_for


class Recording(DemoProvider):
    """The demo provider, recording requests; can fail the first N calls with an overflow."""

    def __init__(self) -> None:
        self.requests: list[Request] = []
        self.overflows = 0

    async def complete(self, request: Request, deployment: Deployment, api_key: str | None) -> Response:
        if request.messages and "<previous-summary>" not in str(request.messages[-1]):
            self.requests.append(request)
            if self.overflows:
                self.overflows -= 1
                raise UpstreamError("prompt is too long: 300000 tokens > 200000 maximum", status=400)
        return await super().complete(request, deployment, api_key)


@pytest.fixture
def app_client(tmp_path: Path) -> Iterator[tuple[TestClient, Recording, Path]]:
    db = tmp_path / "t.db"
    cfg = GatewayConfig(
        deployments=[
            Deployment(name="demo", api="demo", model="turnstile-demo", context_window=128_000),
            Deployment(
                name="small", api="demo", model="turnstile-demo", context_window=3_000, max_output_tokens=200
            ),
        ],
        models=[ModelAlias(name="small", deployments=["small"])],
        sessions=SessionsConfig(compaction_deployment="demo", keep_ratio=0.5),
    )
    cfg.server.db_path = str(db)
    provider = Recording()
    app = create_app(
        config=cfg, settings=Settings(db_path=db, log_level="warning"), providers={"demo": provider}
    )
    with TestClient(app) as client:
        yield client, provider, db


def chat(
    client: TestClient,
    messages: list[dict[str, Any]],
    session: str | None = "s1",
    model: str = "small",
    **extra: Any,
) -> dict[str, Any]:
    headers = {"x-turnstile-session": session} if session else {}
    r = client.post(
        "/v1/chat/completions", json={"model": model, "messages": messages, **extra}, headers=headers
    )
    assert r.status_code == 200, r.text
    return dict(r.json())


def test_session_binding_header_metadata_and_user() -> None:
    req = Request(model="m", messages=[], metadata={"turnstile_session": "meta"}, user="session:u")
    assert session_id_for({"x-turnstile-session": "h"}, req) == "h"
    assert session_id_for({}, req) == "meta"
    assert session_id_for({}, Request(model="m", messages=[], user="session:u")) == "u"
    assert session_id_for({}, Request(model="m", messages=[], user="someone")) is None


def test_context_overflow_errors_are_recognised() -> None:
    assert is_context_overflow(
        UpstreamError("This model's maximum context length is 8192 tokens", status=400)
    )
    assert not is_context_overflow(UpstreamError("rate limited", status=429))
    assert not is_context_overflow(UpstreamError("bad tool schema", status=400))


def test_a_bound_turn_is_recorded_and_readable(app_client: tuple[TestClient, Recording, Path]) -> None:
    client, _, _ = app_client
    out = chat(client, [{"role": "user", "content": "hello"}])
    answer = out["choices"][0]["message"]["content"]
    chat(
        client,
        [
            {"role": "user", "content": "hello"},
            {"role": "assistant", "content": answer},
            {"role": "user", "content": "again"},
        ],
    )
    listed = client.get("/v1/sessions").json()["data"]
    assert [s["id"] for s in listed] == ["s1"] and listed[0]["entry_count"] == 4
    body = client.get("/v1/sessions/s1").json()
    roles = [e["payload"]["message"]["role"] for e in body["path"]]
    assert roles == ["user", "assistant", "user", "assistant"]
    assert client.get("/v1/sessions/nope").status_code == 404


def test_a_long_session_compacts_to_fit_a_small_window_and_keeps_every_entry(
    app_client: tuple[TestClient, Recording, Path],
) -> None:
    client, provider, _ = app_client
    for i in range(12):  # the client sends only its new message each time
        chat(client, [{"role": "user", "content": f"turn {i}: " + "lorem ipsum dolor sit amet " * 40}])
    body = client.get("/v1/sessions/s1").json()
    own = body["entries"]
    assert sum(e["type"] == "message" for e in own) == 24  # every original message is still there
    compactions = [e for e in own if e["type"] == "compaction"]
    assert compactions and all(c["payload"]["reason"] == "window" for c in compactions)
    assert all(c["payload"]["tokens_after"] < c["payload"]["tokens_before"] for c in compactions)
    from gateway.context import estimate_tokens

    for req in provider.requests:
        used = sum(estimate_tokens(m) for m in req.messages)
        assert used <= 3_000 - 200  # window minus reserved output
    assert "compacted" in str(provider.requests[-1].messages[0])


def test_upstream_context_overflow_compacts_and_retries_once(
    app_client: tuple[TestClient, Recording, Path],
) -> None:
    client, provider, _ = app_client
    for i in range(3):
        chat(client, [{"role": "user", "content": f"q{i}"}], model="demo")
    provider.overflows = 1
    chat(client, [{"role": "user", "content": "q3"}], model="demo")
    own = client.get("/v1/sessions/s1").json()["entries"]
    assert [e["payload"]["reason"] for e in own if e["type"] == "compaction"] == ["overflow"]
    provider.overflows = 2  # a second overflow is not retried again
    r = client.post(
        "/v1/chat/completions",
        json={"model": "demo", "messages": [{"role": "user", "content": "q4"}]},
        headers={"x-turnstile-session": "s1"},
    )
    assert r.status_code == 400


def test_fork_label_and_compact_routes(app_client: tuple[TestClient, Recording, Path]) -> None:
    client, _, db = app_client
    for i in range(3):
        chat(client, [{"role": "user", "content": f"q{i}"}], model="demo")
    path = client.get("/v1/sessions/s1").json()["path"]
    first_answer = path[1]["id"]
    r = client.post("/v1/sessions/s1/fork", json={"entry_id": first_answer, "session_id": "f1"})
    assert r.status_code == 201 and r.json()["leaf_id"] == first_answer
    chat(client, [{"role": "user", "content": "other direction"}], session="f1", model="demo")
    fork_path = client.get("/v1/sessions/f1").json()["path"]
    assert len(fork_path) == 4 and fork_path[1]["id"] == first_answer
    r = client.post(f"/v1/sessions/s1/entries/{first_answer}/label", json={"label": "good answer"})
    assert r.status_code == 201 and r.json()["payload"] == {"target_id": first_answer, "label": "good answer"}
    assert client.post("/v1/sessions/s1/entries/zzz/label", json={"label": "x"}).status_code == 404
    r = client.post("/v1/sessions/s1/compact", json={})
    assert (
        r.status_code == 200 and r.json()["compacted"] and r.json()["entry"]["payload"]["reason"] == "request"
    )

    from gateway.cli import app as cli_app

    runner = CliRunner()
    res = runner.invoke(cli_app, ["sessions", "list", "--url", str(db)])
    assert res.exit_code == 0 and "s1" in res.output and "f1" in res.output
    res = runner.invoke(cli_app, ["sessions", "show", "s1", "--url", str(db), "--width", "400"])
    assert res.exit_code == 0 and "compaction (request" in res.output and "label" in res.output
    res = runner.invoke(cli_app, ["sessions", "show", "nope", "--url", str(db)])
    assert res.exit_code == 1
