"""An upstream that says it called tools (``tool_calls`` / ``tool_use`` / ``STOP``) while its
output usage reached the request's output budget did not finish those calls: through the real
gateway, in both client dialects, streamed and whole, the client gets stop reason ``length``, no
executable call, and the withheld call reported (header for a whole answer, body for both)."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import unquote

import httpx
import pytest
from standins.tool_answers import Call, tool_call_answer
from standins.topology import MATRIX
from standins.upstream import UpstreamStandin, replay

BUDGET = 128
TOOL = {"name": "write", "description": "Write a file", "parameters": {"type": "object", "properties": {}}}


def _ask(gateway_url: str, dialect: str, model: str, stream: bool) -> tuple[httpx.Response, dict[str, Any]]:
    """The raw response and what the client learned: ``stop``, ``calls``, ``withheld``."""
    if dialect == "openai":
        path = "/v1/chat/completions"
        body: dict[str, Any] = {
            "model": model,
            "max_tokens": BUDGET,
            "tools": [{"type": "function", "function": TOOL}],
        }
    else:
        path = "/v1/messages"
        body = {
            "model": model,
            "max_tokens": BUDGET,
            "tools": [{"name": "write", "description": "Write a file", "input_schema": TOOL["parameters"]}],
        }
    body["messages"] = [{"role": "user", "content": "write /tmp/a"}]
    if stream:
        body["stream"] = True
        if dialect == "openai":
            body["stream_options"] = {"include_usage": True}
    resp = httpx.post(gateway_url + path, json=body, timeout=15)
    seen: dict[str, Any] = {"calls": [], "withheld": [], "stop": None}
    if not stream:
        data = resp.json()
        if dialect == "openai":
            choice = data["choices"][0]
            seen["stop"] = choice["finish_reason"]
            seen["calls"] = [c["id"] for c in choice["message"].get("tool_calls") or []]
        else:
            seen["stop"] = data["stop_reason"]
            seen["calls"] = [b["id"] for b in data["content"] if b["type"] == "tool_use"]
        seen["withheld"] = [w["id"] for w in (data.get("turnstile") or {}).get("withheld_tool_calls", [])]
        return resp, seen
    for line in resp.text.splitlines():
        if not line.startswith("data: {"):
            continue
        ev = json.loads(line[6:])
        seen["withheld"] += [w["id"] for w in (ev.get("turnstile") or {}).get("withheld_tool_calls", [])]
        if dialect == "openai":
            for choice in ev.get("choices") or []:
                seen["calls"] += [
                    c["id"] for c in (choice.get("delta") or {}).get("tool_calls") or [] if c.get("id")
                ]
                seen["stop"] = choice.get("finish_reason") or seen["stop"]
        elif ev["type"] == "content_block_start" and ev["content_block"]["type"] == "tool_use":
            seen["calls"].append(ev["content_block"]["id"])
        elif ev["type"] == "message_delta":
            seen["stop"] = ev["delta"]["stop_reason"]
    return resp, seen


@pytest.mark.parametrize("dialect", ["openai", "anthropic"])
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize("api", ["openai_chat", "anthropic_messages", "gemini", "openai_responses"])
def test_a_tool_call_at_the_output_budget_reaches_the_client_as_length_without_the_call(
    dialect: str, stream: bool, api: str, upstream: UpstreamStandin, gateway_url: str
) -> None:
    call = Call("call_budget", "write", '{"path": "/tmp/a"}')
    upstream.script(replay(tool_call_answer(api, [call], stream=stream, output_tokens=BUDGET), api=api))

    resp, seen = _ask(gateway_url, dialect, MATRIX[api][0], stream)

    assert resp.status_code == 200, resp.text
    assert seen["stop"] == ("length" if dialect == "openai" else "max_tokens")
    assert seen["calls"] == [], "no executable call reaches the client"
    assert seen["withheld"] == ["call_budget"]
    if not stream:
        assert [unquote(i) for i in resp.headers["x-turnstile-withheld-tool-calls"].split(",")] == [
            "call_budget"
        ]
    sent = upstream.requests(api)[0].body
    assert BUDGET in (
        sent.get("max_tokens"),
        sent.get("max_completion_tokens"),
        sent.get("max_output_tokens"),
        sent.get("generationConfig", {}).get("maxOutputTokens"),
    )


@pytest.mark.parametrize("api", ["openai_chat", "anthropic_messages", "gemini", "openai_responses"])
def test_below_the_budget_the_same_call_is_handed_on(
    api: str, upstream: UpstreamStandin, gateway_url: str
) -> None:
    call = Call("call_fine", "write", '{"path": "/tmp/a"}')
    upstream.script(replay(tool_call_answer(api, [call], stream=False, output_tokens=BUDGET - 1), api=api))

    _, seen = _ask(gateway_url, "openai", MATRIX[api][0], False)

    assert seen["stop"] == "tool_calls"
    assert seen["calls"] == ["call_fine"]
