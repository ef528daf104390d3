from __future__ import annotations

from gateway.config import Deployment
from gateway.providers.demo import DemoProvider, answer, response_events
from gateway.schema import (
    AssistantMessage,
    MessageEnd,
    PartDelta,
    Request,
    TextPart,
    ToolCallPart,
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
    assert len(resp.message.tool_calls[0].raw_arguments) == 12


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
