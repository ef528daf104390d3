"""The official ``openai`` SDK's Responses API through the gateway to every upstream API:
``responses.create``, ``responses.stream``, ``responses.parse``, a function tool round trip and
a ``previous_response_id`` continuation — each asserting what reached the upstream."""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest
from pydantic import BaseModel
from standins.tool_answers import Call
from standins.upstream import UpstreamStandin

from .conftest import MODEL_FOR, STRUCTURED_MODEL, STRUCTURED_UPSTREAM_MODEL
from .scripts import call_tools, dump, only, say, tool_names, user_texts
from .sdk_wire import answer_structured, call_id, calls_sent, results_sent, schema_sent, system_text

APIS = list(MODEL_FOR)
WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "The weather in a city.",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    },
    "strict": True,
}
NATIVE_SLOT = {
    "openai_chat": {"response_format"},
    "openai_responses": {"text.format"},
    "anthropic_messages": {"output_config.format"},
    "gemini": {"responseJsonSchema", "responseSchema"},
}


class City(BaseModel):
    name: str
    population: int


def _assistant_texts(rec: Any) -> list[str]:
    """Every assistant text the request's history carries, whatever the wire API."""
    body = rec.body or {}
    out: list[str] = []
    if rec.api == "gemini":
        for content in body.get("contents") or []:
            if content.get("role") == "model":
                out += [p["text"] for p in content.get("parts") or [] if "text" in p]
        return out
    items = body.get("input") if rec.api == "openai_responses" else body.get("messages")
    for m in items if isinstance(items, list) else []:
        if m.get("role") != "assistant":
            continue
        content = m.get("content")
        if isinstance(content, str):
            out.append(content)
            continue
        out += [p["text"] for p in content or [] if isinstance(p, dict) and isinstance(p.get("text"), str)]
    return out


@pytest.mark.compat(
    client="openai",
    scenario="responses.create",
    checks="the instructions and user input reach the upstream; output_text and usage come back",
)
@pytest.mark.parametrize("api", APIS)
def test_responses_create_reaches_each_upstream_with_the_input(
    api: str, oai: openai.OpenAI, upstream: UpstreamStandin
) -> None:
    say(upstream, api, "hello from upstream")
    got = oai.responses.create(model=MODEL_FOR[api], instructions="Be brief.", input="hi there")
    assert got.output_text == "hello from upstream"
    assert got.status == "completed"
    assert got.usage is not None and (got.usage.input_tokens, got.usage.output_tokens) == (20, 10)
    (rec,) = only(upstream, api)
    assert user_texts(rec) == ["hi there"]
    assert system_text(rec) == "Be brief.", dump(rec)


@pytest.mark.compat(
    client="openai",
    scenario="responses.stream",
    checks="the upstream is asked to stream; output_text deltas and the completed response come back",
)
@pytest.mark.parametrize("api", APIS)
def test_responses_stream_yields_text_deltas_and_the_final_response(
    api: str, oai: openai.OpenAI, upstream: UpstreamStandin
) -> None:
    say(upstream, api, "streamed hello")
    with oai.responses.stream(model=MODEL_FOR[api], input="stream please") as stream:
        deltas = [ev.delta for ev in stream if ev.type == "response.output_text.delta"]
        final = stream.get_final_response()
    assert "".join(deltas) == "streamed hello"
    assert final.output_text == "streamed hello" and final.status == "completed"
    assert final.usage is not None and final.usage.output_tokens == 10
    (rec,) = only(upstream, api)
    assert rec.stream, dump(rec)
    assert user_texts(rec) == ["stream please"]


@pytest.mark.compat(
    client="openai",
    scenario="responses.parse (pydantic)",
    checks="text_format's JSON Schema reaches the upstream in its native slot (text.format / "
    "response_format / output_config.format on claude-sonnet-4-5 / Gemini responseSchema); "
    "output_parsed comes back; whole and streamed",
)
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize("api", APIS)
def test_responses_parse_sends_the_schema_in_the_native_slot(
    api: str, stream: bool, oai: openai.OpenAI, upstream: UpstreamStandin
) -> None:
    answer_structured(upstream, api, STRUCTURED_UPSTREAM_MODEL[api])
    params: dict[str, Any] = {"model": STRUCTURED_MODEL[api], "input": "The capital of Portugal?"}
    if stream:
        with oai.responses.stream(**params, text_format=City) as s:
            got = s.get_final_response()
    else:
        got = oai.responses.parse(**params, text_format=City)
    assert got.output_parsed == City(name="x", population=1)
    (rec,) = only(upstream, api)
    assert rec.stream is stream
    slot, schema = schema_sent(rec)
    assert slot in NATIVE_SLOT[api], dump(rec)
    assert set(schema["properties"]) == {"name", "population"}


@pytest.mark.compat(
    client="openai",
    scenario="responses function tool round trip",
    checks="round 2 carries the function_call and its output paired by the upstream's call id, "
    "in its own shape; whole and streamed",
)
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize("api", APIS)
def test_responses_function_call_output_reaches_the_upstream_paired_to_its_call(
    api: str, stream: bool, oai: openai.OpenAI, upstream: UpstreamStandin
) -> None:
    call_tools(upstream, api, Call(call_id(api, 1), "get_weather", '{"city": "Paris"}'))
    say(upstream, api, "It is sunny in Paris.")
    model = MODEL_FOR[api]
    history: list[Any] = [{"role": "user", "content": "Weather in Paris?"}]

    def ask() -> Any:
        if not stream:
            return oai.responses.create(model=model, input=history, tools=[WEATHER], store=False)
        with oai.responses.stream(model=model, input=history, tools=[WEATHER], store=False) as s:
            return s.get_final_response()

    r1 = ask()
    (fc,) = [item for item in r1.output if item.type == "function_call"]
    assert (fc.name, json.loads(fc.arguments)) == ("get_weather", {"city": "Paris"})
    history += [item.model_dump(exclude_none=True) for item in r1.output]
    history.append({"type": "function_call_output", "call_id": fc.call_id, "output": "sunny in Paris"})
    r2 = ask()
    assert r2.output_text == "It is sunny in Paris."
    one, two = only(upstream, api)
    assert (one.stream, two.stream) == (stream, stream)
    assert tool_names(one) == ["get_weather"] and tool_names(two) == ["get_weather"], dump(one)
    wire_id = call_id(api, 1) if api != "gemini" else calls_sent(two)[0][0]
    assert calls_sent(two) == [(wire_id, "get_weather")], dump(two)
    ((rid, text),) = results_sent(two)
    assert rid == wire_id and "sunny in Paris" in text, dump(two)


@pytest.mark.compat(
    client="openai",
    scenario="responses previous_response_id",
    checks="the second upstream request carries the first turn's input and answer before the new input",
)
@pytest.mark.parametrize("api", APIS)
def test_previous_response_id_sends_the_first_turn_upstream_again(
    api: str, oai: openai.OpenAI, upstream: UpstreamStandin
) -> None:
    say(upstream, api, "A1: Lisbon.")
    say(upstream, api, "A2: about 545,000.")
    model = MODEL_FOR[api]
    r1 = oai.responses.create(model=model, input="Q1: the capital of Portugal?")
    r2 = oai.responses.create(model=model, input="Q2: its population?", previous_response_id=r1.id)
    assert r2.output_text == "A2: about 545,000."
    assert r2.previous_response_id == r1.id
    _one, two = only(upstream, api)
    assert user_texts(two) == ["Q1: the capital of Portugal?", "Q2: its population?"], dump(two)
    assert _assistant_texts(two) == ["A1: Lisbon."], dump(two)
    assert "previous_response_id" not in (two.body or {}), "the gateway holds the chain itself"


@pytest.mark.compat(
    client="openai",
    scenario="responses previous_response_id + function_call_output",
    checks="a function_call_output continuing a stored response reaches the upstream with the first "
    "turn's input and call, paired by call id",
)
@pytest.mark.parametrize("api", APIS)
def test_a_function_call_output_continues_the_stored_call(
    api: str, oai: openai.OpenAI, upstream: UpstreamStandin
) -> None:
    call_tools(upstream, api, Call(call_id(api, 1), "get_weather", '{"city": "Paris"}'))
    say(upstream, api, "It is sunny in Paris.")
    model = MODEL_FOR[api]
    r1 = oai.responses.create(model=model, input="Weather in Paris?", tools=[WEATHER])
    (fc,) = [item for item in r1.output if item.type == "function_call"]
    r2 = oai.responses.create(
        model=model,
        previous_response_id=r1.id,
        input=[{"type": "function_call_output", "call_id": fc.call_id, "output": "sunny in Paris"}],
        tools=[WEATHER],
    )
    assert r2.output_text == "It is sunny in Paris."
    _one, two = only(upstream, api)
    assert user_texts(two) == ["Weather in Paris?"], dump(two)
    wire_id = call_id(api, 1) if api != "gemini" else calls_sent(two)[0][0]
    assert calls_sent(two) == [(wire_id, "get_weather")], dump(two)
    ((rid, text),) = results_sent(two)
    assert rid == wire_id and "sunny in Paris" in text, dump(two)
