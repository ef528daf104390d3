"""An assistant prefill (a last assistant message the model continues) across wire APIs (issue 14,
break-test bt14 finding 13): Anthropic continues one, so an OpenAI Chat client's Mistral-style
``prefix: true`` reaches Claude as its prefill; where no upstream continues it (OpenAI from an
Anthropic client, Responses, Gemini) it goes as an ordinary assistant message and is named."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from standins.tool_answers import text_answer
from standins.topology import MATRIX
from standins.upstream import UpstreamStandin, replay

PREFILL: Any = [
    {"role": "user", "content": "Name a colour."},
    {"role": "assistant", "content": "The colour is"},
]


def _sent(upstream: UpstreamStandin) -> dict[str, Any]:
    (got,) = upstream.requests()
    return got.body  # type: ignore[no-any-return]


@pytest.mark.parametrize("api", ["openai_chat", "openai_responses", "gemini"])
def test_an_anthropic_prefill_toward_an_api_without_continuation_is_named(
    api: str, upstream: UpstreamStandin, gateway_url: str
) -> None:
    upstream.script(replay(text_answer(api, "ok", stream=False)))
    r = httpx.post(
        gateway_url + "/v1/messages",
        json={"model": MATRIX[api][0], "max_tokens": 100, "messages": PREFILL},
        timeout=10,
    )
    assert r.status_code == 200, r.text
    assert "messages[1]" in r.headers["x-turnstile-dropped"].split(",")


def test_an_anthropic_prefill_reaches_claude_as_sent(upstream: UpstreamStandin, gateway_url: str) -> None:
    upstream.script(replay(text_answer("anthropic_messages", "ok", stream=False)))
    r = httpx.post(
        gateway_url + "/v1/messages",
        json={"model": MATRIX["anthropic_messages"][0], "max_tokens": 100, "messages": PREFILL},
        timeout=10,
    )
    assert r.status_code == 200 and "x-turnstile-dropped" not in r.headers
    assert _sent(upstream)["messages"][-1]["role"] == "assistant"


def _chat_prefix(gateway_url: str, model: str) -> httpx.Response:
    messages = [PREFILL[0], {**PREFILL[1], "prefix": True}]
    return httpx.post(
        gateway_url + "/v1/chat/completions", json={"model": model, "messages": messages}, timeout=10
    )


def test_a_chat_prefix_message_reaches_claude_as_its_prefill(
    upstream: UpstreamStandin, gateway_url: str
) -> None:
    upstream.script(replay(text_answer("anthropic_messages", "ok", stream=False)))
    r = _chat_prefix(gateway_url, MATRIX["anthropic_messages"][0])
    assert r.status_code == 200, r.text
    assert "x-turnstile-dropped" not in r.headers
    last = _sent(upstream)["messages"][-1]
    assert last["role"] == "assistant" and "prefix" not in last


def test_a_chat_prefix_message_reaches_openai_chat_as_sent(
    upstream: UpstreamStandin, gateway_url: str
) -> None:
    upstream.script(replay(text_answer("openai_chat", "ok", stream=False)))
    r = _chat_prefix(gateway_url, MATRIX["openai_chat"][0])
    assert r.status_code == 200 and "x-turnstile-dropped" not in r.headers
    assert _sent(upstream)["messages"][-1]["prefix"] is True


def test_a_chat_prefix_message_toward_responses_is_named(upstream: UpstreamStandin, gateway_url: str) -> None:
    upstream.script(replay(text_answer("openai_responses", "ok", stream=False)))
    r = _chat_prefix(gateway_url, MATRIX["openai_responses"][0])
    assert r.status_code == 200, r.text
    assert r.headers["x-turnstile-dropped"] == "messages[1].prefix"


def test_a_chat_prefix_before_the_last_message_is_refused(
    upstream: UpstreamStandin, gateway_url: str
) -> None:
    messages = [PREFILL[0], {**PREFILL[1], "prefix": True}, {"role": "user", "content": "more"}]
    r = httpx.post(
        gateway_url + "/v1/chat/completions",
        json={"model": MATRIX["anthropic_messages"][0], "messages": messages},
        timeout=10,
    )
    assert r.status_code == 400 and r.json()["error"]["param"] == "messages[1].prefix"
