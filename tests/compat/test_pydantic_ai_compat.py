"""pydantic-ai (``pydantic-ai-slim``) through the gateway: an ``Agent`` on the OpenAI provider
(``OpenAIChatModel`` and ``OpenAIResponsesModel`` against the gateway's ``/v1``) and on the
Anthropic provider (``AnthropicModel`` against the gateway's root), each to every upstream API.

Scenarios: a plain run, a function-tool loop (the tool's result reaches the upstream paired to
its call), ``NativeOutput`` (the schema reaches the upstream's native slot, or the forced tool
where the upstream model has none) and ``ToolOutput`` (the output tool reaches the upstream and
its call comes back as the validated object).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable

import pytest
from anthropic import AsyncAnthropic
from openai import AsyncOpenAI
from pydantic import BaseModel
from pydantic_ai import Agent, BinaryContent, NativeOutput, ToolOutput
from pydantic_ai.models import Model
from pydantic_ai.models.anthropic import AnthropicModel, AnthropicModelSettings
from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel
from pydantic_ai.profiles.anthropic import anthropic_model_profile
from pydantic_ai.providers.anthropic import AnthropicProvider
from pydantic_ai.providers.openai import OpenAIProvider
from standins.tool_answers import Call
from standins.upstream import UpstreamStandin

from .conftest import MODEL_FOR
from .framework_wire import (
    NATIVE_CLAUDE,
    answer_structured,
    assert_paired,
    call_schema_tool,
    declared_tools,
    images,
    sampling,
    schema_props,
    schema_slot,
    tool_calls,
    tool_results,
)
from .scripts import call_tools, only, say, tool_names, user_texts

APIS = list(MODEL_FOR)
# Where a JSON Schema for the answer lands on each upstream (the stand-in's Claude model,
# claude-sonnet-4-20250514, has no native slot: the gateway forces its output tool there).
NATIVE_SLOT = {
    "openai_chat": "response_format",
    "openai_responses": "text.format",
    "anthropic_messages": "tool:json_output",
    "gemini": "responseJsonSchema",  # gemini-3: JSON Schema as it is (gateway/providers/gemini_models.py)
}


# A 1x1 PNG (a red dot).
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)


class City(BaseModel):
    """The structured answer the scenarios ask for."""

    name: str
    population: int


def _chat(url: str, name: str) -> Model:
    client = AsyncOpenAI(base_url=f"{url}/v1", api_key="sk-client-key", max_retries=0, timeout=15)
    return OpenAIChatModel(name, provider=OpenAIProvider(openai_client=client))


def _responses(url: str, name: str) -> Model:
    client = AsyncOpenAI(base_url=f"{url}/v1", api_key="sk-client-key", max_retries=0, timeout=15)
    return OpenAIResponsesModel(name, provider=OpenAIProvider(openai_client=client))


def _anthropic(url: str, name: str) -> Model:
    client = AsyncAnthropic(base_url=url, api_key="sk-ant-client-key", max_retries=0, timeout=15)
    # The gateway's model names are not Claude ids: the profile of a current Claude model
    # (native structured output, as the gateway offers on every upstream) is given explicitly.
    profile = anthropic_model_profile("claude-sonnet-4-5")
    return AnthropicModel(name, provider=AnthropicProvider(anthropic_client=client), profile=profile)


MODELS: dict[str, Callable[[str, str], Model]] = {
    "OpenAIChatModel": _chat,
    "OpenAIResponsesModel": _responses,
    "AnthropicModel": _anthropic,
}


def _model(kind: str, url: str, api: str) -> Model:
    return MODELS[kind](url, MODEL_FOR[api])


def _marked(scenario: str, checks: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Parametrize over (model class, api), each case carrying the compat marker of its model
    class (the matrix has one row per scenario and model class)."""

    def wrap(fn: Callable[..., None]) -> Callable[..., None]:
        cases = [
            pytest.param(
                kind,
                api,
                id=f"{kind}-{api}",
                marks=pytest.mark.compat(
                    client="pydantic-ai", scenario=f"{scenario} ({kind})", checks=checks
                ),
            )
            for kind in MODELS
            for api in APIS
        ]
        return pytest.mark.parametrize(("kind", "api"), cases)(fn)

    return wrap


@_marked(
    "Agent.run",
    "the prompt reaches the upstream as the user text; the answer is the run's output, with the "
    "upstream's token usage",
)
def test_agent_run_reaches_the_upstream_with_the_prompt(
    kind: str, api: str, gateway_url: str, upstream: UpstreamStandin
) -> None:
    say(upstream, api, "Paris is the capital.")
    agent = Agent(_model(kind, gateway_url, api), instructions="Be brief.")
    result = agent.run_sync("What is the capital of France?")
    assert result.output == "Paris is the capital."
    usage = result.usage
    assert (usage.input_tokens, usage.output_tokens) == (20, 10)  # the stand-in's usage, carried
    (rec,) = only(upstream, api)
    assert user_texts(rec) == ["What is the capital of France?"]


@_marked(
    "Agent model_settings (max_tokens, temperature)",
    "max_tokens and temperature reach the upstream in its own slots",
)
def test_model_settings_reach_the_upstream_slots(
    kind: str, api: str, gateway_url: str, upstream: UpstreamStandin
) -> None:
    say(upstream, api, "Paris.")
    agent = Agent(_model(kind, gateway_url, api), model_settings={"max_tokens": 77, "temperature": 0.25})
    assert agent.run_sync("Capital of France?").output == "Paris."
    (rec,) = only(upstream, api)
    assert sampling(rec) == (77, 0.25)


@_marked(
    "Agent with an image (BinaryContent)",
    "the PNG reaches the upstream inline in its own image shape, bytes unchanged, beside the text",
)
def test_binary_image_reaches_the_upstream_inline(
    kind: str, api: str, gateway_url: str, upstream: UpstreamStandin
) -> None:
    say(upstream, api, "A red dot.")
    agent = Agent(_model(kind, gateway_url, api))
    prompt = ["What is in this image?", BinaryContent(data=PNG, media_type="image/png")]
    assert agent.run_sync(prompt).output == "A red dot."
    (rec,) = only(upstream, api)
    assert images(rec) == [("image/png", base64.b64encode(PNG).decode())]
    assert user_texts(rec) == ["What is in this image?"]


@pytest.mark.compat(
    client="pydantic-ai",
    scenario="AnthropicModel prompt caching (anthropic_cache, anthropic_cache_instructions)",
    checks="to Claude: the top-level cache_control and the system block's cache_control as sent; "
    "elsewhere the turn is served and no cache_control reaches the upstream (no slot)",
)
@pytest.mark.parametrize("api", APIS)
def test_anthropic_cache_settings_reach_claude_and_stop_elsewhere(
    api: str, gateway_url: str, upstream: UpstreamStandin
) -> None:
    say(upstream, api, "Paris.")
    settings = AnthropicModelSettings(anthropic_cache=True, anthropic_cache_instructions=True)
    agent = Agent(_anthropic(gateway_url, MODEL_FOR[api]), instructions="Be brief.", model_settings=settings)
    assert agent.run_sync("Capital of France?").output == "Paris."
    (rec,) = only(upstream, api)
    if api != "anthropic_messages":
        assert "cache_control" not in json.dumps(rec.body)
        return
    sent = {"type": "ephemeral", "ttl": "5m"}  # what pydantic-ai sends for True
    assert rec.body["cache_control"] == sent
    assert rec.body["system"][-1]["cache_control"] == sent


@_marked(
    "Agent multi-turn (message_history)",
    "the second run's request carries the first turn (user text, the answer) before the new user text",
)
def test_second_run_carries_the_first_turn(
    kind: str, api: str, gateway_url: str, upstream: UpstreamStandin
) -> None:
    say(upstream, api, "Paris.")
    say(upstream, api, "About 2.1 million.")
    agent = Agent(_model(kind, gateway_url, api))
    first = agent.run_sync("Capital of France?")
    second = agent.run_sync("How many people live there?", message_history=first.all_messages())
    assert second.output == "About 2.1 million."
    _, rec = only(upstream, api)
    assert user_texts(rec) == ["Capital of France?", "How many people live there?"]
    assert "Paris." in json.dumps(rec.body)


@_marked(
    "Agent function tool loop",
    "the tool is declared upstream; its result reaches the upstream paired to the call's id",
)
def test_agent_tool_result_reaches_the_upstream_paired_to_its_call(
    kind: str, api: str, gateway_url: str, upstream: UpstreamStandin
) -> None:
    call_tools(upstream, api, Call("call_weather_1", "get_weather", '{"city": "Paris"}'))
    say(upstream, api, "It is sunny in Paris.")
    agent = Agent(_model(kind, gateway_url, api))
    seen: list[str] = []

    @agent.tool_plain
    def get_weather(city: str) -> str:
        """The weather in ``city``."""
        seen.append(city)
        return f"sunny, 21C in {city}"

    result = agent.run_sync("Weather in Paris?")
    assert result.output == "It is sunny in Paris."
    assert seen == ["Paris"]
    first, second = only(upstream, api)
    assert tool_names(first) == ["get_weather"]
    assert_paired(second, "get_weather", "sunny, 21C in Paris")


@_marked(
    "Agent parallel tool calls",
    "two calls in one answer: both results reach the upstream, each paired to its call's id, in call order",
)
def test_parallel_tool_results_reach_the_upstream_paired_in_call_order(
    kind: str, api: str, gateway_url: str, upstream: UpstreamStandin
) -> None:
    call_tools(
        upstream,
        api,
        Call("call_weather_1", "get_weather", '{"city": "Paris"}'),
        Call("call_weather_2", "get_weather", '{"city": "Oslo"}'),
    )
    say(upstream, api, "Sunny in Paris, snow in Oslo.")
    agent = Agent(_model(kind, gateway_url, api))

    @agent.tool_plain
    def get_weather(city: str) -> str:
        """The weather in ``city``."""
        return {"Paris": "sunny", "Oslo": "snow"}[city] + f" in {city}"

    assert agent.run_sync("Weather in Paris and Oslo?").output == "Sunny in Paris, snow in Oslo."
    _, second = only(upstream, api)
    calls = [(cid, args["city"]) for cid, name, args in tool_calls(second) if name == "get_weather"]
    assert [city for _, city in calls] == ["Paris", "Oslo"]
    results = tool_results(second)
    assert [key for key, _ in results] == [cid for cid, _ in calls]
    assert "sunny in Paris" in results[0][1] and "snow in Oslo" in results[1][1]


@_marked(
    "Agent.run_stream_sync, function tool loop",
    "both model requests stream; the tool's result reaches the upstream paired to the call's id; "
    "the streamed text is the final answer",
)
def test_streamed_tool_loop_pairs_the_result_and_streams_the_answer(
    kind: str, api: str, gateway_url: str, upstream: UpstreamStandin
) -> None:
    call_tools(upstream, api, Call("call_weather_1", "get_weather", '{"city": "Paris"}'))
    say(upstream, api, "It is sunny in Paris.")
    agent = Agent(_model(kind, gateway_url, api))

    @agent.tool_plain
    def get_weather(city: str) -> str:
        """The weather in ``city``."""
        return f"sunny, 21C in {city}"

    with agent.run_stream_sync("Weather in Paris?") as run:
        text = "".join(run.stream_text(delta=True, debounce_by=None))
    assert text == "It is sunny in Paris."
    first, second = only(upstream, api)
    assert first.stream and second.stream
    assert tool_names(first) == ["get_weather"]
    assert_paired(second, "get_weather", "sunny, 21C in Paris")


@_marked(
    "NativeOutput",
    "the output schema reaches the upstream's native slot (forced tool on a Claude model without "
    "one); the validated object comes back",
)
def test_native_output_schema_reaches_the_native_slot(
    kind: str, api: str, gateway_url: str, upstream: UpstreamStandin
) -> None:
    answer_structured(upstream, api)
    agent = Agent(_model(kind, gateway_url, api), output_type=NativeOutput(City))
    result = agent.run_sync("The biggest city of France?")
    assert result.output == City(name="x", population=1)
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
                client="pydantic-ai",
                scenario=f"NativeOutput, Claude model with the native slot ({kind})",
                checks="the output schema reaches Claude's output_config.format; the validated object "
                "comes back",
                api="anthropic_messages",
            ),
        )
        for kind in MODELS
    ],
)
def test_native_output_schema_reaches_claudes_output_config(
    kind: str, gateway_url: str, upstream: UpstreamStandin
) -> None:
    api = "anthropic_messages"
    answer_structured(upstream, api, model=NATIVE_CLAUDE)
    agent = Agent(MODELS[kind](gateway_url, NATIVE_CLAUDE), output_type=NativeOutput(City))
    result = agent.run_sync("The biggest city of France?")
    assert result.output == City(name="x", population=1)
    (rec,) = only(upstream, api)
    assert rec.model == NATIVE_CLAUDE
    slot, schema = schema_slot(rec)
    assert slot == "output_config.format"
    assert schema_props(schema) == {"name", "population"}


@_marked(
    "ToolOutput",
    "the output tool reaches the upstream with the schema as its parameters; its call comes back "
    "as the validated object",
)
def test_tool_output_reaches_the_upstream_as_a_tool(
    kind: str, api: str, gateway_url: str, upstream: UpstreamStandin
) -> None:
    call_schema_tool(upstream, api, "final_result")
    agent = Agent(_model(kind, gateway_url, api), output_type=ToolOutput(City))
    result = agent.run_sync("The biggest city of France?")
    assert result.output == City(name="x", population=1)
    (rec,) = only(upstream, api)
    assert tool_names(rec) == ["final_result"]
    assert schema_props(declared_tools(api, rec.body)["final_result"]) == {"name", "population"}
