"""LangChain chat models through the gateway: ``ChatOpenAI`` (``langchain-openai``, the
gateway's ``/v1``: Chat Completions, and Responses with ``use_responses_api``) and
``ChatAnthropic`` (``langchain-anthropic``, the gateway's root), each to every upstream API:
``invoke``, ``stream``, a ``bind_tools`` round trip (the tool result goes back paired to the
call) and ``with_structured_output`` (``json_schema`` and ``function_calling``; ChatAnthropic's
default is a forced tool)."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from pydantic import BaseModel
from standins.tool_answers import Call
from standins.upstream import UpstreamStandin

from .conftest import MODEL_FOR
from .framework_wire import (
    NATIVE_CLAUDE,
    answer_structured,
    assert_paired,
    schema_props,
    schema_slot,
    system_texts,
)
from .langchain_clients import CHATS
from .scripts import call_tools, only, say, tool_names, user_texts

APIS = list(MODEL_FOR)
NATIVE_SLOT = {
    "openai_chat": "response_format",
    "openai_responses": "text.format",
    "anthropic_messages": "tool:json_output",  # the stand-in's Claude model has no native slot
    "gemini": "responseJsonSchema",  # gemini-3: JSON Schema as it is (gateway/providers/gemini_models.py)
}
# The tool a forced-tool structured call ends up forcing on each upstream (the client's own).
FORCED = "tool:City"


class City(BaseModel):
    """A city and how many people live there."""

    name: str
    population: int


@tool
def get_weather(city: str) -> str:
    """The weather in ``city``."""
    return f"sunny, 21C in {city}"


def _cases(
    scenario: str, checks: str | dict[str, str], kinds: tuple[str, ...] = tuple(CHATS)
) -> pytest.MarkDecorator:
    """Parametrize over (chat model class, api); each case carries its client's compat marker
    (``checks``: one text, or one per chat model class)."""
    return pytest.mark.parametrize(
        ("kind", "api"),
        [
            pytest.param(
                kind,
                api,
                id=f"{kind}-{api}",
                marks=pytest.mark.compat(client=CHATS[kind][0], scenario=f"{kind}.{scenario}", checks=checks),
            )
            for kind in kinds
            for api in APIS
        ],
    )


def _chat(kind: str, url: str, api: str) -> Any:
    return CHATS[kind][1](url, MODEL_FOR[api])


@_cases(
    "invoke",
    "the system message reaches the upstream's system slot and the message the user text; the "
    "answer's text comes back",
)
def test_invoke_reaches_the_upstream_with_the_system_and_user_text(
    kind: str, api: str, gateway_url: str, upstream: UpstreamStandin
) -> None:
    say(upstream, api, "Bonjour.")
    got = _chat(kind, gateway_url, api).invoke([SystemMessage("Be brief."), HumanMessage("Hello in French?")])
    assert got.text == "Bonjour."
    (rec,) = only(upstream, api)
    assert user_texts(rec) == ["Hello in French?"]
    assert system_texts(rec) == ["Be brief."]


@_cases("stream", "the upstream is asked to stream; the chunks add up to the answer's text")
def test_stream_chunks_add_up_to_the_upstream_text(
    kind: str, api: str, gateway_url: str, upstream: UpstreamStandin
) -> None:
    say(upstream, api, "Bonjour tout le monde.")
    text = "".join(chunk.text for chunk in _chat(kind, gateway_url, api).stream("Say hello."))
    assert text == "Bonjour tout le monde."
    (rec,) = only(upstream, api)
    assert rec.stream and user_texts(rec) == ["Say hello."]


@_cases(
    "bind_tools round trip",
    "the tool is declared upstream; the ToolMessage reaches the upstream paired to the call's id",
)
def test_bind_tools_result_reaches_the_upstream_paired_to_its_call(
    kind: str, api: str, gateway_url: str, upstream: UpstreamStandin
) -> None:
    call_tools(upstream, api, Call("call_weather_1", "get_weather", '{"city": "Paris"}'))
    say(upstream, api, "It is sunny in Paris.")
    chat = _chat(kind, gateway_url, api).bind_tools([get_weather])
    history: list[Any] = [HumanMessage("Weather in Paris?")]
    first = chat.invoke(history)
    (call,) = first.tool_calls
    assert (call["name"], call["args"]) == ("get_weather", {"city": "Paris"})
    history += [first, ToolMessage(get_weather.invoke(call["args"]), tool_call_id=call["id"])]
    final = chat.invoke(history)
    assert final.text == "It is sunny in Paris."
    one, two = only(upstream, api)
    assert tool_names(one) == ["get_weather"]
    assert_paired(two, "get_weather", "sunny, 21C in Paris")


@_cases(
    "stream with bind_tools",
    "the upstream is asked to stream with the tool declared; the streamed chunks add up to the "
    "call with its id and arguments",
)
def test_streamed_tool_call_chunks_add_up_to_the_upstream_call(
    kind: str, api: str, gateway_url: str, upstream: UpstreamStandin
) -> None:
    call_tools(upstream, api, Call("call_weather_1", "get_weather", '{"city": "Paris"}'))
    chat = _chat(kind, gateway_url, api).bind_tools([get_weather])
    total: Any = None
    for chunk in chat.stream("Weather in Paris?"):
        total = chunk if total is None else total + chunk
    (call,) = total.tool_calls
    assert (call["name"], call["args"]) == ("get_weather", {"city": "Paris"})
    assert call["id"]
    (rec,) = only(upstream, api)
    assert rec.stream and tool_names(rec) == ["get_weather"]


@_cases(
    "with_structured_output(method=json_schema)",
    "the schema reaches the upstream's native slot (forced tool on a Claude model without one); "
    "the validated object comes back",
)
def test_structured_output_json_schema_reaches_the_native_slot(
    kind: str, api: str, gateway_url: str, upstream: UpstreamStandin
) -> None:
    answer_structured(upstream, api)
    chat = _chat(kind, gateway_url, api).with_structured_output(City, method="json_schema")
    assert chat.invoke("The biggest city of France?") == City(name="x", population=1)
    (rec,) = only(upstream, api)
    slot, schema = schema_slot(rec)
    assert slot == NATIVE_SLOT[api]
    assert schema_props(schema) == {"name", "population"}


@pytest.mark.parametrize(
    "kind",
    [
        pytest.param(
            kind,
            marks=pytest.mark.compat(
                client=CHATS[kind][0],
                scenario=f"{kind}.with_structured_output(method=json_schema), Claude model with the "
                "native slot",
                checks="the schema reaches Claude's output_config.format; the validated object comes back",
                api="anthropic_messages",
            ),
        )
        for kind in CHATS
    ],
)
def test_structured_output_json_schema_reaches_claudes_output_config(
    kind: str, gateway_url: str, upstream: UpstreamStandin
) -> None:
    api = "anthropic_messages"
    answer_structured(upstream, api, model=NATIVE_CLAUDE)
    chat = CHATS[kind][1](gateway_url, NATIVE_CLAUDE).with_structured_output(City, method="json_schema")
    assert chat.invoke("The biggest city of France?") == City(name="x", population=1)
    (rec,) = only(upstream, api)
    assert rec.model == NATIVE_CLAUDE
    slot, schema = schema_slot(rec)
    assert slot == "output_config.format"
    assert schema_props(schema) == {"name", "population"}


@_cases(
    "with_structured_output(method=function_calling)",
    "the schema reaches the upstream as the forced tool's parameters; its call comes back as the "
    "validated object",
)
def test_structured_output_function_calling_forces_the_schema_tool(
    kind: str, api: str, gateway_url: str, upstream: UpstreamStandin
) -> None:
    answer_structured(upstream, api)
    chat = _chat(kind, gateway_url, api).with_structured_output(City, method="function_calling")
    assert chat.invoke("The biggest city of France?") == City(name="x", population=1)
    (rec,) = only(upstream, api)
    slot, schema = schema_slot(rec)
    assert slot == FORCED
    assert schema_props(schema) == {"name", "population"}


@_cases(
    "with_structured_output()",
    {
        **dict.fromkeys(
            ("ChatOpenAI", "ChatOpenAI(use_responses_api)"),
            "the default method (json_schema): the schema reaches the upstream's native slot (forced "
            "tool on a Claude model without one); the validated object comes back",
        ),
        "ChatAnthropic": "the default method (function_calling): the schema reaches the upstream as "
        "the forced tool's parameters; the validated object comes back",
    },
)
def test_structured_output_default_method_reaches_the_upstream(
    kind: str, api: str, gateway_url: str, upstream: UpstreamStandin
) -> None:
    answer_structured(upstream, api)
    chat = _chat(kind, gateway_url, api).with_structured_output(City)
    assert chat.invoke("The biggest city of France?") == City(name="x", population=1)
    (rec,) = only(upstream, api)
    slot, schema = schema_slot(rec)
    assert slot == (FORCED if kind == "ChatAnthropic" else NATIVE_SLOT[api])
    assert schema_props(schema) == {"name", "population"}
