"""What a newcomer with no key tries first, through the four official SDKs against the embedded
default configuration (issue 14 item 10): the ``demo`` deployment completes a two-round tool loop
(tool call, the client runs the tool, a final answer quoting its result), answers with parallel
tool calls in one turn (one only with ``parallel_tool_calls`` false) and gives structured output
that each SDK's ``parse()`` accepts, whole and streamed."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import anthropic
import openai
import pytest
from google import genai
from google.genai import types
from pydantic import BaseModel
from standins.servers import GatewayServer, LoopThread

from gateway.config import Settings, default_config_path, load_config
from gateway.server import create_app

WEATHER_SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
    "additionalProperties": False,
}
WEATHER_DESCRIPTION = "Current weather for a city."
ASK_ONE = "What's the weather in Paris?"
ASK_TWO = "weather in Paris and in Tokyo"


def get_weather(city: str) -> str:
    """The client's tool: what the final answer must quote."""
    return f"Sunny, 21 C in {city}"


class Pet(BaseModel):
    name: str
    kind: Literal["cat", "dog"]
    legs: int


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The gateway serving ``config/default.yaml`` with no provider key set (so only ``demo``
    is enabled), its MCP servers left out (no subprocesses for a models-only test)."""
    db = tmp_path_factory.mktemp("demo") / "t.db"
    config = load_config(default_config_path())
    config.mcp.servers = []
    with pytest.MonkeyPatch.context() as mp:
        for dep in config.deployments:
            if dep.api_key_env:
                mp.delenv(dep.api_key_env, raising=False)
        loop = LoopThread()
        server = GatewayServer(create_app(config=config, settings=Settings(db_path=db, log_level="warning")))
        loop.call(server.start())
        try:
            yield str(server.url)
        finally:
            loop.call(server.stop())
            loop.close()


@pytest.fixture
def oai(url: str) -> Iterator[openai.OpenAI]:
    client = openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0, timeout=15)
    yield client
    client.close()


@pytest.fixture
def ant(url: str) -> Iterator[anthropic.Anthropic]:
    client = anthropic.Anthropic(base_url=url, api_key="unused", max_retries=0, timeout=15)
    yield client
    client.close()


@pytest.fixture
def gem(url: str) -> Iterator[genai.Client]:
    client = genai.Client(api_key="unused", http_options=types.HttpOptions(base_url=url, timeout=15_000))
    yield client
    client.close()


CHAT_TOOLS: Any = [
    {
        "type": "function",
        "function": {"name": "get_weather", "description": WEATHER_DESCRIPTION, "parameters": WEATHER_SCHEMA},
    }
]


def test_openai_chat_completes_a_two_round_tool_loop(oai: openai.OpenAI) -> None:
    messages: list[Any] = [{"role": "user", "content": ASK_ONE}]
    first = oai.chat.completions.create(model="demo", messages=messages, tools=CHAT_TOOLS)
    assert first.choices[0].finish_reason == "tool_calls"
    [call] = first.choices[0].message.tool_calls or []
    assert call.type == "function"
    result = get_weather(**json.loads(call.function.arguments))
    messages += [
        first.choices[0].message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": result},
    ]
    final = oai.chat.completions.create(model="demo", messages=messages, tools=CHAT_TOOLS)
    assert final.choices[0].finish_reason == "stop"
    assert result in (final.choices[0].message.content or "")
    assert final.usage is not None and final.usage.prompt_tokens > first.usage.prompt_tokens  # type: ignore[union-attr]


def test_openai_chat_streams_parallel_tool_calls_with_arguments_in_pieces(oai: openai.OpenAI) -> None:
    messages: Any = [{"role": "user", "content": ASK_TWO}]
    pieces: dict[int, list[str]] = {}
    with oai.chat.completions.stream(model="demo", messages=messages, tools=CHAT_TOOLS) as stream:
        for event in stream:
            if event.type == "tool_calls.function.arguments.delta":
                pieces.setdefault(event.index, []).append(event.arguments_delta)
        final = stream.get_final_completion()
    calls = final.choices[0].message.tool_calls or []
    assert [json.loads(c.function.arguments)["city"] for c in calls] == ["Paris", "Tokyo"]
    assert sorted(pieces) == [0, 1] and all(len(p) > 1 for p in pieces.values())
    single = oai.chat.completions.create(
        model="demo", messages=messages, tools=CHAT_TOOLS, parallel_tool_calls=False
    )
    assert len(single.choices[0].message.tool_calls or []) == 1


def test_anthropic_completes_a_two_round_tool_loop_with_parallel_calls(ant: anthropic.Anthropic) -> None:
    tools: Any = [{"name": "get_weather", "description": WEATHER_DESCRIPTION, "input_schema": WEATHER_SCHEMA}]
    messages: list[Any] = [{"role": "user", "content": ASK_TWO}]
    with ant.messages.stream(model="demo", max_tokens=512, messages=messages, tools=tools) as stream:
        pieces = [e.partial_json for e in stream if e.type == "input_json"]
        first = stream.get_final_message()
    assert first.stop_reason == "tool_use" and len(pieces) > 2
    uses = [b for b in first.content if b.type == "tool_use"]
    assert len(uses) == 2
    results = [get_weather(**u.input) for u in uses]  # type: ignore[arg-type]
    messages += [
        {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": u.id, "content": r}
                for u, r in zip(uses, results, strict=True)
            ],
        },
    ]
    with ant.messages.stream(model="demo", max_tokens=512, messages=messages, tools=tools) as stream:
        final = stream.get_final_message()
    assert final.stop_reason == "end_turn"
    text = "".join(b.text for b in final.content if b.type == "text")
    assert all(r in text for r in results)
    one = ant.messages.create(
        model="demo",
        max_tokens=512,
        messages=[{"role": "user", "content": ASK_TWO}],
        tools=tools,
        tool_choice={"type": "auto", "disable_parallel_tool_use": True},
    )
    assert len([b for b in one.content if b.type == "tool_use"]) == 1


def test_anthropic_max_tokens_cuts_the_demo_answer(ant: anthropic.Anthropic) -> None:
    cut = ant.messages.create(
        model="demo", max_tokens=5, messages=[{"role": "user", "content": "hello " * 40}]
    )
    assert cut.stop_reason == "max_tokens" and cut.usage.output_tokens == 5


def test_responses_completes_a_two_round_tool_loop_with_parallel_calls(oai: openai.OpenAI) -> None:
    tools: Any = [
        {
            "type": "function",
            "name": "get_weather",
            "description": WEATHER_DESCRIPTION,
            "parameters": WEATHER_SCHEMA,
            "strict": True,
        }
    ]
    with oai.responses.stream(model="demo", input=ASK_TWO, tools=tools) as stream:
        deltas = [e for e in stream if e.type == "response.function_call_arguments.delta"]
        first = stream.get_final_response()
    assert len({e.output_index for e in deltas}) == 2
    calls = [item for item in first.output if item.type == "function_call"]
    assert len(calls) == 2
    results = [get_weather(**json.loads(c.arguments)) for c in calls]
    outputs: Any = [
        {"type": "function_call_output", "call_id": c.call_id, "output": r}
        for c, r in zip(calls, results, strict=True)
    ]
    final = oai.responses.create(model="demo", previous_response_id=first.id, input=outputs, tools=tools)
    assert all(r in final.output_text for r in results)
    one = oai.responses.create(model="demo", input=ASK_TWO, tools=tools, parallel_tool_calls=False)
    assert len([i for i in one.output if i.type == "function_call"]) == 1


def test_responses_parse_gives_the_pydantic_model(oai: openai.OpenAI) -> None:
    parsed = oai.responses.parse(model="demo", input="invent a pet", text_format=Pet).output_parsed
    assert isinstance(parsed, Pet) and parsed.kind == "cat"


def test_gemini_completes_a_two_round_tool_loop_with_parallel_calls(gem: genai.Client) -> None:
    tool = types.Tool(
        function_declarations=[
            types.FunctionDeclaration(
                name="get_weather", description=WEATHER_DESCRIPTION, parameters_json_schema=WEATHER_SCHEMA
            )
        ]
    )
    config = types.GenerateContentConfig(tools=[tool])
    contents: list[Any] = [types.Content(role="user", parts=[types.Part(text=ASK_TWO)])]
    first = gem.models.generate_content(model="demo", contents=contents, config=config)
    calls = first.function_calls or []
    assert len(calls) == 2
    results = [get_weather(**(c.args or {})) for c in calls]
    contents += [
        first.candidates[0].content,  # type: ignore[index]
        types.Content(
            role="user",
            parts=[
                types.Part.from_function_response(name=c.name or "", response={"result": r})
                for c, r in zip(calls, results, strict=True)
            ],
        ),
    ]
    final = gem.models.generate_content(model="demo", contents=contents, config=config)
    assert all(r in (final.text or "") for r in results)


def test_gemini_structured_output_parses_into_the_model(gem: genai.Client) -> None:
    config = types.GenerateContentConfig(response_mime_type="application/json", response_schema=Pet)
    resp = gem.models.generate_content(model="demo", contents="invent a pet", config=config)
    assert isinstance(resp.parsed, Pet)


def test_the_readme_tool_loop_runs_against_the_keyless_default(url: str, capsys: Any) -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    [block] = [b for b in re.findall(r"```python\n(.*?)```", readme, flags=re.S) if "get_weather" in b]
    exec(compile(block.replace("http://127.0.0.1:4000", url), "README.md", "exec"), {})
    shown = block.strip().splitlines()[-1].removeprefix("# ")
    assert capsys.readouterr().out.strip() == shown


def test_the_models_list_labels_demo_a_stand_in(oai: openai.OpenAI) -> None:
    [demo] = [m for m in oai.models.list() if m.id == "demo"]
    assert "stand-in" in str(demo.model_dump().get("description"))
