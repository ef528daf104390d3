"""Request bounds through the real server: JSON nested past ``server.max_json_depth`` in any
free-form field, and more messages or parts than the limits, on every endpoint that takes a
turn (``count_tokens`` too). Each is refused in the client's dialect naming the field or the
limit, with one transcript row, nothing upstream, and the server keeps serving."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from standins import recordings
from standins.drive import ask, user
from standins.topology import MATRIX
from standins.upstream import UpstreamStandin, replay
from standins.wirekit import recorded_text, transcript_count, transcript_row

PATHS = {
    "openai": "/v1/chat/completions",
    "anthropic": "/v1/messages",
    "count_tokens": "/v1/messages/count_tokens",
}
MODEL = MATRIX["openai_chat"][0]


def _deep(levels: int) -> dict[str, Any]:
    value: Any = {}
    for _ in range(levels - 1):
        value = {"a": value}
    return value


def _base(dialect: str) -> dict[str, Any]:
    body: dict[str, Any] = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}]}
    if dialect == "anthropic":
        body["max_tokens"] = 16
    return body


def _with(dialect: str, field: str, value: Any) -> dict[str, Any]:
    body = _base(dialect)
    if field == "metadata":
        body["metadata"] = value
    elif field == "system[0].cache_control":
        body["system"] = [{"type": "text", "text": "s", "cache_control": value}]
    elif field == "tools[0].function.parameters":
        body["tools"] = [{"type": "function", "function": {"name": "f", "parameters": value}}]
    elif field == "tools[0].input_schema":
        body["tools"] = [{"name": "f", "input_schema": value}]
    elif field == "response_format.json_schema.schema":
        body["response_format"] = {"type": "json_schema", "json_schema": {"name": "x", "schema": value}}
    elif field == "output_config.format.schema":
        body["output_config"] = {"format": {"type": "json_schema", "schema": value}}
    elif field == "messages[1].tool_calls[0].function.arguments":
        call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": json.dumps(value)}}
        body["messages"] += [
            {"role": "assistant", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": "ok"},
        ]
    elif field == "messages[1].content[0].input":
        body["messages"] += [
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": value}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]},
        ]
    else:
        raise AssertionError(field)
    return body


CASES = [
    ("openai", "metadata"),
    ("openai", "tools[0].function.parameters"),
    ("openai", "response_format.json_schema.schema"),
    ("openai", "messages[1].tool_calls[0].function.arguments"),
    ("anthropic", "metadata"),
    ("anthropic", "tools[0].input_schema"),
    ("anthropic", "output_config.format.schema"),
    ("anthropic", "messages[1].content[0].input"),
    ("count_tokens", "metadata"),
    ("count_tokens", "tools[0].input_schema"),
    ("count_tokens", "messages[1].content[0].input"),
]


def _post(gateway_url: str, endpoint: str, body: dict[str, Any]) -> httpx.Response:
    raw = json.dumps(body).encode()  # the stdlib encoder writes any depth
    headers = {"content-type": "application/json", "x-api-key": "k", "anthropic-version": "2023-06-01"}
    # count_tokens imports litellm on its first call: seconds on a busy machine
    return httpx.post(f"{gateway_url}{PATHS[endpoint]}", content=raw, headers=headers, timeout=120)


def _error(endpoint: str, resp: httpx.Response) -> dict[str, Any]:
    body = resp.json()
    if endpoint == "openai":
        assert set(body) == {"error"}, body
        return dict(body["error"])
    assert body["type"] == "error", body
    return dict(body["error"])


def _assert_still_serves(gateway_url: str, upstream: UpstreamStandin, endpoint: str) -> None:
    ex = recordings.common("openai_chat", "simple", False)[0]
    upstream.script(replay(ex, api="openai_chat"))
    dialect = "openai" if endpoint == "openai" else "anthropic"
    resp = _post(gateway_url, dialect, _base(dialect))
    assert resp.status_code == 200, resp.text
    text = (
        resp.json()["choices"][0]["message"]["content"]
        if dialect == "openai"
        else resp.json()["content"][0]["text"]
    )
    assert text == recorded_text(ex, "openai_chat")


@pytest.mark.parametrize(("endpoint", "field"), CASES, ids=[f"{e}:{f}" for e, f in CASES])
@pytest.mark.parametrize("levels", [300, 70], ids=["past-orjson", "past-limit"])
def test_json_nested_past_the_limit_is_400_naming_the_field_with_one_row(
    endpoint: str, field: str, levels: int, gateway_url: str, upstream: UpstreamStandin, db_path: Any
) -> None:
    resp = _post(
        gateway_url,
        endpoint,
        _with("anthropic" if endpoint == "count_tokens" else endpoint, field, _deep(levels)),
    )

    assert resp.status_code == 400, resp.text
    err = _error(endpoint, resp)
    assert err["type"] == "invalid_request_error"
    assert err["message"].startswith(f"{field}: JSON nested more than 64 levels"), err
    if endpoint == "openai":
        assert err["param"] == field
    rid = resp.headers["x-turnstile-request-id"]
    row = transcript_row(db_path, rid)
    assert row["status"] == 400 and row["error"].startswith(field)
    assert transcript_count(db_path, rid) == 1
    assert upstream.received == []
    _assert_still_serves(gateway_url, upstream, endpoint)


@pytest.mark.parametrize("endpoint", ["openai", "anthropic", "count_tokens"])
def test_json_nested_up_to_the_limit_is_served(
    endpoint: str, gateway_url: str, upstream: UpstreamStandin
) -> None:
    ex = recordings.common("openai_chat", "simple", False)[0]
    upstream.script(replay(ex, api="openai_chat"))
    # Anthropic metadata holds only user_id (any other key is refused by name): a free-form
    # object of that dialect instead, three levels down (64 in all, as metadata's 63 + 1)
    dialect = "anthropic" if endpoint == "count_tokens" else endpoint
    field, value = ("metadata", _deep(63)) if dialect == "openai" else ("system[0].cache_control", _deep(61))
    resp = _post(gateway_url, endpoint, _with(dialect, field, value))
    assert resp.status_code == 200, resp.text


@pytest.mark.parametrize("stream", [False, True], ids=["nonstream", "stream"])
@pytest.mark.parametrize("dialect", ["openai", "anthropic"])
def test_deep_json_in_a_streaming_request_is_refused_before_the_stream_starts(
    dialect: str, stream: bool, oai: Any, ant: Any, upstream: UpstreamStandin
) -> None:
    import anthropic
    import openai

    sdk = openai if dialect == "openai" else anthropic
    with pytest.raises(sdk.BadRequestError) as exc:
        ask(
            dialect,
            oai if dialect == "openai" else ant,
            model=MODEL,
            stream=stream,
            messages=[user(dialect, "hi")],
            extra_body={"metadata": _deep(100)},
        )
    assert "metadata: JSON nested more than 64 levels" in str(exc.value)
    assert upstream.received == []


@pytest.mark.parametrize("endpoint", ["openai", "anthropic", "count_tokens"])
def test_more_messages_than_the_limit_is_413_naming_the_limit_with_one_row(
    endpoint: str, gateway_url: str, upstream: UpstreamStandin, db_path: Any
) -> None:
    body = _base("anthropic" if endpoint == "count_tokens" else endpoint)
    body["messages"] = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok"}] * 2_501
    resp = _post(gateway_url, endpoint, body)

    assert resp.status_code == 413, resp.text
    err = _error(endpoint, resp)
    assert "5002 messages" in err["message"] and "server.max_request_messages" in err["message"]
    assert "at most 5000" in err["message"]
    rid = resp.headers["x-turnstile-request-id"]
    assert transcript_row(db_path, rid)["status"] == 413
    assert transcript_count(db_path, rid) == 1
    assert upstream.received == []


def test_count_tokens_answers_an_unexpected_failure_as_a_json_error_in_its_dialect(
    gateway_url: str, wire_servers: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from gateway.edges import anthropic_messages

    def broken(*_: Any, **__: Any) -> Any:
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(anthropic_messages, "render_count_tokens", broken)
    resp = _post(gateway_url, "count_tokens", _base("anthropic"))
    assert resp.status_code == 500
    err = _error("count_tokens", resp)
    assert err["type"] == "api_error" and "see its log" in err["message"]


def _tools(dialect: str, schemas: list[dict[str, Any]]) -> list[dict[str, Any]]:
    if dialect == "openai":
        fns = [{"name": f"tool_{i}", "parameters": s} for i, s in enumerate(schemas)]
        return [{"type": "function", "function": f} for f in fns]
    return [{"name": f"tool_{i}", "input_schema": s} for i, s in enumerate(schemas)]


def _properties(n: int) -> dict[str, Any]:
    """An object schema of ``2 * n + 3`` JSON values."""
    return {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(n)}}


@pytest.mark.parametrize("endpoint", ["openai", "anthropic", "count_tokens"])
def test_more_tools_than_the_limit_is_413_naming_the_limit_with_one_row(
    endpoint: str, gateway_url: str, upstream: UpstreamStandin, db_path: Any
) -> None:
    dialect = "anthropic" if endpoint == "count_tokens" else endpoint
    body = _base(dialect)
    body["tools"] = _tools(dialect, [{"type": "object"}] * 513)
    resp = _post(gateway_url, endpoint, body)

    assert resp.status_code == 413, resp.text
    err = _error(endpoint, resp)
    assert err["message"] == (
        "tools: 513 tools; at most 512 are accepted per request (limit server.max_request_tools)"
    )
    if endpoint == "openai":
        assert err["param"] == "tools"
    rid = resp.headers["x-turnstile-request-id"]
    assert transcript_row(db_path, rid)["status"] == 413
    assert transcript_count(db_path, rid) == 1
    assert upstream.received == []
    _assert_still_serves(gateway_url, upstream, endpoint)


@pytest.mark.parametrize("endpoint", ["openai", "anthropic", "count_tokens"])
def test_a_tool_schema_past_the_node_limit_is_413_naming_the_tool_with_one_row(
    endpoint: str, gateway_url: str, upstream: UpstreamStandin, db_path: Any
) -> None:
    dialect = "anthropic" if endpoint == "count_tokens" else endpoint
    big = _properties(5_000)  # 10,003 nodes
    body = _base(dialect)
    body["tools"] = _tools(dialect, [{"type": "object"}, big])
    resp = _post(gateway_url, endpoint, body)

    assert resp.status_code == 413, resp.text
    err = _error(endpoint, resp)
    field = "tools[1].function.parameters" if dialect == "openai" else "tools[1].input_schema"
    assert err["message"] == (
        f"{field}: the input schema of tool 'tool_1' has more than 10000 JSON nodes; at most 10000 are "
        "accepted per tool (limit server.max_tool_schema_nodes)"
    )
    if endpoint == "openai":
        assert err["param"] == field
    rid = resp.headers["x-turnstile-request-id"]
    assert transcript_row(db_path, rid)["status"] == 413
    assert transcript_count(db_path, rid) == 1
    assert upstream.received == []
    _assert_still_serves(gateway_url, upstream, endpoint)


@pytest.mark.parametrize("dialect", ["openai", "anthropic"])
def test_tools_up_to_the_limits_are_served(dialect: str, gateway_url: str, upstream: UpstreamStandin) -> None:
    ex = recordings.common("openai_chat", "simple", False)[0]
    upstream.script(replay(ex, api="openai_chat"))
    near = _properties(4_998)  # 9,999 nodes
    body = _base(dialect)
    body["tools"] = _tools(dialect, [near] + [{"type": "object"}] * 511)
    resp = _post(gateway_url, dialect, body)
    assert resp.status_code == 200, resp.text
