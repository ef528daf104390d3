"""The OpenAI Agents SDK (``openai-agents``) through the gateway to every upstream API: a
``Runner`` with one ``@function_tool`` over the SDK's Responses model (its default transport)
and over its Chat Completions model, whole and streamed — each asserting that the tool's result
reached the upstream paired to its call, with the agent's instructions and tool.

In process (``tests/e2e/test_openai_agents_sdk.py`` drives the default configuration from the
environment in a child process; this covers the model × upstream matrix)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import openai
import pytest
from agents import (
    Agent,
    Model,
    OpenAIChatCompletionsModel,
    OpenAIResponsesModel,
    RunConfig,
    Runner,
    function_tool,
    set_tracing_disabled,
)
from pydantic import BaseModel
from standins.tool_answers import Call
from standins.upstream import UpstreamStandin

from .conftest import MODEL_FOR, STRUCTURED_MODEL, STRUCTURED_UPSTREAM_MODEL
from .scripts import call_tools, dump, only, say, tool_names, user_texts
from .sdk_wire import answer_structured, call_id, calls_sent, results_sent, schema_sent, system_text

APIS = list(MODEL_FOR)
INSTRUCTIONS = "Use the get_weather tool, then answer."
RUN_TIMEOUT_S = 30


@function_tool
def get_weather(city: str) -> str:
    """The weather in a city.

    Args:
        city: the city's name
    """
    return f"sunny in {city}"


@pytest.fixture
def async_oai(gateway_url: str) -> Iterator[openai.AsyncOpenAI]:
    """The async OpenAI client the Agents SDK's models use, pointed at the gateway."""
    set_tracing_disabled(True)
    client = openai.AsyncOpenAI(
        base_url=f"{gateway_url}/v1", api_key="sk-client-key", max_retries=0, timeout=15
    )
    yield client


class City(BaseModel):
    name: str
    population: int


NATIVE_SLOT = {
    "openai_chat": {"response_format"},
    "openai_responses": {"text.format"},
    "anthropic_messages": {"output_config.format"},
    "gemini": {"responseJsonSchema", "responseSchema"},
}


def _model(kind: str, name: str, client: openai.AsyncOpenAI) -> Model:
    if kind == "responses":
        return OpenAIResponsesModel(model=name, openai_client=client)
    return OpenAIChatCompletionsModel(model=name, openai_client=client)


def _bounded(run: Any, client: openai.AsyncOpenAI) -> Any:
    """Run the coroutine ``run`` to its end within :data:`RUN_TIMEOUT_S`, then close ``client``."""

    async def bounded() -> Any:
        try:
            return await asyncio.wait_for(run, RUN_TIMEOUT_S)
        finally:
            await client.close()

    return asyncio.run(bounded())


async def _run(agent: Agent[Any], stream: bool) -> Any:
    config = RunConfig(tracing_disabled=True)
    if not stream:
        return await Runner.run(agent, "Weather in Paris?", max_turns=4, run_config=config)
    result = Runner.run_streamed(agent, "Weather in Paris?", max_turns=4, run_config=config)
    async for _ in result.stream_events():
        pass
    return result


def _agent_run(
    kind: str, api: str, stream: bool, client: openai.AsyncOpenAI, upstream: UpstreamStandin
) -> None:
    call_tools(upstream, api, Call(call_id(api, 1), "get_weather", '{"city": "Paris"}'))
    say(upstream, api, "It is sunny in Paris.")
    model = _model(kind, MODEL_FOR[api], client)
    agent = Agent(name="weather", instructions=INSTRUCTIONS, tools=[get_weather], model=model)
    result = _bounded(_run(agent, stream), client)
    assert result.final_output == "It is sunny in Paris."
    one, two = only(upstream, api)
    for rec in (one, two):
        assert tool_names(rec) == ["get_weather"], dump(rec)
        assert system_text(rec) == INSTRUCTIONS, dump(rec)
        assert rec.stream is stream, dump(rec)
    assert user_texts(one) == ["Weather in Paris?"]
    assert user_texts(two)[:1] == ["Weather in Paris?"], dump(two)
    wire_id = call_id(api, 1) if api != "gemini" else calls_sent(two)[0][0]
    assert calls_sent(two) == [(wire_id, "get_weather")], dump(two)
    ((rid, text),) = results_sent(two)
    assert rid == wire_id and "sunny in Paris" in text, dump(two)


@pytest.mark.compat(
    client="openai-agents",
    scenario="Runner + function_tool (OpenAIResponsesModel)",
    checks="instructions and tool reach the upstream; round 2 carries the call and the tool's result "
    "paired by call id; whole and streamed",
)
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize("api", APIS)
def test_agent_over_the_responses_model_completes_a_tool_loop(
    api: str, stream: bool, async_oai: openai.AsyncOpenAI, upstream: UpstreamStandin
) -> None:
    _agent_run("responses", api, stream, async_oai, upstream)


@pytest.mark.compat(
    client="openai-agents",
    scenario="Runner + function_tool (OpenAIChatCompletionsModel)",
    checks="instructions and tool reach the upstream; round 2 carries the call and the tool's result "
    "paired by call id; whole and streamed",
)
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize("api", APIS)
def test_agent_over_the_chat_completions_model_completes_a_tool_loop(
    api: str, stream: bool, async_oai: openai.AsyncOpenAI, upstream: UpstreamStandin
) -> None:
    _agent_run("chat", api, stream, async_oai, upstream)


@pytest.mark.compat(
    client="openai-agents",
    scenario="Agent output_type (structured output)",
    checks="the output type's JSON Schema reaches the upstream in its native slot over both models; "
    "final_output is the parsed object",
)
@pytest.mark.parametrize("kind", ["responses", "chat"])
@pytest.mark.parametrize("api", APIS)
def test_an_agent_output_type_reaches_the_upstream_as_native_structured_output(
    api: str, kind: str, async_oai: openai.AsyncOpenAI, upstream: UpstreamStandin
) -> None:
    answer_structured(upstream, api, STRUCTURED_UPSTREAM_MODEL[api])
    model = _model(kind, STRUCTURED_MODEL[api], async_oai)
    agent = Agent(name="geo", instructions="Answer with the city.", output_type=City, model=model)
    config = RunConfig(tracing_disabled=True)
    result = _bounded(Runner.run(agent, "The capital of Portugal?", run_config=config), async_oai)
    assert result.final_output == City(name="x", population=1)
    (rec,) = only(upstream, api)
    slot, schema = schema_sent(rec)
    assert slot in NATIVE_SLOT[api], dump(rec)
    assert set(schema["properties"]) == {"name", "population"}
