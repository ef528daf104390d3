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

CHAT = "some-oai-model"  # a model litellm does not know: trusted to reason
NO_REASONING = {"openai_chat": MATRIX["openai_chat"][0], "openai_responses": MATRIX["openai_responses"][0]}
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


@pytest.mark.parametrize(
    ("thinking", "effort"),
    [
        ({"type": "enabled", "budget_tokens": 1500}, "low"),
        ({"type": "enabled", "budget_tokens": 5000}, "medium"),
        ({"type": "enabled", "budget_tokens": 20000}, "high"),
        ({"type": "disabled"}, "none"),
    ],
)
@pytest.mark.parametrize("target", ["openai_chat", "openai_responses"])
def test_an_anthropic_thinking_budget_or_disabled_thinking_reaches_both_openai_apis_as_an_effort(
    target: str, thinking: dict[str, Any], effort: str, upstream: UpstreamStandin, gateway_url: str
) -> None:
    upstream.script(replay(text_answer(target, "ok", stream=False)))
    model = CHAT if target == "openai_chat" else RESPONSES_REASONING
    r = _post(
        gateway_url,
        "/v1/messages",
        {
            "model": model,
            "max_tokens": 30000,
            "messages": [{"role": "user", "content": "hi"}],
            "thinking": thinking,
        },
    )
    body = _sent(upstream)
    sent = body["reasoning_effort"] if target == "openai_chat" else body["reasoning"]["effort"]
    if target == "openai_responses" and effort == "none":
        effort = "minimal"  # the Responses deployment is gpt-5, which takes no "none"
    assert sent == effort
    assert "x-turnstile-dropped" not in r.headers


def test_a_gemini_thinking_budget_reaches_openai_chat_as_an_effort(
    upstream: UpstreamStandin, gateway_url: str
) -> None:
    upstream.script(replay(text_answer("openai_chat", "ok", stream=False)))
    _post(
        gateway_url,
        f"/v1beta/models/{CHAT}:generateContent",
        {
            "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
            "generationConfig": {"thinkingConfig": {"thinkingBudget": 5000}},
        },
    )
    assert _sent(upstream)["reasoning_effort"] == "medium"


@pytest.mark.parametrize(
    ("path", "body", "name"),
    [
        (
            "/v1/chat/completions",
            {"messages": [{"role": "user", "content": "hi"}], "reasoning_effort": "high"},
            "reasoning_effort",
        ),
        (
            "/v1/responses",
            {"input": "hi", "reasoning": {"effort": "high"}, "store": False},
            "reasoning.effort",
        ),
        (
            "/v1/messages",
            {
                "max_tokens": 100,
                "messages": [{"role": "user", "content": "hi"}],
                "output_config": {"effort": "high"},
            },
            "thinking",
        ),
    ],
)
@pytest.mark.parametrize("target", ["openai_chat", "openai_responses"])
def test_reasoning_toward_a_model_without_reasoning_is_dropped_and_named_on_both_openai_apis(
    target: str, path: str, body: dict[str, Any], name: str, upstream: UpstreamStandin, gateway_url: str
) -> None:
    upstream.script(replay(text_answer(target, "ok", stream=False)))
    r = _post(gateway_url, path, {"model": NO_REASONING[target], **body})
    sent = _sent(upstream)
    assert "reasoning_effort" not in sent and "reasoning" not in sent
    assert name in r.headers["x-turnstile-dropped"].split(",")


@pytest.mark.parametrize("model", ["rs-gpt-5", MATRIX["openai_responses"][0]])
def test_a_raw_responses_reasoning_item_without_summary_reaches_a_responses_upstream_as_sent(
    model: str, upstream: UpstreamStandin, gateway_url: str
) -> None:
    """As a raw Anthropic signature or Gemini thoughtSignature goes to its own API: the upstream
    judges it (the stand-in, as OpenAI, cannot verify content it did not issue: its 400 is
    relayed), nothing vanishes on the way."""
    r = httpx.post(
        gateway_url + "/v1/responses",
        json={
            "model": model,
            "store": False,
            "input": [
                {"role": "user", "content": "q"},
                {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAAAforeign"},
                {"role": "assistant", "content": "a"},
                {"role": "user", "content": "more"},
            ],
        },
        timeout=10,
    )
    items = _sent(upstream)["input"]
    assert {"type": "reasoning", "summary": [], "encrypted_content": "gAAAAforeign"} in items
    assert r.status_code == 400 and "could not be verified" in r.text
