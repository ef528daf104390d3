"""What a Gemini upstream is sent depends on its model's family
(``gateway/providers/gemini_models.py``): the structured-output slot it takes and its thinking
limits; what a model cannot take is named (``x-turnstile-dropped``), asserted on what reached the
upstream stand-in."""

from __future__ import annotations

import openai
from standins.tool_answers import text_answer
from standins.topology import MATRIX
from standins.upstream import UpstreamStandin, replay

GE = MATRIX["gemini"][0]  # gemini-3-pro-preview


def test_reasoning_turned_off_toward_a_gemini_model_that_always_thinks_is_named(
    upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    upstream.script(replay(text_answer("gemini", "hi", stream=False)))
    raw = oai.chat.completions.with_raw_response.create(
        model=GE, messages=[{"role": "user", "content": "hi"}], reasoning_effort="none"
    )
    assert raw.headers["x-turnstile-dropped"] == "reasoning_effort"  # Gemini 3 cannot turn it off
    (got,) = upstream.requests()
    assert "thinkingConfig" not in got.body.get("generationConfig", {})


def test_a_json_schema_reaches_a_gemini_3_model_as_json_schema(
    upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    upstream.script(replay(text_answer("gemini", '{"a": 1}', stream=False)))
    schema = {"type": "object", "properties": {"a": {"anyOf": [{"type": "integer"}, {"type": "null"}]}}}
    oai.chat.completions.create(
        model=GE,
        messages=[{"role": "user", "content": "hi"}],
        response_format={"type": "json_schema", "json_schema": {"name": "r", "schema": schema}},
    )
    (got,) = upstream.requests()
    assert got.body["generationConfig"]["responseJsonSchema"] == schema
