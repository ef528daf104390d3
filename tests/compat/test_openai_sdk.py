"""The official ``openai`` SDK (Chat Completions) through the gateway to every upstream API:
create, stream (with usage), a tool round trip, parallel tool calls, ``parse()`` with a
pydantic model and JSON mode — each asserting what reached the upstream."""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest
from pydantic import BaseModel
from standins.tool_answers import Call, tool_call_answer
from standins.upstream import UpstreamStandin, answering

from .conftest import MODEL_FOR, STRUCTURED_MODEL, STRUCTURED_UPSTREAM_MODEL
from .scripts import call_tools, dump, only, say, tool_names, user_texts
from .sdk_wire import answer_structured, call_id, calls_sent, results_sent, schema_sent

APIS = list(MODEL_FOR)
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}
# The native structured-output slot each upstream API gets for a JSON Schema.
NATIVE_SLOT = {
    "openai_chat": {"response_format"},
    "openai_responses": {"text.format"},
    "anthropic_messages": {"output_config.format"},
    "gemini": {"responseJsonSchema", "responseSchema"},
}


class City(BaseModel):
    name: str
    population: int


@pytest.mark.compat(
    client="openai",
    scenario="chat.completions.create",
    checks="the user text reaches the upstream; the answer's text comes back",
)
@pytest.mark.parametrize("api", APIS)
def test_chat_completion_reaches_each_upstream_with_the_user_text(
    api: str, oai: openai.OpenAI, upstream: UpstreamStandin
) -> None:
    say(upstream, api, "hello from upstream")
    got = oai.chat.completions.create(
        model=MODEL_FOR[api], messages=[{"role": "user", "content": "hi there"}]
    )
    assert got.choices[0].message.content == "hello from upstream"
    (rec,) = only(upstream, api)
    assert user_texts(rec) == ["hi there"]


@pytest.mark.compat(
    client="openai",
    scenario="chat.completions.create(stream=True)",
    checks="the upstream is asked to stream; text deltas come back; with stream_options include_usage a "
    "last usage-only chunk (the upstream's 20 in / 10 out), without it none",
)
@pytest.mark.parametrize("include_usage", [True, False], ids=["usage", "no-usage"])
@pytest.mark.parametrize("api", APIS)
def test_streamed_chat_completion_yields_text_deltas_and_the_upstream_usage(
    api: str, include_usage: bool, oai: openai.OpenAI, upstream: UpstreamStandin
) -> None:
    say(upstream, api, "streamed hello")
    extra: dict[str, Any] = {"stream_options": {"include_usage": True}} if include_usage else {}
    chunks = list(
        oai.chat.completions.create(
            model=MODEL_FOR[api],
            messages=[{"role": "user", "content": "stream please"}],
            stream=True,
            **extra,
        )
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "streamed hello"
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    assert finishes == ["stop"]
    if include_usage:
        usage = chunks[-1].usage
        assert usage is not None and not chunks[-1].choices, "include_usage: a last chunk with usage only"
        assert (usage.prompt_tokens, usage.completion_tokens) == (20, 10)
    else:
        assert all(c.choices and c.usage is None for c in chunks)
    (rec,) = only(upstream, api)
    assert rec.stream, dump(rec)
    assert user_texts(rec) == ["stream please"]
    if api == "openai_chat":  # the gateway always asks for usage (to price the turn)
        assert rec.body["stream_options"] == {"include_usage": True}


def _weather_loop(
    oai: openai.OpenAI, api: str, cities: list[str], *, parallel: bool, stream: bool
) -> tuple[Any, Any]:
    """Round 1 asks for the weather of ``cities``; the upstream calls the tool once per city;
    round 2 answers each call. Streamed through the SDK's ``chat.completions.stream`` helper
    (which accumulates the tool-call deltas) when ``stream``. Returns both completions."""
    messages: list[Any] = [{"role": "user", "content": f"Weather in {' and '.join(cities)}?"}]
    extra: dict[str, Any] = {"parallel_tool_calls": True} if parallel else {}

    def ask(**kw: Any) -> Any:
        if not stream:
            return oai.chat.completions.create(model=MODEL_FOR[api], messages=messages, tools=[WEATHER], **kw)
        with oai.chat.completions.stream(model=MODEL_FOR[api], messages=messages, tools=[WEATHER], **kw) as s:
            return s.get_final_completion()

    first = ask(**extra)
    msg = first.choices[0].message
    assert first.choices[0].finish_reason == "tool_calls"
    messages.append(msg)  # the SDK's own message object, as its docs append it
    for tc in msg.tool_calls or []:
        city = json.loads(tc.function.arguments)["city"]
        messages.append({"role": "tool", "tool_call_id": tc.id, "content": f"sunny in {city}"})
    second = ask()
    return first, second


@pytest.mark.compat(
    client="openai",
    scenario="chat.completions tools round trip",
    checks="round 2 carries the call and its tool result paired by the upstream's call id, in its own "
    "shape; whole and streamed",
)
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize("api", APIS)
def test_a_tool_result_reaches_the_upstream_paired_to_its_call(
    api: str, stream: bool, oai: openai.OpenAI, upstream: UpstreamStandin
) -> None:
    call_tools(upstream, api, Call(call_id(api, 1), "get_weather", '{"city": "Paris"}'))
    say(upstream, api, "It is sunny in Paris.")
    first, second = _weather_loop(oai, api, ["Paris"], parallel=False, stream=stream)
    (tc,) = first.choices[0].message.tool_calls or []
    assert (tc.function.name, json.loads(tc.function.arguments)) == ("get_weather", {"city": "Paris"})
    assert second.choices[0].message.content == "It is sunny in Paris."
    one, two = only(upstream, api)
    assert (one.stream, two.stream) == (stream, stream)
    assert tool_names(one) == ["get_weather"] and tool_names(two) == ["get_weather"]
    wire_id = call_id(api, 1) if api != "gemini" else calls_sent(two)[0][0]
    assert calls_sent(two) == [(wire_id, "get_weather")], dump(two)
    ((rid, text),) = results_sent(two)
    assert rid == wire_id and "sunny in Paris" in text, dump(two)


@pytest.mark.compat(
    client="openai",
    scenario="chat.completions parallel tool calls",
    checks="two calls in one turn; both results reach the upstream, each paired to its own call id; "
    "whole and streamed",
)
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize("api", APIS)
def test_parallel_tool_calls_each_result_reaches_the_upstream_paired(
    api: str, stream: bool, oai: openai.OpenAI, upstream: UpstreamStandin
) -> None:
    calls = [
        Call(call_id(api, 1), "get_weather", '{"city": "Paris"}'),
        Call(call_id(api, 2), "get_weather", '{"city": "Rome"}'),
    ]
    call_tools(upstream, api, *calls)
    say(upstream, api, "Sunny in both.")
    first, second = _weather_loop(oai, api, ["Paris", "Rome"], parallel=True, stream=stream)
    got = first.choices[0].message.tool_calls or []
    assert [json.loads(tc.function.arguments)["city"] for tc in got] == ["Paris", "Rome"]
    assert len({tc.id for tc in got}) == 2
    assert second.choices[0].message.content == "Sunny in both."
    one, two = only(upstream, api)
    if api in ("openai_chat", "openai_responses"):
        assert one.body["parallel_tool_calls"] is True, dump(one)
    if api == "anthropic_messages":
        assert not (one.body.get("tool_choice") or {}).get("disable_parallel_tool_use"), dump(one)
    sent_calls = calls_sent(two)
    assert [name for _, name in sent_calls] == ["get_weather", "get_weather"], dump(two)
    if api != "gemini":
        assert [cid for cid, _ in sent_calls] == [c.id for c in calls]
    results = results_sent(two)
    assert [rid for rid, _ in results] == [cid for cid, _ in sent_calls], dump(two)
    assert ["Paris" in results[0][1], "Rome" in results[1][1]] == [True, True]


@pytest.mark.compat(
    client="openai",
    scenario="chat.completions.parse (pydantic)",
    checks="the JSON Schema reaches the upstream in its native slot (response_format / text.format / "
    "output_config.format on claude-sonnet-4-5 / Gemini responseSchema); parsed comes back; "
    "whole and streamed",
)
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize("api", APIS)
def test_parse_sends_the_schema_in_the_native_slot_and_returns_the_parsed_object(
    api: str, stream: bool, oai: openai.OpenAI, upstream: UpstreamStandin
) -> None:
    answer_structured(upstream, api, STRUCTURED_UPSTREAM_MODEL[api])
    params: dict[str, Any] = {
        "model": STRUCTURED_MODEL[api],
        "messages": [{"role": "user", "content": "The capital of Portugal?"}],
        "response_format": City,
    }
    if stream:
        with oai.chat.completions.stream(**params) as s:
            completion = s.get_final_completion()
    else:
        completion = oai.chat.completions.parse(**params)
    assert completion.choices[0].message.parsed == City(name="x", population=1)
    (rec,) = only(upstream, api)
    assert rec.stream is stream
    slot, schema = schema_sent(rec)
    assert slot in NATIVE_SLOT[api], dump(rec)
    assert set(schema["properties"]) == {"name", "population"}
    assert sorted(schema["required"]) == ["name", "population"]


@pytest.mark.compat(
    client="openai",
    scenario="response_format json_object",
    checks="JSON mode reaches the upstream (response_format / text.format json_object, forced open-object "
    "tool, responseMimeType); a JSON object comes back",
)
@pytest.mark.parametrize("api", APIS)
def test_json_object_mode_reaches_the_upstream_and_a_json_object_comes_back(
    api: str, oai: openai.OpenAI, upstream: UpstreamStandin
) -> None:
    if api == "anthropic_messages":
        answer_structured(upstream, api, STRUCTURED_UPSTREAM_MODEL[api])
    else:
        say(upstream, api, '{"capital": "Lisbon"}')
    completion = oai.chat.completions.create(
        model=STRUCTURED_MODEL[api],
        messages=[{"role": "user", "content": "The capital of Portugal, as JSON?"}],
        response_format={"type": "json_object"},
    )
    assert isinstance(json.loads(completion.choices[0].message.content or ""), dict)
    (rec,) = only(upstream, api)
    body = rec.body
    if api == "openai_chat":
        assert body["response_format"] == {"type": "json_object"}
    elif api == "openai_responses":
        assert body["text"]["format"] == {"type": "json_object"}
    elif api == "anthropic_messages":
        assert body["tool_choice"]["type"] == "tool" and schema_sent(rec)[1] == {"type": "object"}
    else:
        assert body["generationConfig"]["responseMimeType"] == "application/json"


@pytest.mark.compat(
    client="openai",
    scenario="parallel_tool_calls=false",
    checks="the one-call limit reaches the upstream (parallel_tool_calls / disable_parallel_tool_use); "
    "Gemini has no such setting: named in x-turnstile-dropped",
)
@pytest.mark.parametrize("api", APIS)
def test_a_one_call_limit_reaches_the_upstream_or_is_named_as_dropped(
    api: str, oai: openai.OpenAI, upstream: UpstreamStandin
) -> None:
    call_tools(upstream, api, Call(call_id(api, 1), "get_weather", '{"city": "Paris"}'))
    raw = oai.chat.completions.with_raw_response.create(
        model=MODEL_FOR[api],
        messages=[{"role": "user", "content": "Weather in Paris and Rome?"}],
        tools=[WEATHER],
        parallel_tool_calls=False,
    )
    assert len(raw.parse().choices[0].message.tool_calls or []) == 1
    (rec,) = only(upstream, api)
    dropped = raw.headers.get("x-turnstile-dropped")
    if api == "gemini":
        assert dropped == "parallel_tool_calls", dump(rec)
        return
    assert dropped is None
    if api == "anthropic_messages":
        assert rec.body["tool_choice"] == {"type": "auto", "disable_parallel_tool_use": True}
    else:
        assert rec.body["parallel_tool_calls"] is False


class GetWeather(BaseModel):
    city: str


@pytest.mark.compat(
    client="openai",
    scenario="parse with strict pydantic_function_tool",
    checks="strict: true and the closed schema reach the upstream (tools[].strict on OpenAI and "
    "claude-sonnet-4-5); Gemini has no such setting: named in x-turnstile-dropped; "
    "parsed_arguments come back",
)
@pytest.mark.parametrize("api", APIS)
def test_a_strict_function_tool_reaches_the_upstream_or_is_named_as_dropped(
    api: str, oai: openai.OpenAI, upstream: UpstreamStandin
) -> None:
    call = Call(call_id(api, 1), "GetWeather", '{"city": "Paris"}')
    upstream.script(
        answering(
            lambda a, _body, stream: tool_call_answer(a, [call], stream=stream),
            api=api,
            model=STRUCTURED_UPSTREAM_MODEL[api],
        )
    )
    raw = oai.chat.completions.with_raw_response.parse(
        model=STRUCTURED_MODEL[api],
        messages=[{"role": "user", "content": "Weather in Paris?"}],
        tools=[openai.pydantic_function_tool(GetWeather)],
    )
    (tc,) = raw.parse().choices[0].message.tool_calls or []
    assert tc.function.parsed_arguments == GetWeather(city="Paris")
    (rec,) = only(upstream, api)
    (tool,) = rec.body["tools"]
    dropped = raw.headers.get("x-turnstile-dropped")
    if api == "gemini":
        assert dropped == "tools[0].function.strict", dump(rec)
        return
    assert dropped is None, dump(rec)
    sent = tool.get("function", tool)
    assert sent["strict"] is True, dump(rec)
    schema = sent.get("parameters") or sent.get("input_schema")
    assert schema["additionalProperties"] is False and schema["required"] == ["city"]
