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


class Gate(DemoProvider):
    """The demo provider holding every answer until ``n`` requests have arrived: all turns
    read the session before any answer is recorded (a deterministic worst case)."""

    def __init__(self, n: int) -> None:
        self.n, self.seen = n, 0
        self.released: Any = None
        self.asked: list[str] = []

    async def complete(self, request: Request, deployment: Deployment, api_key: str | None) -> Response:
        import asyncio

        if self.released is None:
            self.released = asyncio.Event()
        self.seen += 1
        self.asked.append(request.messages[-1].content[0].text)  # type: ignore[union-attr]
        if self.seen >= self.n:
            self.released.set()
        await asyncio.wait_for(self.released.wait(), timeout=30)
        return await super().complete(request, deployment, api_key)


def test_parallel_turns_on_one_session_keep_each_answer_under_its_question(tmp_path: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    n = 30
    db = tmp_path / "t.db"
    cfg = GatewayConfig(deployments=[Deployment(name="demo", api="demo", model="turnstile-demo")])
    cfg.server.db_path = str(db)
    gate = Gate(n)
    app = create_app(config=cfg, settings=Settings(db_path=db, log_level="warning"), providers={"demo": gate})
    with TestClient(app) as client:
        with ThreadPoolExecutor(n) as pool:
            outs = list(
                pool.map(
                    lambda i: chat(
                        client, [{"role": "user", "content": f"question {i}"}], session="par", model="demo"
                    ),
                    range(n),
                )
            )
        body = client.get("/v1/sessions/par").json()
    for i, out in enumerate(outs):
        assert out["choices"][0]["message"]["content"].endswith(f"You said: question {i}")
    # every upstream request ended with its own question
    assert sorted(gate.asked) == sorted(f"question {i}" for i in range(n))
    by_id = {e["id"]: e for e in body["entries"]}
    assert len(by_id) == 2 * n

    def text(e: dict[str, Any]) -> str:
        return str(e["payload"]["message"]["content"][0]["text"])

    answers = [e for e in by_id.values() if e["payload"]["message"]["role"] == "assistant"]
    assert len(answers) == n
    for a in answers:
        q = by_id[a["parent_id"]]
        assert q["payload"]["message"]["role"] == "user" and text(a).endswith("You said: " + text(q))
    for prev, cur in zip(body["path"], body["path"][1:], strict=False):
        assert cur["parent_id"] == prev["id"]


@pytest.mark.parametrize(
    ("headers", "body_extra", "param"),
    [
        ({"x-turnstile-session": "x" * 5000}, {}, "x-turnstile-session"),
        ({"x-turnstile-session": "a/b"}, {}, "x-turnstile-session"),
        ({}, {"metadata": {"turnstile_session": "a b"}}, "metadata.turnstile_session"),
        ({}, {"user": "session:../x"}, "user"),
    ],
)
def test_a_turn_with_an_unaddressable_session_id_is_400_and_creates_nothing(
    app_client: tuple[TestClient, Recording, Path],
    headers: dict[str, str],
    body_extra: dict[str, Any],
    param: str,
) -> None:
    client, provider, _ = app_client
    r = client.post(
        "/v1/chat/completions",
        json={"model": "demo", "messages": [{"role": "user", "content": "hi"}], **body_extra},
        headers=headers,
    )
    assert r.status_code == 400, r.text
    err = r.json()["error"]
    assert err["param"] == param and "A-Z, a-z, 0-9" in err["message"]
    assert client.get("/v1/sessions").json()["data"] == []
    assert provider.requests == []


def test_a_session_id_with_allowed_punctuation_is_readable(
    app_client: tuple[TestClient, Recording, Path],
) -> None:
    client, _, _ = app_client
    chat(client, [{"role": "user", "content": "hi"}], session="team.a:conv-1_x", model="demo")
    assert client.get("/v1/sessions/team.a:conv-1_x").json()["entry_count"] == 2


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"session_id": 123}, "session_id"),
        ({"title": ["x"]}, "title"),
        ({"entry_id": {}}, "entry_id"),
        ({"session_id": "a/b"}, "session_id"),
    ],
)
def test_fork_with_a_wrongly_typed_field_is_400_naming_it(
    app_client: tuple[TestClient, Recording, Path], body: dict[str, Any], param: str
) -> None:
    client, _, _ = app_client
    chat(client, [{"role": "user", "content": "q"}], model="demo")
    r = client.post("/v1/sessions/s1/fork", json=body)
    assert r.status_code == 400 and r.json()["error"]["param"] == param, r.text
    assert [s["id"] for s in client.get("/v1/sessions").json()["data"]] == ["s1"]


@pytest.mark.parametrize(
    "query",
    ["limit=99999999999999999999999", "limit=0", "limit=1001", "limit=-1", "limit=%C2%B2", "offset=1e3"],
)
def test_list_sessions_with_a_bad_limit_is_400_naming_it(
    app_client: tuple[TestClient, Recording, Path], query: str
) -> None:
    client, _, _ = app_client
    r = client.get(f"/v1/sessions?{query}")
    assert r.status_code == 400 and r.json()["error"]["param"] == query.split("=")[0], r.text
    assert client.get("/v1/sessions?limit=1000&offset=0").status_code == 200


def test_a_label_on_another_sessions_entry_is_404_naming_it(
    app_client: tuple[TestClient, Recording, Path],
) -> None:
    client, _, _ = app_client
    chat(client, [{"role": "user", "content": "a"}], session="A", model="demo")
    chat(client, [{"role": "user", "content": "b"}], session="B", model="demo")
    entry_of_b = client.get("/v1/sessions/B").json()["path"][0]["id"]
    r = client.post(f"/v1/sessions/A/entries/{entry_of_b}/label", json={"label": "x"})
    assert r.status_code == 404 and entry_of_b in r.json()["error"]["message"]
    assert r.json()["error"]["param"] == "entry"
    assert len(client.get("/v1/sessions/A").json()["entries"]) == 2


def test_cli_read_commands_never_create_a_database(
    app_client: tuple[TestClient, Recording, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gateway.cli import app as cli_app

    client, _, db = app_client
    chat(client, [{"role": "user", "content": "q"}], model="demo")
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)
    runner = CliRunner()
    res = runner.invoke(cli_app, ["sessions", "list", "--url", "mysql://x"])
    assert res.exit_code == 2 and "unsupported session store URL scheme 'mysql'" in res.output
    missing = tmp_path / "nothing" / "x.db"
    for url in (f"sqlite://{missing}", str(missing)):
        res = runner.invoke(cli_app, ["sessions", "list", "--url", url])
        assert res.exit_code == 0 and f"no sessions at {missing} yet" in res.output, res.output
        res = runner.invoke(cli_app, ["sessions", "show", "s1", "--url", url])
        assert res.exit_code == 0 and "no sessions at" in res.output
    assert list(work.iterdir()) == [] and not missing.parent.exists()
    res = runner.invoke(cli_app, ["sessions", "list", "--url", f"sqlite://{db}"])  # sqlite:///abs/path
    assert res.exit_code == 0 and "s1" in res.output
    bad = tmp_path / "bad.yaml"
    bad.write_text("server: [unclosed\n")
    res = runner.invoke(cli_app, ["sessions", "list", "--config", str(bad)])
    assert res.exit_code == 2 and "configuration error" in res.output and "not valid YAML" in res.output
    assert res.exception is None or isinstance(res.exception, SystemExit)
    assert "Traceback" not in res.output
