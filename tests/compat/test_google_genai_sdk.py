"""The official ``google-genai`` SDK through the gateway's Gemini edge to every upstream API:
``generate_content``, ``generate_content_stream``, a function-calling round trip (by hand and
the SDK's automatic function calling), structured output with ``response_schema`` (a pydantic
model) and ``response_json_schema`` — each asserting what reached the upstream."""

from __future__ import annotations

import json
from typing import Any

import pytest
from google import genai
from google.genai import types
from pydantic import BaseModel
from standins.tool_answers import Call
from standins.upstream import UpstreamStandin

from .conftest import MODEL_FOR, STRUCTURED_MODEL, STRUCTURED_UPSTREAM_MODEL
from .scripts import call_tools, dump, only, say, tool_names, user_texts
from .sdk_wire import answer_structured, call_id, calls_sent, results_sent, schema_sent, system_text

APIS = list(MODEL_FOR)
WEATHER = types.Tool(
    function_declarations=[
        types.FunctionDeclaration(
            name="get_weather",
            description="The weather in a city.",
            parameters_json_schema={
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        )
    ]
)
NATIVE_SLOT = {
    "openai_chat": {"response_format"},
    "openai_responses": {"text.format"},
    "anthropic_messages": {"output_config.format"},
    "gemini": {"responseJsonSchema", "responseSchema"},
}
CITY_SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "population": {"type": "integer"}},
    "required": ["name", "population"],
    "additionalProperties": False,
}


class City(BaseModel):
    name: str
    population: int


def get_weather(city: str) -> str:
    """The weather in a city.

    Args:
        city: the city's name
    """
    return f"sunny in {city}"


# The SDK's automatic function calling checks arguments with isinstance() against the
# annotations, which ``from __future__ import annotations`` leaves as strings.
get_weather.__annotations__ = {"city": str, "return": str}


@pytest.mark.compat(
    client="google-genai",
    scenario="models.generate_content",
    checks="the system instruction and user text reach the upstream; the text and usage metadata come back",
)
@pytest.mark.parametrize("api", APIS)
def test_generate_content_reaches_each_upstream_with_the_user_text(
    api: str, gem: genai.Client, upstream: UpstreamStandin
) -> None:
    say(upstream, api, "hello from upstream")
    got = gem.models.generate_content(
        model=MODEL_FOR[api],
        contents="hi there",
        config=types.GenerateContentConfig(system_instruction="Be brief."),
    )
    assert got.text == "hello from upstream"
    assert got.candidates and got.candidates[0].finish_reason == types.FinishReason.STOP
    assert got.usage_metadata is not None
    assert (got.usage_metadata.prompt_token_count, got.usage_metadata.candidates_token_count) == (20, 10)
    (rec,) = only(upstream, api)
    assert user_texts(rec) == ["hi there"]
    assert system_text(rec) == "Be brief.", dump(rec)


@pytest.mark.compat(
    client="google-genai",
    scenario="models.generate_content_stream",
    checks="the upstream is asked to stream; the chunks' text is the upstream's; the last has usage",
)
@pytest.mark.parametrize("api", APIS)
def test_generate_content_stream_yields_the_upstream_text(
    api: str, gem: genai.Client, upstream: UpstreamStandin
) -> None:
    say(upstream, api, "streamed hello")
    chunks = list(gem.models.generate_content_stream(model=MODEL_FOR[api], contents="stream please"))
    assert "".join(c.text or "" for c in chunks) == "streamed hello"
    last = chunks[-1]
    assert last.usage_metadata is not None and last.usage_metadata.candidates_token_count == 10
    (rec,) = only(upstream, api)
    assert rec.stream, dump(rec)
    assert user_texts(rec) == ["stream please"]


@pytest.mark.compat(
    client="google-genai",
    scenario="function calling round trip",
    checks="round 2 carries the functionCall and its functionResponse paired by the upstream's call id, "
    "in its own shape; whole and streamed",
)
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize("api", APIS)
def test_a_function_response_reaches_the_upstream_paired_to_its_call(
    api: str, stream: bool, gem: genai.Client, upstream: UpstreamStandin
) -> None:
    call_tools(upstream, api, Call(call_id(api, 1), "get_weather", '{"city": "Paris"}'))
    say(upstream, api, "It is sunny in Paris.")
    config = types.GenerateContentConfig(
        tools=[WEATHER], automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True)
    )
    history: list[Any] = [types.Content(role="user", parts=[types.Part(text="Weather in Paris?")])]

    def ask() -> Any:
        if not stream:
            return gem.models.generate_content(model=MODEL_FOR[api], contents=history, config=config)
        chunks = list(
            gem.models.generate_content_stream(model=MODEL_FOR[api], contents=history, config=config)
        )
        parts = [
            p
            for c in chunks
            if c.candidates and c.candidates[0].content
            for p in c.candidates[0].content.parts or []
        ]
        return types.GenerateContentResponse(
            candidates=[types.Candidate(content=types.Content(role="model", parts=parts))]
        )

    first = ask()
    (fc,) = first.function_calls or []
    assert (fc.name, fc.args) == ("get_weather", {"city": "Paris"})
    assert fc.id, "every functionCall carries an id the client echoes"
    assert first.candidates and first.candidates[0].content is not None
    history += [
        first.candidates[0].content,
        types.Content(
            role="user",
            parts=[
                types.Part(
                    function_response=types.FunctionResponse(
                        id=fc.id, name=fc.name, response={"output": "sunny in Paris"}
                    )
                )
            ],
        ),
    ]
    second = ask()
    assert second.text == "It is sunny in Paris."
    one, two = only(upstream, api)
    assert (one.stream, two.stream) == (stream, stream)
    assert tool_names(one) == ["get_weather"] and tool_names(two) == ["get_weather"]
    assert calls_sent(two) == [(call_id(api, 1), "get_weather")], dump(two)
    ((rid, text),) = results_sent(two)
    assert rid == call_id(api, 1) and "sunny in Paris" in text, dump(two)


@pytest.mark.compat(
    client="google-genai",
    scenario="automatic function calling",
    checks="the SDK runs the Python function itself; round 2 carries its result paired to the call",
)
@pytest.mark.parametrize("api", APIS)
def test_automatic_function_calling_sends_the_function_result_upstream(
    api: str, gem: genai.Client, upstream: UpstreamStandin
) -> None:
    call_tools(upstream, api, Call(call_id(api, 1), "get_weather", '{"city": "Paris"}'))
    say(upstream, api, "It is sunny in Paris.")
    got = gem.models.generate_content(
        model=MODEL_FOR[api],
        contents="Weather in Paris?",
        config=types.GenerateContentConfig(tools=[get_weather]),
    )
    assert got.text == "It is sunny in Paris."
    _one, two = only(upstream, api)
    assert calls_sent(two) == [(call_id(api, 1), "get_weather")], dump(two)
    ((rid, text),) = results_sent(two)
    assert rid == call_id(api, 1) and "sunny in Paris" in text, dump(two)


@pytest.mark.compat(
    client="google-genai",
    scenario="response_schema (pydantic)",
    checks="the schema reaches the upstream in its native slot "
    "(responseSchema / response_format / text.format / output_config.format on claude-sonnet-4-5); "
    "parsed comes back",
)
@pytest.mark.parametrize("api", APIS)
def test_response_schema_reaches_the_upstream_natively_and_parses(
    api: str, gem: genai.Client, upstream: UpstreamStandin
) -> None:
    answer_structured(upstream, api, STRUCTURED_UPSTREAM_MODEL[api])
    got = gem.models.generate_content(
        model=STRUCTURED_MODEL[api],
        contents="The capital of Portugal?",
        config=types.GenerateContentConfig(response_mime_type="application/json", response_schema=City),
    )
    assert got.parsed == City(name="x", population=1)
    (rec,) = only(upstream, api)
    slot, schema = schema_sent(rec)
    assert slot in NATIVE_SLOT[api], dump(rec)
    assert set(schema["properties"]) == {"name", "population"}


@pytest.mark.compat(
    client="google-genai",
    scenario="response_json_schema",
    checks="the JSON Schema reaches the upstream in its native slot "
    "(Gemini: responseSchema, the gateway's conversion / response_format / text.format / "
    "output_config.format on claude-sonnet-4-5); the JSON comes back",
)
@pytest.mark.parametrize("api", APIS)
def test_response_json_schema_reaches_the_upstream_natively(
    api: str, gem: genai.Client, upstream: UpstreamStandin
) -> None:
    answer_structured(upstream, api, STRUCTURED_UPSTREAM_MODEL[api])
    got = gem.models.generate_content(
        model=STRUCTURED_MODEL[api],
        contents="The capital of Portugal?",
        config=types.GenerateContentConfig(
            response_mime_type="application/json", response_json_schema=CITY_SCHEMA
        ),
    )
    assert json.loads(got.text or "") == {"name": "x", "population": 1}
    (rec,) = only(upstream, api)
    slot, schema = schema_sent(rec)
    assert slot in NATIVE_SLOT[api], dump(rec)
    assert set(schema["properties"]) == {"name", "population"}
    assert sorted(schema["required"]) == ["name", "population"]
