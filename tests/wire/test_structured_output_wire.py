"""Structured output through the gateway on every upstream (issue 14 item 2): the official SDKs'
``parse()`` (OpenAI ``chat.completions.parse`` / ``.stream``, Anthropic ``messages.parse`` /
``.stream`` with ``output_format``) return the model instance, whole and streamed, against a
Claude deployment with the native slot (``claude-sonnet-4-5``), an older Claude that gets the
forced output tool (``an`` = ``claude-sonnet-4-20250514``), OpenAI (``oa``) and Gemini (``ge``).

The stand-in answers with an instance of the schema that reached it and refuses, as Anthropic
does, a schema keyword structured outputs do not take and ``output_config.format`` on a model
without it (:mod:`standins.structured_output`); each test asserts what reached the upstream."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, Literal

import anthropic
import httpx
import openai
import pytest
from pydantic import BaseModel, Field
from standins.upstream import UpstreamStandin, structured_answer
from standins.wirekit import keys_in

API_OF = {
    "claude-sonnet-4-5": "anthropic_messages",
    "an": "anthropic_messages",
    "oa": "openai_chat",
    "ge": "gemini",
}
PROMPT = [{"role": "user", "content": "Extract: I want to order 2 Green Tea"}]


class Line(BaseModel):
    product: str
    quantity: int = Field(ge=1)


class Order(BaseModel):
    lines: list[Line]
    kind: Literal["retail", "wholesale"]
    when: datetime
    note: str | None


def _assert_reached(upstream: UpstreamStandin, target: str) -> None:
    """The schema reached the upstream in that wire API's own slot."""
    (got,) = upstream.requests()
    body = got.body
    if target == "claude-sonnet-4-5":
        schema = body["output_config"]["format"]["schema"]
        assert schema["additionalProperties"] is False
        assert "tools" not in body
        assert "minimum" not in keys_in(schema)  # moved into the description, as the SDK does
    elif target == "an":
        assert "output_config" not in body
        assert body["tools"][-1]["name"] == "json_output"
        assert body["tool_choice"] == {"type": "tool", "name": "json_output"}
    elif target == "oa":
        assert body["response_format"]["type"] == "json_schema"
    else:
        assert body["generationConfig"]["responseMimeType"] == "application/json"
        assert "responseJsonSchema" in body["generationConfig"]  # gemini-3: JSON Schema as it is


@pytest.mark.parametrize("target", sorted(API_OF))
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_openai_sdk_parse_returns_the_model_instance_on_every_upstream(
    target: str, stream: bool, upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    upstream.script(structured_answer(api=API_OF[target]))
    if stream:
        with oai.chat.completions.stream(
            model=target, messages=PROMPT, response_format=Order, max_tokens=500
        ) as s:
            completion = s.get_final_completion()
    else:
        completion = oai.chat.completions.parse(
            model=target, messages=PROMPT, response_format=Order, max_tokens=500
        )
    message = completion.choices[0].message
    assert isinstance(message.parsed, Order)
    assert message.tool_calls in (None, [])
    assert completion.choices[0].finish_reason == "stop"
    _assert_reached(upstream, target)


@pytest.mark.parametrize("target", sorted(API_OF))
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_anthropic_sdk_parse_returns_the_model_instance_on_every_upstream(
    target: str, stream: bool, upstream: UpstreamStandin, ant: anthropic.Anthropic
) -> None:
    upstream.script(structured_answer(api=API_OF[target]))
    if stream:
        with ant.messages.stream(model=target, max_tokens=500, messages=PROMPT, output_format=Order) as s:
            message = s.get_final_message()
    else:
        message = ant.messages.parse(model=target, max_tokens=500, messages=PROMPT, output_format=Order)
    assert isinstance(message.parsed_output, Order)
    assert [b.type for b in message.content] == ["text"]
    assert message.stop_reason == "end_turn"
    _assert_reached(upstream, target)


@pytest.mark.parametrize("target", ["claude-sonnet-4-5", "an"])
def test_the_beta_top_level_output_format_reaches_claude_and_its_beta_is_not_forwarded(
    target: str, upstream: UpstreamStandin, gateway_url: str
) -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 3}}, "required": ["n"]}
    upstream.script(structured_answer(api="anthropic_messages"))
    resp = httpx.post(
        f"{gateway_url}/v1/messages",
        headers={"anthropic-version": "2023-06-01", "anthropic-beta": "structured-outputs-2025-11-13"},
        json={
            "model": target,
            "max_tokens": 100,
            "messages": PROMPT,
            "output_format": {"type": "json_schema", "schema": schema},
        },
        timeout=15,
    )
    assert resp.status_code == 200, resp.text
    assert json.loads(resp.json()["content"][0]["text"]) == {"n": 1}
    (got,) = upstream.requests()
    assert "output_format" not in got.body
    assert "anthropic-beta" not in got.headers
    assert "x-turnstile-dropped" not in resp.headers


def test_the_standin_refuses_a_keyword_claude_does_not_take(upstream: UpstreamStandin) -> None:
    """The rule the wire tests lean on: a raw schema with ``minimum`` and no
    ``additionalProperties: false`` is a 400 from the (stand-in) Anthropic API."""
    body: dict[str, Any] = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 10,
        "messages": PROMPT,
        "output_config": {
            "format": {
                "type": "json_schema",
                "schema": {"type": "object", "properties": {"n": {"type": "integer", "minimum": 1}}},
            }
        },
    }
    resp = httpx.post(
        f"{upstream.url}/v1/messages",
        headers={"x-api-key": "k", "anthropic-version": "2023-06-01"},
        json=body,
        timeout=15,
    )
    assert resp.status_code == 400
    assert "additionalProperties" in resp.json()["error"]["message"]


def test_openai_json_object_mode_on_claude_answers_a_json_object(
    upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    """No native form exists for "any JSON object" on Claude: the forced output tool with an
    open object schema carries it, and the client gets the object as its content."""
    upstream.script(structured_answer(api="anthropic_messages"))
    completion = oai.chat.completions.create(
        model="claude-sonnet-4-5", messages=PROMPT, response_format={"type": "json_object"}, max_tokens=100
    )
    assert isinstance(json.loads(completion.choices[0].message.content or ""), dict)
    assert completion.choices[0].finish_reason == "stop"
    (got,) = upstream.requests()
    assert got.body["tools"] == [
        {
            "name": "json_output",
            "description": got.body["tools"][0]["description"],
            "input_schema": {"type": "object"},
        }
    ]
    assert "output_config" not in got.body


def test_an_anthropic_structured_output_reaches_openai_strict_as_claude_would_enforce_it(
    upstream: UpstreamStandin, ant: anthropic.Anthropic
) -> None:
    upstream.script(structured_answer(api="openai_chat"))
    message = ant.messages.parse(model="oa", max_tokens=500, messages=PROMPT, output_format=Order)
    assert isinstance(message.parsed_output, Order)
    (got,) = upstream.requests()
    assert got.body["response_format"]["json_schema"]["strict"] is True


def test_a_schema_openai_cannot_enforce_strictly_is_sent_loose_and_named(
    upstream: UpstreamStandin, gateway_url: str
) -> None:
    upstream.script(structured_answer(api="openai_chat"))
    schema = {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": False}
    body = {
        "model": "oa",
        "max_tokens": 100,
        "messages": PROMPT,
        "output_config": {"format": {"type": "json_schema", "schema": schema}},
    }
    resp = httpx.post(f"{gateway_url}/v1/messages", json=body, headers={"x-api-key": "k"}, timeout=15)
    assert resp.status_code == 200, resp.text
    assert resp.headers["x-turnstile-dropped"] == "output_config.format.strict"
    (got,) = upstream.requests()
    assert "strict" not in got.body["response_format"]["json_schema"]
