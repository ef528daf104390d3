"""The keyless ``demo`` deployment's answers: labelled text, tool calls whose arguments fit the
tool's schema, parallel calls, a final answer quoting tool results, real token counts and the
output budget (issue 14 item 10)."""

from __future__ import annotations

import jsonschema

from gateway.config import Deployment
from gateway.providers import demo_tokens
from gateway.providers.demo import DemoProvider, answer, response_events
from gateway.schema import (
    AssistantMessage,
    MessageEnd,
    PartDelta,
    Request,
    TextPart,
    ToolCallPart,
    ToolChoice,
    ToolDefinition,
    ToolResultMessage,
    UserMessage,
)

DEP = Deployment(name="demo", api="demo", model="turnstile-demo")
BASH = ToolDefinition(
    name="bash",
    parameters={
        "type": "object",
        "properties": {"cmd": {"type": "string"}, "n": {"type": "integer"}},
        "required": ["cmd", "n"],
    },
)


def _req(*messages, **kw) -> Request:
    return Request(model="demo", messages=list(messages), **kw)


def test_plain_question_gets_a_labelled_stand_in_answer() -> None:
    resp = answer(_req(UserMessage(content=[TextPart(text="hello there")])), DEP)
    assert resp.stop_reason == "stop"
    assert "stand-in" in resp.message.text and "hello there" in resp.message.text
    assert resp.usage.estimated and resp.usage.input_tokens > 0


def test_naming_a_tool_makes_the_demo_call_it_with_schema_shaped_arguments() -> None:
    resp = answer(_req(UserMessage(content=[TextPart(text="please use bash")]), tools=[BASH]), DEP)
    assert resp.stop_reason == "tool_use"
    call = resp.message.tool_calls[0]
    assert call.name == "bash" and call.arguments == {"cmd": "please use bash", "n": 1}


def test_answer_is_deterministic() -> None:
    req = _req(UserMessage(content=[TextPart(text="use bash")]), tools=[BASH])
    assert answer(req, DEP) == answer(req, DEP)


def test_tool_results_are_summarised() -> None:
    req = _req(
        UserMessage(content=[TextPart(text="use bash")]),
        AssistantMessage(content=[ToolCallPart(id="c1", name="bash", raw_arguments="{}")]),
        ToolResultMessage(tool_call_id="c1", content=[TextPart(text="README.md")]),
        tools=[BASH],
    )
    resp = answer(req, DEP)
    assert resp.stop_reason == "stop" and "README.md" in resp.message.text


def test_small_output_budget_cuts_a_tool_call_and_reports_length() -> None:
    req = _req(
        UserMessage(content=[TextPart(text="use bash " + "x" * 100)]), tools=[BASH], max_output_tokens=3
    )
    resp = answer(req, DEP)
    assert resp.stop_reason == "length"
    raw = resp.message.tool_calls[0].raw_arguments
    assert demo_tokens.count(raw) <= 3 and raw.startswith('{"cmd"')
    assert resp.usage.output_tokens <= 3


async def test_stream_carries_the_same_answer_in_pieces() -> None:
    req = _req(UserMessage(content=[TextPart(text="use bash")]), tools=[BASH])
    events = [e async for e in DemoProvider().stream(req, DEP, None)]
    args = "".join(e.arguments or "" for e in events if isinstance(e, PartDelta))
    assert args == answer(req, DEP).message.tool_calls[0].raw_arguments
    assert isinstance(events[-1], MessageEnd) and events[-1].stop_reason == "tool_use"
    assert len(response_events(answer(req, DEP), chunk_chars=4)) > len(events)


def test_malformed_tool_schemas_still_get_an_answer() -> None:
    for params in (
        {"type": "string"},
        {"type": "object", "properties": {"x": "int"}},
        {"required": 5},
        {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x", 3]},
    ):
        tool = ToolDefinition(name="f", parameters=params)
        resp = answer(_req(UserMessage(content=[TextPart(text="call f")]), tools=[tool]), DEP)
        assert resp.stop_reason == "tool_use" and resp.message.tool_calls[0].name == "f"


WEATHER = ToolDefinition(
    name="get_weather",
    description="Current weather for a city.",
    parameters={
        "type": "object",
        "properties": {
            "city": {"type": "string", "maxLength": 40},
            "unit": {"enum": ["celsius", "fahrenheit"]},
        },
        "required": ["city", "unit"],
        "additionalProperties": False,
    },
)
TIME = ToolDefinition(
    name="clock",
    description="The current local time in a timezone.",
    parameters={"type": "object", "properties": {"tz": {"type": "string"}}, "required": ["tz"]},
)


def _user(text: str) -> UserMessage:
    return UserMessage(content=[TextPart(text=text)])


def test_a_word_of_the_tool_description_triggers_a_call_whose_arguments_validate() -> None:
    resp = answer(_req(_user("What's the weather in Paris?"), tools=[WEATHER, TIME]), DEP)
    assert resp.stop_reason == "tool_use"
    [call] = resp.message.tool_calls
    assert call.name == "get_weather"
    jsonschema.validate(call.arguments, WEATHER.parameters)
    assert call.arguments == {"city": "Paris", "unit": "celsius"}


def test_a_question_no_tool_matches_gets_text_even_with_tools_offered() -> None:
    resp = answer(_req(_user("hello there"), tools=[WEATHER, TIME]), DEP)
    assert resp.stop_reason == "stop" and resp.message.tool_calls == []


def test_two_matching_tools_are_called_in_parallel_in_the_offered_order() -> None:
    resp = answer(_req(_user("weather in Oslo and the local time there"), tools=[WEATHER, TIME]), DEP)
    assert [c.name for c in resp.message.tool_calls] == ["get_weather", "clock"]
    assert len({c.id for c in resp.message.tool_calls}) == 2


def test_asking_for_two_things_calls_the_same_tool_twice() -> None:
    resp = answer(_req(_user("weather in Paris and in Tokyo"), tools=[WEATHER]), DEP)
    cities = [c.arguments["city"] for c in resp.message.tool_calls]
    assert cities == ["Paris", "Tokyo"]


def test_parallel_tool_calls_false_keeps_only_the_first_call() -> None:
    req = _req(
        _user("weather in Paris and in Tokyo"),
        tools=[WEATHER],
        tool_choice=ToolChoice(mode="auto", parallel=False),
    )
    assert [c.arguments["city"] for c in answer(req, DEP).message.tool_calls] == ["Paris"]


def test_required_tool_choice_calls_the_first_tool_and_a_named_choice_calls_that_one() -> None:
    required = _req(_user("hello"), tools=[WEATHER, TIME], tool_choice=ToolChoice(mode="required"))
    assert [c.name for c in answer(required, DEP).message.tool_calls] == ["get_weather"]
    named = _req(_user("weather"), tools=[WEATHER, TIME], tool_choice=ToolChoice(mode="tool", name="clock"))
    assert [c.name for c in answer(named, DEP).message.tool_calls] == ["clock"]
    none = _req(_user("weather"), tools=[WEATHER], tool_choice=ToolChoice(mode="none"))
    assert answer(none, DEP).message.tool_calls == []


def test_the_final_answer_quotes_every_result_of_the_last_round_by_tool_name() -> None:
    calls = answer(_req(_user("weather in Oslo and the local time there"), tools=[WEATHER, TIME]), DEP)
    ids = [c.id for c in calls.message.tool_calls]
    req = _req(
        _user("weather in Oslo and the local time there"),
        calls.message,
        ToolResultMessage(tool_call_id=ids[0], content=[TextPart(text="Sunny, 21 C")]),
        ToolResultMessage(tool_call_id=ids[1], content=[TextPart(text="no such zone")], is_error=True),
        tools=[WEATHER, TIME],
        tool_choice=ToolChoice(mode="required"),
    )
    resp = answer(req, DEP)
    assert resp.stop_reason == "stop" and resp.message.tool_calls == []
    assert 'get_weather returned "Sunny, 21 C"' in resp.message.text
    assert 'clock failed with "no such zone"' in resp.message.text


def test_usage_counts_real_tokens() -> None:
    req = _req(_user("hello there"))
    resp = answer(req, DEP)
    assert resp.usage.output_tokens == demo_tokens.count(resp.message.text)
    assert resp.usage.input_tokens == 3 + 4 + demo_tokens.count("hello there")
    assert demo_tokens.count("hello world") == 2  # cl100k_base, not a characters estimate


def test_a_text_answer_longer_than_max_tokens_is_cut_with_stop_reason_length() -> None:
    resp = answer(_req(_user("hello " * 50), max_output_tokens=5), DEP)
    assert resp.stop_reason == "length" and resp.usage.output_tokens == 5
    assert demo_tokens.count(resp.message.text) == 5


def test_streamed_parallel_calls_arrive_one_after_another_with_arguments_in_pieces() -> None:
    resp = answer(_req(_user("weather in Paris and in Tokyo"), tools=[WEATHER]), DEP)
    events = response_events(resp)
    deltas = {i: [e.arguments for e in events if isinstance(e, PartDelta) and e.index == i] for i in (0, 1)}
    assert all(len(d) > 1 for d in deltas.values())
    assert ["".join(deltas[i]) for i in (0, 1)] == [c.raw_arguments for c in resp.message.tool_calls]


def test_a_stop_sequence_ends_the_text_answer_before_it() -> None:
    resp = answer(_req(_user("hello there"), stop=["You said"]), DEP)
    assert resp.stop_reason == "stop" and resp.message.text.endswith("not a model. ")


def test_among_many_described_tools_a_clause_calls_only_the_best_described_one() -> None:
    tools = [
        ToolDefinition(name="Read", description="Reads a file from the local filesystem."),
        ToolDefinition(name="Write", description="Writes a file to the local filesystem."),
        ToolDefinition(name="Glob", description="Fast file pattern matching; finds files by pattern."),
    ]
    resp = answer(_req(_user("find the files matching a pattern"), tools=tools), DEP)
    assert [c.name for c in resp.message.tool_calls] == ["Glob"]


def test_a_short_tool_name_inside_another_word_is_not_a_call() -> None:
    tool = ToolDefinition(name="ls")
    assert answer(_req(_user("tell me a false story"), tools=[tool]), DEP).message.tool_calls == []
    assert [c.name for c in answer(_req(_user("run ls here"), tools=[tool]), DEP).message.tool_calls] == [
        "ls"
    ]


def test_among_a_coding_agents_many_tools_only_a_named_tool_is_called() -> None:
    from gateway.providers import demo
    from gateway.schema import Request, TextPart, ToolDefinition, UserMessage

    tools = [
        ToolDefinition(
            name=f"tool{i}", description="Executes a shell command in the terminal", input_schema={}
        )
        for i in range(demo.DESCRIPTION_MATCH_MAX_TOOLS + 1)
    ]
    words = "please execute the command in a terminal"
    request = Request(model="demo", messages=[UserMessage(content=[TextPart(text=words)])], tools=tools)
    assert demo._planned_calls(request, words) == []
