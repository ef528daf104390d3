"""Bad client input through the real server: malformed JSON, wrong types, unknown model, empty
messages, a body over ``server.max_body_bytes``. Each gets a 4xx in the client's dialect that
names the field, nothing goes upstream, and the server keeps serving."""

from __future__ import annotations

from typing import Any

import anthropic
import httpx
import openai
import pytest
from standins import recordings
from standins.drive import ask, user
from standins.topology import MATRIX, MAX_BODY_BYTES
from standins.upstream import UpstreamStandin, replay
from standins.wirekit import recorded_text

PATHS = {"openai": "/v1/chat/completions", "anthropic": "/v1/messages"}


def _post_raw(gateway_url: str, dialect: str, body: bytes) -> httpx.Response:
    headers = {"content-type": "application/json"}
    headers.update(
        {"authorization": "Bearer sk-client"}
        if dialect == "openai"
        else {"x-api-key": "sk-ant-client", "anthropic-version": "2023-06-01"}
    )
    return httpx.post(f"{gateway_url}{PATHS[dialect]}", content=body, headers=headers, timeout=10)


def _error(dialect: str, body: dict[str, Any]) -> dict[str, Any]:
    """The error object of a dialect error body, checking the envelope."""
    if dialect == "openai":
        assert set(body) == {"error"}, body
        assert body["error"]["message"]
        return dict(body["error"])
    assert body["type"] == "error", body
    assert body["error"]["message"]
    return dict(body["error"])


def _assert_still_serves(dialect: str, client: Any, upstream: UpstreamStandin) -> None:
    ex = recordings.common("openai_chat", "simple", False)[0]
    upstream.script(replay(ex, api="openai_chat"))
    turn = ask(dialect, client, model=MATRIX["openai_chat"][0], stream=False, messages=[user(dialect, "hi")])
    assert turn.text == recorded_text(ex, "openai_chat")


@pytest.mark.parametrize("dialect", ["openai", "anthropic"])
def test_malformed_json_is_400_in_dialect_and_nothing_goes_upstream(
    dialect: str, gateway_url: str, upstream: UpstreamStandin, oai: Any, ant: Any
) -> None:
    resp = _post_raw(gateway_url, dialect, b'{"model": "oa", "messages": [')
    assert resp.status_code == 400
    err = _error(dialect, resp.json())
    assert err["type"] == "invalid_request_error"
    assert "json" in err["message"].lower()
    assert resp.headers.get("x-turnstile-request-id")
    assert upstream.received == []
    _assert_still_serves(dialect, oai if dialect == "openai" else ant, upstream)


@pytest.mark.parametrize("dialect", ["openai", "anthropic"])
def test_body_that_is_not_an_object_is_400(dialect: str, gateway_url: str, upstream: UpstreamStandin) -> None:
    resp = _post_raw(gateway_url, dialect, b'["not", "an", "object"]')
    assert resp.status_code == 400
    assert _error(dialect, resp.json())["type"] == "invalid_request_error"
    assert upstream.received == []


WRONG_TYPES = [
    ("temperature", "hot", "temperature"),
    ("max_tokens", "lots", "max_tokens"),
    ("messages", "hello", "messages"),
]


@pytest.mark.parametrize("dialect", ["openai", "anthropic"])
@pytest.mark.parametrize(("field", "value", "named"), WRONG_TYPES, ids=[w[0] for w in WRONG_TYPES])
def test_wrong_type_is_400_naming_the_field(
    dialect: str, field: str, value: Any, named: str, upstream: UpstreamStandin, oai: Any, ant: Any
) -> None:
    kwargs: dict[str, Any] = {
        "model": MATRIX["openai_chat"][0],
        "max_tokens": 64,  # wrong value replaces it
        "messages": [{"role": "user", "content": "hi"}],
        field: value,
    }
    sdk = openai if dialect == "openai" else anthropic
    with pytest.raises(sdk.BadRequestError) as exc:
        if dialect == "openai":
            oai.chat.completions.create(**kwargs)
        else:  # this SDK version has no ``temperature`` argument; the body field still exists
            ant.messages.create(
                model=kwargs["model"],
                max_tokens=64,
                messages=[{"role": "user", "content": "hi"}],
                extra_body={field: value},
            )
    err = _error(dialect, exc.value.response.json())
    assert err["type"] == "invalid_request_error"
    assert named in err["message"] or err.get("param") == named, err
    if dialect == "openai":
        assert err.get("param") == named
    assert upstream.received == []
    _assert_still_serves(dialect, oai if dialect == "openai" else ant, upstream)


@pytest.mark.parametrize("dialect", ["openai", "anthropic"])
def test_wrong_type_deep_in_a_message_names_its_path(
    dialect: str, upstream: UpstreamStandin, oai: Any, ant: Any
) -> None:
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": 42}]
    sdk = openai if dialect == "openai" else anthropic
    with pytest.raises(sdk.BadRequestError) as exc:
        if dialect == "openai":
            oai.chat.completions.create(model="oa", messages=messages)
        else:
            ant.messages.create(model="oa", max_tokens=64, messages=messages)
    err = _error(dialect, exc.value.response.json())
    assert "messages[1].content" in err["message"] or err.get("param") == "messages[1].content", err
    assert upstream.received == []


@pytest.mark.parametrize("dialect", ["openai", "anthropic"])
def test_unknown_model_is_404_naming_the_model(
    dialect: str, upstream: UpstreamStandin, oai: Any, ant: Any
) -> None:
    sdk = openai if dialect == "openai" else anthropic
    with pytest.raises(sdk.NotFoundError) as exc:
        ask(
            dialect,
            oai if dialect == "openai" else ant,
            model="no-such-model-xyz",
            stream=False,
            messages=[user(dialect, "hi")],
        )
    err = _error(dialect, exc.value.response.json())
    assert "no-such-model-xyz" in err["message"]
    if dialect == "openai":
        assert err.get("param") == "model"
    else:
        assert err["type"] == "not_found_error"
    assert upstream.received == []
    _assert_still_serves(dialect, oai if dialect == "openai" else ant, upstream)


@pytest.mark.parametrize("dialect", ["openai", "anthropic"])
@pytest.mark.parametrize("stream", [False, True], ids=["nonstream", "stream"])
def test_empty_messages_is_400_naming_messages(
    dialect: str, stream: bool, upstream: UpstreamStandin, oai: Any, ant: Any
) -> None:
    sdk = openai if dialect == "openai" else anthropic
    with pytest.raises(sdk.BadRequestError) as exc:
        ask(dialect, oai if dialect == "openai" else ant, model="oa", stream=stream, messages=[])
    err = _error(dialect, exc.value.response.json())
    assert err["type"] == "invalid_request_error"
    assert "messages" in err["message"]
    if dialect == "openai":
        assert err.get("param") == "messages"
    assert upstream.received == []


@pytest.mark.parametrize("dialect", ["openai", "anthropic"])
def test_body_over_limit_is_413_and_server_keeps_serving(
    dialect: str, upstream: UpstreamStandin, oai: Any, ant: Any
) -> None:
    big = "x" * (MAX_BODY_BYTES + 1024)
    sdk = openai if dialect == "openai" else anthropic
    with pytest.raises(sdk.APIStatusError) as exc:
        ask(
            dialect,
            oai if dialect == "openai" else ant,
            model="oa",
            stream=False,
            messages=[user(dialect, big)],
        )
    assert exc.value.status_code == 413
    err = _error(dialect, exc.value.response.json())
    assert str(MAX_BODY_BYTES) in err["message"]
    if dialect == "openai":
        assert err.get("param") == "body"
    else:
        assert err["type"] == "request_too_large"
    assert upstream.received == []
    _assert_still_serves(dialect, oai if dialect == "openai" else ant, upstream)


@pytest.mark.parametrize("dialect", ["openai", "anthropic"])
def test_chunked_body_over_limit_without_content_length_is_413(
    dialect: str, gateway_url: str, upstream: UpstreamStandin
) -> None:
    def chunks() -> Any:
        yield b'{"model": "oa", "max_tokens": 8, "messages": [{"role": "user", "content": "'
        for _ in range(MAX_BODY_BYTES // 4096 + 2):
            yield b"y" * 4096
        yield b'"}]}'

    headers = {
        "content-type": "application/json",
        "authorization": "Bearer k",
        "x-api-key": "k",
        "anthropic-version": "2023-06-01",
    }
    resp = httpx.post(f"{gateway_url}{PATHS[dialect]}", content=chunks(), headers=headers, timeout=10)
    assert resp.status_code == 413
    _error(dialect, resp.json())
    assert upstream.received == []


@pytest.mark.parametrize("dialect", ["openai", "anthropic"])
def test_a_request_refused_while_reading_still_gets_one_transcript_row(
    dialect: str, gateway_url: str, upstream: UpstreamStandin, db_path: Any
) -> None:
    from standins.wirekit import transcript_row

    resp = _post_raw(gateway_url, dialect, b'{"model": "oa", "messages": [')
    assert resp.status_code == 400
    row = transcript_row(db_path, resp.headers["x-turnstile-request-id"])
    assert row["status"] == 400 and row["guard_outcome"] == "invalid_request" and "JSON" in row["error"]


def test_unknown_path_is_404_without_a_model_code(gateway_url: str) -> None:
    resp = httpx.post(gateway_url + "/v1/nope", json={})
    assert resp.status_code == 404
    assert resp.json()["error"]["code"] is None and "/v1/nope" in resp.json()["error"]["message"]
    resp = httpx.post(gateway_url + "/v1/messages/nope", json={})
    assert resp.status_code == 404
    body = resp.json()["error"]
    assert body["type"] == "not_found_error" and body["message"] == "no route for POST /v1/messages/nope"


def test_anthropic_temperature_above_one_is_400(gateway_url: str, upstream: UpstreamStandin) -> None:
    body = {
        "model": MATRIX["openai_chat"][0],
        "max_tokens": 10,
        "temperature": 1.5,
        "messages": [{"role": "user", "content": "hi"}],
    }
    resp = httpx.post(gateway_url + "/v1/messages", json=body)
    assert resp.status_code == 400
    assert resp.json()["error"]["message"] == "temperature must be between 0 and 1, got 1.5"
    assert upstream.received == []
