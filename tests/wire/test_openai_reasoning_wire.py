"""Reasoning asked for toward an OpenAI upstream (issue 14, break-test bt14 findings 1-4).

OpenAI has no rule that a tool round starts with signed thinking (only Anthropic has), so a
client's reasoning effort is never switched off there because foreign reasoning was removed;
what is removed is named ``thinking`` in ``x-turnstile-dropped``."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from standins.tool_answers import text_answer
from standins.topology import MATRIX
from standins.upstream import UpstreamStandin, replay
from standins.wirekit import transcript_row

CHAT = MATRIX["openai_chat"][0]
RESPONSES_REASONING = "rs-gpt-5"
TOOLS: Any = [
    {"type": "function", "function": {"name": "weather", "parameters": {"type": "object", "properties": {}}}}
]
TOOL_ROUND: Any = [
    {"role": "user", "content": "weather?"},
    {
        "role": "assistant",
        "content": None,
        "reasoning_content": "RC",
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "weather", "arguments": "{}"}}],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
]


def _post(gateway_url: str, path: str, body: dict[str, Any]) -> httpx.Response:
    r = httpx.post(gateway_url + path, json=body, headers={"authorization": "Bearer x"}, timeout=10)
    assert r.status_code == 200, r.text
    return r


def _sent(upstream: UpstreamStandin) -> dict[str, Any]:
    (got,) = upstream.requests()
    return got.body  # type: ignore[no-any-return]


def test_chat_reasoning_effort_stays_on_toward_chat_in_a_tool_round_with_reasoning_content(
    upstream: UpstreamStandin, gateway_url: str, db_path: Any
) -> None:
    upstream.script(replay(text_answer("openai_chat", "ok", stream=False)))
    r = _post(
        gateway_url,
        "/v1/chat/completions",
        {"model": CHAT, "messages": TOOL_ROUND, "tools": TOOLS, "reasoning_effort": "low"},
    )
    body = _sent(upstream)
    assert body["reasoning_effort"] == "low"
    assert body["messages"][1]["reasoning_content"] == "RC", "the client's own key, as sent"
    assert "x-turnstile-dropped" not in r.headers
    row = transcript_row(db_path, r.headers["x-turnstile-request-id"])
    codes = [x.get("code") for x in json.loads(row["repairs"])]
    assert "thinking_disabled" not in codes and "foreign_thinking_stripped" not in codes


@pytest.mark.parametrize("stream", [False, True], ids=["nonstream", "stream"])
def test_chat_reasoning_effort_stays_on_toward_a_responses_reasoning_model_and_removed_thinking_is_named(
    stream: bool, upstream: UpstreamStandin, gateway_url: str
) -> None:
    upstream.script(replay(text_answer("openai_responses", "ok", stream=stream)))
    r = _post(
        gateway_url,
        "/v1/chat/completions",
        {
            "model": RESPONSES_REASONING,
            "messages": TOOL_ROUND,
            "tools": TOOLS,
            "reasoning_effort": "low",
            "stream": stream,
        },
    )
    body = _sent(upstream)
    assert body["reasoning"]["effort"] == "low"
    assert r.headers["x-turnstile-dropped"] == "thinking"
