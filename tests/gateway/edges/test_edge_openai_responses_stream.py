"""Internal stream events -> OpenAI Responses SSE: the event order, sequence numbers, output
items per part, tool calls held whole, the end events and failures, keep-alives; the SDK's own
stream accumulator reads every stream."""

from __future__ import annotations

from typing import Any

import orjson
from edges_testkit import render_all, sse_events
from openai import omit
from openai._models import construct_type
from openai.lib.streaming.responses._responses import ResponseStreamState
from openai.types.responses import ResponseStreamEvent
from pydantic import TypeAdapter

from gateway.edges.openai_responses import StreamRenderer, parse_request, ping_frame
from gateway.schema import (
    MessageEnd,
    MessageStart,
    PartDelta,
    PartEnd,
    PartStart,
    Provenance,
    StreamError,
    ToolProgress,
    Usage,
    WithheldToolCall,
)

EVENTS = TypeAdapter(ResponseStreamEvent)
PROV = Provenance(api="anthropic_messages", provider="anthropic", model="claude-x")


def _renderer(**body: Any) -> StreamRenderer:
    body.setdefault("model", "m")
    body.setdefault("input", "hi")
    body["stream"] = True
    return StreamRenderer(parse_request(orjson.dumps(body)))


def _events(renderer: StreamRenderer, events: list[Any]) -> list[dict[str, Any]]:
    frames = render_all(renderer, events)
    out = []
    for name, data in sse_events(frames):
        assert name == data["type"]
        out.append(data)
    return out


def _sdk_final(events: list[dict[str, Any]], *, strict: bool = True) -> Any:
    """Feed the events to the SDK's own accumulator (it raises on any inconsistency), each
    validated against the SDK's event models (``strict``) or built as the SDK's client builds
    them (``construct_type``, which keeps values its models do not list)."""
    state: ResponseStreamState[Any] = ResponseStreamState(input_tools=omit, text_format=omit)
    for ev in events:
        event = EVENTS.validate_python(ev) if strict else construct_type(type_=ResponseStreamEvent, value=ev)
        state.handle_event(event)
    return state


TEXT_AND_CALL = [
    MessageStart(id="msg_1", model="up"),
    PartStart(index=0, kind="thinking", provenance=PROV),
    PartDelta(index=0, text="let me "),
    PartDelta(index=0, text="see"),
    PartDelta(index=0, signature="SIG"),
    PartEnd(index=0),
    PartStart(index=1, kind="text"),
    PartDelta(index=1, text="Hel"),
    PartDelta(index=1, text="lo"),
    PartEnd(index=1),
    PartStart(index=3, kind="tool_call", id="c1", name="f"),
    PartDelta(index=3, arguments='{"a":'),
    PartDelta(index=3, arguments="1}"),
    PartEnd(index=3),
    MessageEnd(stop_reason="tool_use", usage=Usage(input_tokens=3, output_tokens=4)),
]


def test_a_full_answer_streams_in_openai_order_with_sequence_numbers() -> None:
    events = _events(_renderer(include=["reasoning.encrypted_content"]), TEXT_AND_CALL)
    assert [e["type"] for e in events] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.reasoning_summary_part.added",
        "response.reasoning_summary_text.delta",
        "response.reasoning_summary_text.delta",
        "response.reasoning_summary_text.done",
        "response.reasoning_summary_part.done",
        "response.output_item.done",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.output_item.added",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    final = events[-1]["response"]
    assert final["id"] == "resp_msg_1" and final["status"] == "completed"
    assert [i["type"] for i in final["output"]] == ["reasoning", "message", "function_call"]
    assert [i.get("output_index") for i in events if i["type"] == "response.output_item.added"] == [0, 1, 2]
    assert final["output"][0]["encrypted_content"].endswith("SIG")
    assert final["output"][2]["arguments"] == '{"a":1}'
    assert final["usage"]["total_tokens"] == 7
    _sdk_final(events)


def test_truncated_answer_ends_incomplete_without_the_withheld_call() -> None:
    withheld = [WithheldToolCall(id="c2", name="f", raw_arguments='{"a', reason="cut")]
    events = _events(
        _renderer(),
        [
            MessageStart(id="m", model="up"),
            PartStart(index=0, kind="text"),
            PartDelta(index=0, text="x"),
            PartEnd(index=0),
            MessageEnd(stop_reason="length", withheld_tool_calls=withheld),
        ],
    )
    end = events[-1]
    assert end["type"] == "response.incomplete"
    assert end["response"]["incomplete_details"] == {"reason": "max_output_tokens"}
    assert all(i["type"] != "function_call" for i in end["response"]["output"])
    assert end["response"]["turnstile"]["withheld_tool_calls"][0]["id"] == "c2"
    _sdk_final(events)


def test_custom_tool_call_streams_its_input() -> None:
    events = _events(
        _renderer(tools=[{"type": "custom", "name": "patch"}]),
        [
            MessageStart(id="m", model="up"),
            PartStart(index=0, kind="tool_call", id="c1", name="patch"),
            PartDelta(index=0, arguments='{"input": "abc"}'),
            PartEnd(index=0),
            MessageEnd(stop_reason="tool_use"),
        ],
    )
    types = [e["type"] for e in events]
    assert "response.custom_tool_call_input.done" in types
    assert events[-1]["response"]["output"][0] == {
        "id": "ctc_m_0",
        "type": "custom_tool_call",
        "status": "completed",
        "call_id": "c1",
        "name": "patch",
        "input": "abc",
    }
    _sdk_final(events)


def test_a_namespaced_custom_tool_call_streams_with_its_name_and_namespace() -> None:
    ns = {
        "type": "namespace",
        "name": "functions",
        "description": "",
        "tools": [{"type": "custom", "name": "exec"}],
    }
    events = _events(
        _renderer(
            input=[
                {"type": "additional_tools", "role": "developer", "tools": [ns]},
                {"role": "user", "content": "hi"},
            ]
        ),
        [
            MessageStart(id="m", model="up"),
            PartStart(index=0, kind="tool_call", id="c1", name="functions.exec"),
            PartDelta(index=0, arguments='{"input": "text(1)"}'),
            PartEnd(index=0),
            MessageEnd(stop_reason="tool_use"),
        ],
    )
    added = next(e for e in events if e["type"] == "response.output_item.added")["item"]
    assert (added["name"], added["namespace"], added["input"]) == ("exec", "functions", "")
    assert events[-1]["response"]["output"][0] == {
        "id": "ctc_m_0",
        "type": "custom_tool_call",
        "status": "completed",
        "call_id": "c1",
        "name": "exec",
        "namespace": "functions",
        "input": "text(1)",
    }
    _sdk_final(events)
    final = EVENTS.validate_python(events[-1]).response.output[0]  # type: ignore[union-attr]
    assert (final.name, final.namespace, final.input) == ("exec", "functions", "text(1)")


def test_a_namespaced_function_call_streams_the_members_name_in_arguments_done() -> None:
    ns = {
        "type": "namespace",
        "name": "crm",
        "description": "",
        "tools": [{"type": "function", "name": "find"}],
    }
    events = _events(
        _renderer(tools=[ns]),
        [
            MessageStart(id="m", model="up"),
            PartStart(index=0, kind="tool_call", id="c1", name="crm.find"),
            PartDelta(index=0, arguments='{"q": 1}'),
            PartEnd(index=0),
            MessageEnd(stop_reason="tool_use"),
        ],
    )
    done = next(e for e in events if e["type"] == "response.function_call_arguments.done")
    assert done["name"] == "find"
    item = events[-1]["response"]["output"][0]
    assert (item["type"], item["name"], item["namespace"], item["arguments"]) == (
        "function_call",
        "find",
        "crm",
        '{"q": 1}',
    )
    _sdk_final(events)


def test_error_after_the_start_is_response_failed_with_a_code_clients_act_on() -> None:
    events = _events(
        _renderer(),
        [
            MessageStart(id="m", model="up"),
            StreamError(kind="invalid_request", message="prompt is too long: 300000 tokens", status=400),
        ],
    )
    assert events[-1]["type"] == "response.failed"
    assert events[-1]["response"]["error"]["code"] == "context_length_exceeded"
    # the code Codex acts on (a context-window error) is one the SDK's models do not list yet
    _sdk_final(events, strict=False)
    assert (
        _events(_renderer(), [MessageStart(id="m", model="up")])[-1]["response"]["error"]["code"]
        == "server_error"
    )


def test_keep_alive_and_tool_progress_are_in_progress_events_of_the_same_response() -> None:
    r = _renderer()
    frames = r.render(MessageStart(id="m", model="up"))
    frames.append(r.tool_progress("srv__tool"))
    frames.append(r.ping())
    frames += r.render(MessageEnd(stop_reason="stop"))
    events = [data for _, data in sse_events(frames)]
    assert [e["type"] for e in events][2:4] == ["response.in_progress", "response.in_progress"]
    assert {e["response"]["id"] for e in events} == {"resp_m"}
    _sdk_final(events)
    assert ping_frame().startswith(b"event: response.in_progress\n")
    assert ToolProgress  # the server hands these to tool_progress (see gateway/server.py)


def test_nothing_after_the_end() -> None:
    r = _renderer()
    r.render(MessageEnd(stop_reason="stop"))
    assert r.closed
    assert r.render(PartDelta(index=0, text="late")) == []
    assert r.finish() == []
