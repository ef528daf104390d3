"""An OpenAI-dialect client asking Claude for reasoning gets a request Claude accepts, and its
output limit kept (issue 14; a break-test found thinking sent beside temperature 0.3 and forced
tool use, which Claude refuses, and ``max_completion_tokens: 100`` raised to 2148): what cannot
go with thinking is named in ``x-turnstile-dropped``."""

from __future__ import annotations

from typing import Any

import openai
from standins.tool_answers import text_answer
from standins.topology import MATRIX
from standins.upstream import UpstreamStandin, replay

CLAUDE = MATRIX["anthropic_messages"][0]
TOOLS: Any = [
    {"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}
]


def _sent(upstream: UpstreamStandin) -> dict[str, Any]:
    (got,) = upstream.requests()
    return got.body  # type: ignore[no-any-return]


def _answer(upstream: UpstreamStandin) -> None:
    upstream.script(replay(text_answer("anthropic_messages", "ok", stream=False)))


def test_sampling_settings_claude_refuses_with_thinking_are_dropped_and_named(
    upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    _answer(upstream)
    raw = oai.chat.completions.with_raw_response.create(
        model=CLAUDE,
        messages=[{"role": "user", "content": "hi"}],
        reasoning_effort="low",
        temperature=0.3,
        top_p=0.5,
        max_completion_tokens=5000,
    )
    assert raw.headers["x-turnstile-dropped"] == "temperature,top_p"
    body = _sent(upstream)
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert body["max_tokens"] == 5000 and "temperature" not in body and "top_p" not in body


def test_forced_tool_use_turns_thinking_off_and_names_it(
    upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    _answer(upstream)
    raw = oai.chat.completions.with_raw_response.create(
        model=CLAUDE,
        messages=[{"role": "user", "content": "hi"}],
        reasoning_effort="medium",
        tools=TOOLS,
        tool_choice="required",
    )
    assert raw.headers["x-turnstile-dropped"] == "thinking"
    body = _sent(upstream)
    assert body["thinking"] == {"type": "disabled"} and body["tool_choice"] == {"type": "any"}


def test_the_clients_output_limit_is_kept_and_the_budget_fits_below_it(
    upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    _answer(upstream)
    oai.responses.create(
        model=CLAUDE, input="hi", reasoning={"effort": "high"}, max_output_tokens=3000, store=False
    )
    body = _sent(upstream)
    assert body["max_tokens"] == 3000 and body["thinking"] == {"type": "enabled", "budget_tokens": 1500}


def test_an_output_limit_below_the_smallest_budget_turns_thinking_off(
    upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    _answer(upstream)
    raw = oai.chat.completions.with_raw_response.create(
        model=CLAUDE,
        messages=[{"role": "user", "content": "hi"}],
        reasoning_effort="low",
        max_completion_tokens=100,
    )
    assert raw.headers["x-turnstile-dropped"] == "thinking"
    body = _sent(upstream)
    assert body["max_tokens"] == 100 and body["thinking"] == {"type": "disabled"}


def test_a_gemini_clients_sampling_settings_are_named_as_it_sent_them(
    upstream: UpstreamStandin, gem: Any
) -> None:
    from google.genai import types

    _answer(upstream)
    config = types.GenerateContentConfig(
        temperature=0.3,
        top_k=5,
        max_output_tokens=5000,
        thinking_config=types.ThinkingConfig(thinking_budget=2048),
    )
    raw = gem.models.generate_content(model=CLAUDE, contents="hi", config=config)
    headers = raw.sdk_http_response.headers
    assert headers["x-turnstile-dropped"] == "generationConfig.temperature,generationConfig.topK"
    body = _sent(upstream)
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert "temperature" not in body and "top_k" not in body


SCHEMA: Any = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}


def test_structured_output_that_cannot_be_forced_with_thinking_on_is_named(
    upstream: UpstreamStandin, oai: openai.OpenAI, ant: Any
) -> None:
    """An older Claude (no native structured output) gets the output tool, which it cannot be
    forced to use with thinking on: the client is told (bt14 finding 12)."""
    upstream.script(replay(text_answer("anthropic_messages", "ok", stream=False)))
    raw = oai.chat.completions.with_raw_response.create(
        model=CLAUDE,
        messages=[{"role": "user", "content": "hi"}],
        reasoning_effort="low",
        max_completion_tokens=5000,
        response_format={"type": "json_schema", "json_schema": {"name": "r", "schema": SCHEMA}},
    )
    assert raw.headers["x-turnstile-dropped"] == "response_format"
    assert _sent(upstream)["tool_choice"] == {"type": "auto"}
    upstream.reset()
    upstream.script(replay(text_answer("anthropic_messages", "ok", stream=False)))
    araw = ant.messages.with_raw_response.create(
        model=CLAUDE,
        max_tokens=5000,
        messages=[{"role": "user", "content": "hi"}],
        thinking={"type": "enabled", "budget_tokens": 2000},
        output_config={"format": {"type": "json_schema", "schema": SCHEMA}},
    )
    assert araw.headers["x-turnstile-dropped"] == "output_config.format"
