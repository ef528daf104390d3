"""Nothing an upstream controls reaches a response header unescaped: tool-call ids with CR/LF,
NUL or characters outside Latin-1 (both client dialects, streamed and whole, on the normal and
the truncated-tool-call paths that list ids in ``x-turnstile-withheld-tool-calls``) and absurd
``retry-after`` values still get a well-formed HTTP answer. The client here is httpx (its h11
parser refuses a malformed header block, as every strict client does). An id the edge would
refuse from a client (CR/LF, NUL) reaches the client as its safe replacement
(``tests/wire/test_upstream_call_ids.py``); a usable one (outside Latin-1) exactly."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import unquote

import httpx
import pytest
from standins.tool_answers import LENGTH_STOP, Call, tool_call_answer
from standins.topology import MATRIX
from standins.upstream import UpstreamStandin, http_error, replay

from gateway.call_id_rule import unusable_call_id
from gateway.guards.upstream_ids import safe_call_id

HOSTILE_IDS = {
    "crlf": "call_a\r\nx-injected: 1",
    "nul": "call_\x00b",
    "non-latin1": "call_调用_😀",
}
TOOL = {
    "name": "add",
    "description": "Add two numbers",
    "parameters": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}},
}


def _post(gateway_url: str, dialect: str, model: str, stream: bool) -> httpx.Response:
    if dialect == "openai":
        path = "/v1/chat/completions"
        body: dict[str, Any] = {
            "model": model,
            "max_tokens": 500,
            "messages": [{"role": "user", "content": "add 2 and 3"}],
            "tools": [{"type": "function", "function": TOOL}],
        }
    else:
        path = "/v1/messages"
        body = {
            "model": model,
            "max_tokens": 500,
            "messages": [{"role": "user", "content": "add 2 and 3"}],
            "tools": [
                {"name": TOOL["name"], "description": TOOL["description"], "input_schema": TOOL["parameters"]}
            ],
        }
    if stream:
        body["stream"] = True
    with httpx.Client(base_url=gateway_url, timeout=15) as client:
        resp = client.post(path, json=body)
        resp.read()
        return resp


def _assert_printable_ascii_headers(resp: httpx.Response) -> None:
    for name, value in resp.headers.raw:
        assert all(0x20 <= b < 0x7F for b in value), (name, value)


@pytest.mark.parametrize("dialect", ["openai", "anthropic"])
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize("api", ["openai_chat", "anthropic_messages"])
@pytest.mark.parametrize("kind", sorted(HOSTILE_IDS))
@pytest.mark.parametrize("truncated", [False, True], ids=["complete", "truncated"])
def test_an_upstream_tool_call_id_with_hostile_characters_gets_a_well_formed_http_answer(
    dialect: str,
    stream: bool,
    api: str,
    kind: str,
    truncated: bool,
    upstream: UpstreamStandin,
    gateway_url: str,
) -> None:
    upstream_id = HOSTILE_IDS[kind]
    call_id = upstream_id if unusable_call_id(upstream_id) is None else safe_call_id(upstream_id)
    answer = tool_call_answer(
        api,
        [Call(upstream_id, "add", '{"a": 2, "b": 3}')],
        stream=stream,
        stop=LENGTH_STOP[api] if truncated else None,
    )
    upstream.script(replay(answer, api=api))

    resp = _post(gateway_url, dialect, MATRIX[api][0], stream)

    assert resp.status_code == 200, resp.text
    _assert_printable_ascii_headers(resp)
    assert "x-injected" not in resp.headers
    if stream:
        frames = [json.loads(line[5:]) for line in resp.text.splitlines() if line.startswith("data: {")]
        listed = [w["id"] for f in frames for w in (f.get("turnstile") or {}).get("withheld_tool_calls", [])]
        assert listed == ([call_id] if truncated else []), "a withheld call is listed with its id"
    else:
        body = resp.json()
        if truncated:
            withheld = body["turnstile"]["withheld_tool_calls"]
            assert [w["id"] for w in withheld] == [call_id], "the body keeps the id"
            header = resp.headers["x-turnstile-withheld-tool-calls"]
            assert [unquote(item) for item in header.split(",")] == [call_id], "the header decodes to it"
        else:
            sent = json.dumps(body)
            assert json.dumps(call_id)[1:-1] in sent, "the id reaches the client in the body"
            if call_id != upstream_id:
                assert json.dumps(upstream_id)[1:-1] not in sent, "the unusable id does not"


@pytest.mark.parametrize("dialect", ["openai", "anthropic"])
@pytest.mark.parametrize("retry_after", ["1e400", "99999999999999999999999", "inf"])
def test_an_upstream_retry_after_too_large_for_a_number_still_gets_a_well_formed_429(
    dialect: str, retry_after: str, upstream: UpstreamStandin, gateway_url: str
) -> None:
    rate_limited = {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}
    upstream.script(http_error(429, rate_limited, api="anthropic_messages", retry_after=retry_after))

    resp = _post(gateway_url, dialect, MATRIX["anthropic_messages"][0], stream=False)

    assert resp.status_code == 429, resp.text
    _assert_printable_ascii_headers(resp)
    value = resp.headers.get("retry-after")
    assert value is None or (value.isdigit() and int(value) >= 1)
