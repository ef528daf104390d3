"""A tool-call id an upstream sends that the gateway's edge would refuse from a client (control
characters, invisible only, over 256 bytes) never reaches the client: through the real gateway,
in both client dialects, streamed and whole, from every upstream wire API, the client gets the
safe ``call_<hash>`` id, its correct next turn (the call and its result under that id) is
accepted and reaches the upstream with that id on both sides, and the transcript row keeps the
upstream's id as it was sent."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from standins.tool_answers import Call, text_answer, tool_call_answer
from standins.topology import MATRIX
from standins.upstream import UpstreamStandin, replay
from standins.wirekit import transcript_row

from gateway.guards.upstream_ids import safe_call_id
from wire.test_output_budget import _ask

HOSTILE = {
    "crlf-nul": "a\r\nX-Evil: 1\x00",
    "invisible": "\u200b",
    "800-bytes": "\U0001f600" * 200,
}


def _next_turn(dialect: str, model: str, call_id: str) -> tuple[str, dict[str, Any]]:
    """The client's correct next turn: the assistant's call under ``call_id`` and its result."""
    if dialect == "openai":
        return "/v1/chat/completions", {
            "model": model,
            "messages": [
                {"role": "user", "content": "write /tmp/a"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {"id": call_id, "type": "function", "function": {"name": "write", "arguments": "{}"}}
                    ],
                },
                {"role": "tool", "tool_call_id": call_id, "content": "done"},
            ],
        }
    return "/v1/messages", {
        "model": model,
        "max_tokens": 100,
        "messages": [
            {"role": "user", "content": "write /tmp/a"},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": call_id, "name": "write", "input": {}}],
            },
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call_id, "content": "done"}]},
        ],
    }


def _upstream_pair(api: str, body: dict[str, Any]) -> tuple[str, str]:
    """The call id and the result id of the upstream request built from :func:`_next_turn`."""
    if api == "openai_chat":
        calls = [m for m in body["messages"] if m.get("tool_calls")]
        results = [m for m in body["messages"] if m["role"] == "tool"]
        return calls[0]["tool_calls"][0]["id"], results[0]["tool_call_id"]
    if api == "openai_responses":
        items = body["input"]
        call = next(i for i in items if i.get("type") == "function_call")
        output = next(i for i in items if i.get("type") == "function_call_output")
        return call["call_id"], output["call_id"]
    blocks = [b for m in body["messages"] if isinstance(m["content"], list) for b in m["content"]]
    use = next(b for b in blocks if b["type"] == "tool_use")
    result = next(b for b in blocks if b["type"] == "tool_result")
    return use["id"], result["tool_use_id"]


@pytest.mark.parametrize("dialect", ["openai", "anthropic"])
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize("api", ["openai_chat", "anthropic_messages", "gemini", "openai_responses"])
def test_an_unsafe_upstream_id_reaches_the_client_replaced_and_the_next_turn_goes_through(
    dialect: str, stream: bool, api: str, upstream: UpstreamStandin, gateway_url: str, db_path: Path
) -> None:
    upstream_id = HOSTILE["crlf-nul"]
    model = MATRIX[api][0]
    answer = tool_call_answer(api, [Call(upstream_id, "write", '{"path": "/tmp/a"}')], stream=stream)
    upstream.script(replay(answer, api=api), replay(text_answer(api, "written", stream=False), api=api))

    first, seen = _ask(gateway_url, dialect, model, stream)

    assert first.status_code == 200, first.text
    assert seen["calls"] == [safe_call_id(upstream_id)]
    assert "X-Evil" not in first.text
    row = transcript_row(db_path, first.headers["x-turnstile-request-id"])
    assert json.loads(row["response"])["replaced_call_ids"] == [
        {
            "id": safe_call_id(upstream_id),
            "upstream_id": upstream_id,
            "reason": "holds control character U+000D",
        }
    ], "the transcript row keeps the upstream's id as sent"

    path, body = _next_turn(dialect, model, seen["calls"][0])
    second = httpx.post(gateway_url + path, json=body, timeout=15)

    assert second.status_code == 200, second.text
    if api != "gemini":  # Gemini pairs a result with its call by name and position
        sent = upstream.requests(api)[-1].body
        assert _upstream_pair(api, sent) == (safe_call_id(upstream_id), safe_call_id(upstream_id))


@pytest.mark.parametrize("kind", sorted(HOSTILE))
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_every_kind_of_id_the_edge_refuses_is_replaced_on_the_way_out(
    kind: str, stream: bool, upstream: UpstreamStandin, gateway_url: str
) -> None:
    api = "openai_chat"
    calls = [Call(HOSTILE[kind], "write", "{}"), Call("call_fine", "write", "{}")]
    upstream.script(replay(tool_call_answer(api, calls, stream=stream), api=api))

    resp, seen = _ask(gateway_url, "anthropic", MATRIX[api][0], stream)

    assert resp.status_code == 200, resp.text
    assert seen["calls"] == [safe_call_id(HOSTILE[kind]), "call_fine"]
