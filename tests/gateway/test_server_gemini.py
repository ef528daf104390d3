"""The Gemini routes of the app (gateway/server.py): the verb after the model's colon, ``alt=sse``,
the model list in Gemini's shape, ``?key=`` as the caller's key."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.requests import Request
from starlette.testclient import TestClient

from gateway import server
from gateway.config import Settings, parse_config

BODY = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    cfg = parse_config(
        {
            "server": {"db_path": str(tmp_path / "t.db")},
            "deployments": [
                {"name": "demo", "api": "demo", "model": "turnstile-demo", "price": {"input": 0, "output": 0}}
            ],
            "mcp": {"servers": []},
        }
    )
    with TestClient(server.create_app(cfg, settings=Settings())) as c:
        yield c


def test_generate_content_answers_under_v1beta_and_v1(client: TestClient) -> None:
    for prefix in ("/v1beta", "/v1"):
        r = client.post(f"{prefix}/models/demo:generateContent", json=BODY)
        assert r.status_code == 200, r.text
        assert r.json()["candidates"][0]["finishReason"] == "STOP"
        assert r.headers["x-turnstile-deployment"] == "demo"


def test_stream_generate_content_needs_alt_sse(client: TestClient) -> None:
    r = client.post("/v1beta/models/demo:streamGenerateContent", json=BODY)
    assert r.status_code == 400
    assert r.json()["error"]["status"] == "INVALID_ARGUMENT" and r.json()["error"]["message"].startswith(
        "alt:"
    )
    r = client.post("/v1beta/models/demo:streamGenerateContent?alt=sse", json=BODY)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
    assert r.text.startswith("data: ")


def test_an_unknown_verb_or_model_answers_in_gemini_shape(client: TestClient) -> None:
    r = client.post("/v1beta/models/demo:embedContent", json=BODY)
    assert r.status_code == 404 and r.json()["error"]["status"] == "NOT_FOUND"
    r = client.post("/v1beta/models/nope:generateContent", json=BODY)
    assert r.status_code == 404 and r.json()["error"]["code"] == 404
    r = client.get("/v1beta/models/nope")
    assert r.status_code == 404 and r.json()["error"]["status"] == "NOT_FOUND"


def test_count_tokens_answers_total_tokens(client: TestClient) -> None:
    r = client.post("/v1beta/models/demo:countTokens", json=BODY)
    assert r.status_code == 200 and r.json()["totalTokens"] > 0


def test_the_model_list_is_in_gemini_shape_for_google_clients_only(client: TestClient) -> None:
    assert client.get("/v1beta/models").json()["models"][0]["name"] == "models/demo"
    assert "models" in client.get("/v1/models", headers={"x-goog-api-client": "google-genai-sdk/1"}).json()
    assert "models" in client.get("/v1/models?key=k").json()
    assert client.get("/v1/models").json()["object"] == "list"
    one = client.get("/v1/models/demo", headers={"x-goog-api-key": "k"}).json()
    assert one["name"] == "models/demo" and "generateContent" in one["supportedGenerationMethods"]
    assert client.get("/v1/models/demo").json()["id"] == "demo"


def test_a_key_in_the_query_becomes_the_callers_key_header() -> None:
    scope: dict[str, Any] = {
        "type": "http",
        "method": "POST",
        "path": "/",
        "headers": [],
        "query_string": b"key=abc",
    }
    server._key_from_query(Request(scope))
    assert (b"x-goog-api-key", b"abc") in scope["headers"]
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/",
        "headers": [(b"x-goog-api-key", b"h")],
        "query_string": b"key=q",
    }
    server._key_from_query(Request(scope))
    assert scope["headers"] == [(b"x-goog-api-key", b"h")]
