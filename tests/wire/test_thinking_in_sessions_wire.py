"""Signed thinking goes back only to the provider and model that signed it, also when the
context is rebuilt from the session log (a break-test found a Gemini client's signed thought,
kept in the log, sent to Claude on the session's next turn): the window layer applies the
thinking policy to the rebuilt context, and what it removes is named ``thinking`` in
``x-turnstile-dropped``."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import httpx
import openai
from standins.tool_answers import text_answer
from standins.topology import MATRIX
from standins.upstream import UpstreamStandin, replay

SESSION = {"x-turnstile-session": "thinking-log-1"}


def _answer(api: str) -> Any:
    return replay(text_answer(api, "ok", stream=False))


def test_a_gemini_thought_in_the_session_log_never_reaches_claude(
    upstream: UpstreamStandin, gateway_url: str, ant: anthropic.Anthropic
) -> None:
    upstream.script(_answer("gemini"), _answer("anthropic_messages"))
    name, _ = MATRIX["gemini"]
    thought = {"text": "let me think", "thought": True, "thoughtSignature": "c2lnMQ=="}
    body = {
        "contents": [
            {"role": "user", "parts": [{"text": "q"}]},
            {"role": "model", "parts": [thought, {"text": "answer"}]},
            {"role": "user", "parts": [{"text": "more"}]},
        ]
    }
    first = httpx.post(
        f"{gateway_url}/v1beta/models/{name}:generateContent",
        json=body,
        headers={"x-goog-api-key": "k", **SESSION},
        timeout=15,
    )
    assert first.status_code == 200, first.text
    raw = ant.messages.with_raw_response.create(
        model=MATRIX["anthropic_messages"][0],
        max_tokens=64,
        messages=[{"role": "user", "content": "next"}],
        extra_headers=SESSION,
    )
    assert raw.headers["x-turnstile-dropped"] == "thinking"
    _, got = upstream.requests()
    sent = json.dumps(got.body)
    assert "c2lnMQ==" not in sent and '"thinking"' not in sent
    assert [m["role"] for m in got.body["messages"]][-1] == "user"


def test_an_openai_reasoning_item_of_a_stored_chain_never_reaches_claude(
    upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    # the first turn goes to Claude too: a Responses upstream is sent the raw reasoning item as
    # the client sent it, and the stand-in (as OpenAI) cannot verify content it did not issue
    upstream.script(_answer("anthropic_messages"), _answer("anthropic_messages"))
    reasoning = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "OPENAI_ENC"}
    first = oai.responses.create(
        model=MATRIX["anthropic_messages"][0],
        input=[
            {"role": "user", "content": "q"},
            reasoning,
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "a"}]},
            {"role": "user", "content": "more"},
        ],  # type: ignore[list-item]
    )
    raw = oai.responses.with_raw_response.create(
        model=MATRIX["anthropic_messages"][0], input="next", previous_response_id=first.id
    )
    assert raw.headers["x-turnstile-dropped"] == "thinking"
    for got in upstream.requests():
        assert "OPENAI_ENC" not in json.dumps(got.body)
