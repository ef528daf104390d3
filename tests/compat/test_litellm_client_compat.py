"""litellm as a client of the gateway: ``litellm.completion`` with ``model="openai/<name>"``
(``api_base`` the gateway's ``/v1``) and ``model="anthropic/<name>"`` (``api_base`` the gateway's
root), each to every upstream API: a plain completion, a stream, a tool round trip and
``response_format`` (JSON Schema)."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
from pydantic import BaseModel
from standins.tool_answers import Call
from standins.upstream import UpstreamStandin

from .conftest import MODEL_FOR
from .framework_wire import answer_structured, assert_paired, schema_props, schema_slot
from .scripts import call_tools, only, say, tool_names, user_texts

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # before litellm is imported
import litellm

APIS = list(MODEL_FOR)
# The litellm provider prefix -> how it reaches the gateway.
PROVIDERS = {"openai": ("/v1", "sk-client-key"), "anthropic": ("", "sk-ant-client-key")}
NATIVE_SLOT = {
    "openai_chat": "response_format",
    "openai_responses": "text.format",
    "anthropic_messages": "tool:json_output",  # the stand-in's Claude model has no native slot
    "gemini": "responseJsonSchema",  # gemini-3: JSON Schema as it is (gateway/providers/gemini_models.py)
}
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}


class City(BaseModel):
    """A city and how many people live there."""

    name: str
    population: int


def _cases(scenario: str, checks: str) -> pytest.MarkDecorator:
    return pytest.mark.parametrize(
        ("provider", "api"),
        [
            pytest.param(
                provider,
                api,
                id=f"{provider}-{api}",
                marks=pytest.mark.compat(
                    client="litellm", scenario=f"completion({provider}/…) {scenario}", checks=checks
                ),
            )
            for provider in PROVIDERS
            for api in APIS
        ],
    )


def _completion(provider: str, api: str, url: str, **kw: Any) -> Any:
    path, key = PROVIDERS[provider]
    return litellm.completion(
        model=f"{provider}/{MODEL_FOR[api]}",
        api_base=f"{url}{path}",
        api_key=key,
        max_retries=0,
        num_retries=0,
        timeout=15,
        **kw,
    )


@_cases("plain", "the user text reaches the upstream; the answer's text comes back")
def test_completion_reaches_the_upstream_with_the_user_text(
    provider: str, api: str, gateway_url: str, upstream: UpstreamStandin
) -> None:
    say(upstream, api, "Bonjour.")
    got = _completion(
        provider, api, gateway_url, messages=[{"role": "user", "content": "Hello in French?"}], max_tokens=64
    )
    assert got.choices[0].message.content == "Bonjour."
    (rec,) = only(upstream, api)
    assert user_texts(rec) == ["Hello in French?"]


@_cases("stream", "the upstream is asked to stream; the deltas add up to the answer's text")
def test_stream_deltas_add_up_to_the_upstream_text(
    provider: str, api: str, gateway_url: str, upstream: UpstreamStandin
) -> None:
    say(upstream, api, "Bonjour tout le monde.")
    chunks = _completion(
        provider,
        api,
        gateway_url,
        messages=[{"role": "user", "content": "Say hello."}],
        max_tokens=64,
        stream=True,
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "Bonjour tout le monde."
    (rec,) = only(upstream, api)
    assert rec.stream and user_texts(rec) == ["Say hello."]


@_cases(
    "tools round trip",
    "the tool is declared upstream; the tool message reaches the upstream paired to the call's id",
)
def test_tool_result_reaches_the_upstream_paired_to_its_call(
    provider: str, api: str, gateway_url: str, upstream: UpstreamStandin
) -> None:
    call_tools(upstream, api, Call("call_weather_1", "get_weather", '{"city": "Paris"}'))
    say(upstream, api, "It is sunny in Paris.")
    messages: list[Any] = [{"role": "user", "content": "Weather in Paris?"}]
    first = _completion(provider, api, gateway_url, messages=messages, tools=[WEATHER], max_tokens=64)
    message = first.choices[0].message
    (call,) = message.tool_calls
    assert (call.function.name, json.loads(call.function.arguments)) == ("get_weather", {"city": "Paris"})
    messages += [
        message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": "sunny, 21C in Paris"},
    ]
    final = _completion(provider, api, gateway_url, messages=messages, tools=[WEATHER], max_tokens=64)
    assert final.choices[0].message.content == "It is sunny in Paris."
    one, two = only(upstream, api)
    assert tool_names(one) == ["get_weather"]
    assert_paired(two, "get_weather", "sunny, 21C in Paris")


@_cases(
    "stream with tools",
    "the upstream is asked to stream with the tool declared; the deltas add up to the call with its "
    "id and arguments",
)
def test_streamed_tool_call_deltas_add_up_to_the_upstream_call(
    provider: str, api: str, gateway_url: str, upstream: UpstreamStandin
) -> None:
    call_tools(upstream, api, Call("call_weather_1", "get_weather", '{"city": "Paris"}'))
    chunks = _completion(
        provider,
        api,
        gateway_url,
        messages=[{"role": "user", "content": "Weather in Paris?"}],
        tools=[WEATHER],
        max_tokens=64,
        stream=True,
    )
    calls: dict[int, dict[str, str]] = {}
    for chunk in chunks:
        for delta in (chunk.choices[0].delta.tool_calls or []) if chunk.choices else []:
            call = calls.setdefault(delta.index, {"id": "", "name": "", "arguments": ""})
            call["id"] = delta.id or call["id"]
            call["name"] = delta.function.name or call["name"]
            call["arguments"] += delta.function.arguments or ""
    (call,) = calls.values()
    assert call["id"] and call["name"] == "get_weather"
    assert json.loads(call["arguments"]) == {"city": "Paris"}
    (rec,) = only(upstream, api)
    assert rec.stream and tool_names(rec) == ["get_weather"]


@_cases(
    "response_format",
    "the JSON Schema reaches the upstream's native slot (forced tool where the model has none; "
    "litellm's own forced tool for anthropic/…); the answer's content validates",
)
def test_response_format_schema_reaches_the_upstream(
    provider: str, api: str, gateway_url: str, upstream: UpstreamStandin
) -> None:
    answer_structured(upstream, api)
    got = _completion(
        provider,
        api,
        gateway_url,
        messages=[{"role": "user", "content": "The biggest city of France?"}],
        response_format=City,
        max_tokens=256,
    )
    assert City.model_validate_json(got.choices[0].message.content) == City(name="x", population=1)
    (rec,) = only(upstream, api)
    slot, schema = schema_slot(rec)
    # litellm's Anthropic provider forces its own tool for a model it does not know to have
    # native structured outputs: the gateway carries that tool as any other.
    assert slot == (NATIVE_SLOT[api] if provider == "openai" else "tool:json_tool_call")
    assert schema_props(schema) == {"name", "population"}
