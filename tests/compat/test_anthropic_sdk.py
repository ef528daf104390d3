"""The official ``anthropic`` SDK through the gateway to every upstream API: ``messages.create``,
``messages.stream``, a tool round trip, ``messages.parse()`` structured output, the SDK's
default ``beta.messages.tool_runner`` (which threads the loop: ``thread: create`` then
``thread: continue`` with only the tool result) and extended thinking with tools to the
Anthropic upstream (the signed thinking block goes back on round 2) — each asserting what
reached the upstream."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx2
import pytest
from anthropic import beta_tool
from pydantic import BaseModel
from standins import recordings
from standins.tool_answers import Call
from standins.upstream import UpstreamStandin, replay
from standins.wirekit import recorded_calls, recorded_text

from .conftest import MODEL_FOR, STRUCTURED_MODEL, STRUCTURED_UPSTREAM_MODEL
from .scripts import call_tools, dump, only, say, tool_names, user_texts
from .sdk_wire import answer_structured, call_id, calls_sent, results_sent, schema_sent, system_text

APIS = list(MODEL_FOR)
WEATHER = {
    "name": "get_weather",
    "description": "The weather in a city.",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}
NATIVE_SLOT = {
    "openai_chat": {"response_format"},
    "openai_responses": {"text.format"},
    "anthropic_messages": {"output_config.format"},
    "gemini": {"responseJsonSchema", "responseSchema"},
}
SYSTEM = "You answer weather questions with the tool."


class City(BaseModel):
    name: str
    population: int


@beta_tool
def get_weather(city: str) -> str:
    """The weather in a city.

    Args:
        city: the city's name
    """
    return f"sunny in {city}"


@pytest.fixture
def sent() -> list[dict[str, Any]]:
    """What the SDK sent to the gateway, in order: ``{"body": ..., "beta": anthropic-beta}``."""
    return []


@pytest.fixture
def watched(gateway_url: str, sent: list[dict[str, Any]]) -> Iterator[anthropic.Anthropic]:
    """The official SDK pointed at the gateway, every request it sends kept in ``sent``."""

    def keep(request: httpx2.Request) -> None:
        sent.append({"body": json.loads(request.content), "beta": request.headers.get("anthropic-beta", "")})

    http = httpx2.Client(event_hooks={"request": [keep]}, timeout=15)
    sdk = anthropic.Anthropic(
        base_url=gateway_url, api_key="sk-ant-client-key", max_retries=0, http_client=http
    )
    yield sdk
    sdk.close()


@pytest.mark.compat(
    client="anthropic",
    scenario="messages.create",
    checks="the system prompt and user text reach the upstream; the text block and usage come back",
)
@pytest.mark.parametrize("api", APIS)
def test_messages_create_reaches_each_upstream_with_system_and_user_text(
    api: str, ant: anthropic.Anthropic, upstream: UpstreamStandin
) -> None:
    say(upstream, api, "hello from upstream")
    got = ant.messages.create(
        model=MODEL_FOR[api],
        max_tokens=64,
        system="Be brief.",
        messages=[{"role": "user", "content": "hi there"}],
    )
    assert [b.type for b in got.content] == ["text"] and got.content[0].text == "hello from upstream"
    assert got.stop_reason == "end_turn"
    assert (got.usage.input_tokens, got.usage.output_tokens) == (20, 10)
    (rec,) = only(upstream, api)
    assert user_texts(rec) == ["hi there"]
    assert system_text(rec) == "Be brief.", dump(rec)


@pytest.mark.compat(
    client="anthropic",
    scenario="messages.stream (text_stream)",
    checks="the upstream is asked to stream; text_stream yields the text; the final message has usage",
)
@pytest.mark.parametrize("api", APIS)
def test_messages_stream_text_stream_yields_the_upstream_text(
    api: str, ant: anthropic.Anthropic, upstream: UpstreamStandin
) -> None:
    say(upstream, api, "streamed hello")
    with ant.messages.stream(
        model=MODEL_FOR[api], max_tokens=64, messages=[{"role": "user", "content": "stream please"}]
    ) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert text == "streamed hello"
    assert final.stop_reason == "end_turn" and final.usage.output_tokens == 10
    (rec,) = only(upstream, api)
    assert rec.stream, dump(rec)
    assert user_texts(rec) == ["stream please"]


@pytest.mark.compat(
    client="anthropic",
    scenario="messages tools round trip",
    checks="round 2 carries the tool_use and its tool_result paired by the upstream's call id, "
    "in its own shape; whole and streamed",
)
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize("api", APIS)
def test_a_tool_result_reaches_the_upstream_paired_to_its_tool_use(
    api: str, stream: bool, ant: anthropic.Anthropic, upstream: UpstreamStandin
) -> None:
    call_tools(upstream, api, Call(call_id(api, 1), "get_weather", '{"city": "Paris"}'))
    say(upstream, api, "It is sunny in Paris.")
    messages: list[Any] = [{"role": "user", "content": "Weather in Paris?"}]

    def ask() -> Any:
        if not stream:
            return ant.messages.create(
                model=MODEL_FOR[api], max_tokens=128, messages=messages, tools=[WEATHER]
            )
        with ant.messages.stream(
            model=MODEL_FOR[api], max_tokens=128, messages=messages, tools=[WEATHER]
        ) as s:
            return s.get_final_message()

    first = ask()
    assert first.stop_reason == "tool_use"
    (use,) = [b for b in first.content if b.type == "tool_use"]
    assert (use.name, use.input) == ("get_weather", {"city": "Paris"})
    messages += [
        {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "sunny in Paris"}],
        },
    ]
    second = ask()
    assert second.content[0].type == "text" and second.content[0].text == "It is sunny in Paris."
    one, two = only(upstream, api)
    assert (one.stream, two.stream) == (stream, stream)
    assert tool_names(one) == ["get_weather"] and tool_names(two) == ["get_weather"]
    wire_id = call_id(api, 1) if api != "gemini" else calls_sent(two)[0][0]
    assert calls_sent(two) == [(wire_id, "get_weather")], dump(two)
    ((rid, text),) = results_sent(two)
    assert rid == wire_id and "sunny in Paris" in text, dump(two)


@pytest.mark.compat(
    client="anthropic",
    scenario="messages.parse (output_format)",
    checks="the pydantic model's JSON Schema reaches the upstream in its native slot "
    "(output_config.format on claude-sonnet-4-5 / response_format / text.format / Gemini responseSchema); "
    "parsed_output comes back; whole and streamed",
)
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize("api", APIS)
def test_messages_parse_sends_the_schema_in_the_native_slot(
    api: str, stream: bool, ant: anthropic.Anthropic, upstream: UpstreamStandin
) -> None:
    answer_structured(upstream, api, STRUCTURED_UPSTREAM_MODEL[api])
    params: dict[str, Any] = {
        "model": STRUCTURED_MODEL[api],
        "max_tokens": 256,
        "messages": [{"role": "user", "content": "The capital of Portugal?"}],
        "output_format": City,
    }
    if stream:
        with ant.messages.stream(**params) as s:
            got = s.get_final_message()
    else:
        got = ant.messages.parse(**params)
    assert got.parsed_output == City(name="x", population=1)
    (rec,) = only(upstream, api)
    assert rec.stream is stream
    slot, schema = schema_sent(rec)
    assert slot in NATIVE_SLOT[api], dump(rec)
    assert set(schema["properties"]) == {"name", "population"}
    assert "output_format" not in rec.body


@pytest.mark.compat(
    client="anthropic",
    scenario="beta.messages.tool_runner (default: threads)",
    checks="the SDK threads the loop (create, then continue with only the tool_result); "
    "round 2 upstream carries system, tools and the whole history, no thread field; whole and streamed",
)
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize("api", APIS)
def test_the_default_tool_runner_threads_and_the_upstream_gets_the_whole_history(
    api: str,
    stream: bool,
    watched: anthropic.Anthropic,
    sent: list[dict[str, Any]],
    upstream: UpstreamStandin,
) -> None:
    call_tools(upstream, api, Call(call_id(api, 1), "get_weather", '{"city": "Paris"}'))
    say(upstream, api, "It is sunny in Paris.")
    params: dict[str, Any] = {
        "model": MODEL_FOR[api],
        "max_tokens": 256,
        "system": SYSTEM,
        "tools": [get_weather],
        "messages": [{"role": "user", "content": "What is the weather in Paris?"}],
    }
    if stream:
        first, last = (
            s.get_final_message() for s in watched.beta.messages.tool_runner(**params, stream=True)
        )
    else:
        first, last = list(watched.beta.messages.tool_runner(**params))
    assert last.content[0].type == "text" and last.content[0].text == "It is sunny in Paris."
    # what this SDK version sends: a threaded create, then a continue with only the tool result
    create, cont = (s["body"] for s in sent)
    assert create["thread"] == {"type": "create"}
    assert "message-threads-2026-08-12" in sent[0]["beta"].split(","), sent[0]["beta"]
    assert cont["thread"] == {"type": "continue", "previous_message_id": first.id}
    assert "system" not in cont and "tools" not in cont
    assert [b["type"] for m in cont["messages"] for b in m["content"]] == ["tool_result"]
    # what the upstream received: the whole conversation on round 2
    one, two = only(upstream, api)
    for rec in (one, two):
        assert rec.stream is stream
        assert "thread" not in rec.body, dump(rec)
        assert system_text(rec) == SYSTEM, dump(rec)
        assert tool_names(rec) == ["get_weather"], dump(rec)
    assert user_texts(two)[:1] == ["What is the weather in Paris?"], dump(two)
    wire_id = call_id(api, 1) if api != "gemini" else calls_sent(two)[0][0]
    assert calls_sent(two) == [(wire_id, "get_weather")], dump(two)
    ((rid, text),) = results_sent(two)
    assert rid == wire_id and "sunny in Paris" in text, dump(two)


THINKING_TOOLS = [
    {
        "name": "weather",
        "description": "Get weather information for a location",
        "input_schema": {
            "type": "object",
            "required": ["location"],
            "properties": {"location": {"description": "the city", "type": "string"}},
        },
    }
]


@pytest.mark.compat(
    client="anthropic",
    scenario="tool_choice disable_parallel_tool_use",
    checks="the one-call limit reaches the upstream (disable_parallel_tool_use / parallel_tool_calls); "
    "Gemini has no such setting: named in x-turnstile-dropped",
)
@pytest.mark.parametrize("api", APIS)
def test_a_one_call_limit_reaches_the_upstream_or_is_named_as_dropped(
    api: str, ant: anthropic.Anthropic, upstream: UpstreamStandin
) -> None:
    call_tools(upstream, api, Call(call_id(api, 1), "get_weather", '{"city": "Paris"}'))
    raw = ant.messages.with_raw_response.create(
        model=MODEL_FOR[api],
        max_tokens=128,
        messages=[{"role": "user", "content": "Weather in Paris and Rome?"}],
        tools=[WEATHER],
        tool_choice={"type": "auto", "disable_parallel_tool_use": True},
    )
    assert [b.type for b in raw.parse().content] == ["tool_use"]
    (rec,) = only(upstream, api)
    dropped = raw.headers.get("x-turnstile-dropped")
    if api == "gemini":
        assert dropped == "tool_choice.disable_parallel_tool_use", dump(rec)
        return
    assert dropped is None
    if api == "anthropic_messages":
        assert rec.body["tool_choice"] == {"type": "auto", "disable_parallel_tool_use": True}
    else:
        assert rec.body["parallel_tool_calls"] is False


def _recorded_thinking(ex: recordings.Exchange) -> tuple[str, str]:
    """The thinking text and signature the upstream issued in ``ex`` (whole or streamed)."""
    if not ex.stream:
        block = next(b for b in ex.json()["content"] if b["type"] == "thinking")
        return block["thinking"], block["signature"]
    deltas = [ev["delta"] for ev in ex.sse_data() if ev["type"] == "content_block_delta"]
    return (
        "".join(d.get("thinking", "") for d in deltas if d["type"] == "thinking_delta"),
        "".join(d.get("signature", "") for d in deltas if d["type"] == "signature_delta"),
    )


@pytest.mark.compat(
    client="anthropic",
    scenario="extended thinking with tools",
    api="anthropic_messages",
    checks="round 2 goes up with thinking on and the signed thinking block first in the assistant turn, "
    "byte-identical (the stand-in refuses it otherwise)",
)
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_extended_thinking_tool_loop_sends_the_signed_thinking_back(
    stream: bool, ant: anthropic.Anthropic, upstream: UpstreamStandin
) -> None:
    api = "anthropic_messages"
    first_ex, second_ex = recordings.anthropic_thinking(stream)[:2]
    upstream.script(replay(first_ex, api=api), replay(second_ex, api=api))
    params: dict[str, Any] = {
        "model": MODEL_FOR[api],
        "max_tokens": 4096,
        "system": "You are a helpful assistant",
        "tools": THINKING_TOOLS,
        "thinking": {"type": "enabled", "budget_tokens": 4000},
    }
    messages: list[Any] = [{"role": "user", "content": "What's the weather in Florence, Italy?"}]

    def turn() -> Any:
        if not stream:
            return ant.messages.create(**params, messages=messages)
        with ant.messages.stream(**params, messages=messages) as s:
            return s.get_final_message()

    first = turn()
    assert first.content[0].type == "thinking" and first.stop_reason == "tool_use"
    thinking = first.content[0]
    (use,) = [b for b in first.content if b.type == "tool_use"]
    assert use.id == recorded_calls(first_ex, api)[0].id
    messages += [
        {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "40 C"}]},
    ]
    second = turn()
    assert "".join(b.text for b in second.content if b.type == "text") == recorded_text(second_ex, api)
    _one, two = only(upstream, api)
    assert two.body["thinking"] == params["thinking"]
    assistant = two.body["messages"][1]
    text, signature = _recorded_thinking(first_ex)
    assert thinking.thinking == text
    assert assistant["content"][0] == {"type": "thinking", "thinking": text, "signature": signature}, dump(
        two
    )
    assert results_sent(two) == [(use.id, "40 C")]


@beta_tool
def weather(location: str) -> str:
    """Get weather information for a location

    Args:
        location: the city
    """
    return "40 C"


@pytest.mark.compat(
    client="anthropic",
    scenario="tool_runner (threads) with extended thinking",
    api="anthropic_messages",
    checks="the thread continue carries only the tool_result; round 2 upstream gets the whole history "
    "with the signed thinking block first, byte-identical (the stand-in refuses it otherwise)",
)
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_the_threaded_tool_runner_with_thinking_sends_the_signed_thinking_back(
    stream: bool, watched: anthropic.Anthropic, sent: list[dict[str, Any]], upstream: UpstreamStandin
) -> None:
    api = "anthropic_messages"
    first_ex, second_ex = recordings.anthropic_thinking(stream)[:2]
    upstream.script(replay(first_ex, api=api), replay(second_ex, api=api))
    params: dict[str, Any] = {
        "model": MODEL_FOR[api],
        "max_tokens": 4096,
        "system": "You are a helpful assistant",
        "tools": [weather],
        "thinking": {"type": "enabled", "budget_tokens": 4000},
        "messages": [{"role": "user", "content": "What's the weather in Florence, Italy?"}],
    }
    if stream:
        first, last = (
            s.get_final_message() for s in watched.beta.messages.tool_runner(**params, stream=True)
        )
    else:
        first, last = list(watched.beta.messages.tool_runner(**params))
    assert first.content[0].type == "thinking"
    assert "".join(b.text for b in last.content if b.type == "text") == recorded_text(second_ex, api)
    _create, cont = (s["body"] for s in sent)
    assert cont["thread"]["type"] == "continue"
    assert [b["type"] for m in cont["messages"] for b in m["content"]] == ["tool_result"]
    _one, two = only(upstream, api)
    assert "thread" not in two.body and two.body["thinking"] == params["thinking"]
    text, signature = _recorded_thinking(first_ex)
    assert [m["role"] for m in two.body["messages"]] == ["user", "assistant", "user"], dump(two)
    assert two.body["messages"][1]["content"][0] == {
        "type": "thinking",
        "thinking": text,
        "signature": signature,
    }, dump(two)
    use_id = recorded_calls(first_ex, api)[0].id
    assert results_sent(two) == [(use_id, "40 C")]
