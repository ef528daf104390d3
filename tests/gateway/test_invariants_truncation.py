"""Truncation guard (invariant 3): check_truncation, StreamTruncationGuard, collect; handed
case C20 (inputs converted by hand from /work/shared/cases/handed.jsonl)."""

from __future__ import annotations

import pytest

from gateway.errors import UpstreamError, UpstreamProtocolError
from gateway.invariants import (
    INCOMPLETE_REASON,
    LENGTH_REASON,
    StreamTruncationGuard,
    arguments_complete,
    check_truncation,
    collect,
    guard_stream,
)
from gateway.schema import (
    AssistantMessage,
    MessageEnd,
    MessageStart,
    PartDelta,
    PartEnd,
    PartStart,
    Provenance,
    Response,
    StopReason,
    StreamError,
    StreamEvent,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    Usage,
)


def response(stop: StopReason, *parts: TextPart | ToolCallPart) -> Response:
    return Response(id="r", model="m", message=AssistantMessage(content=list(parts)), stop_reason=stop)


def tc(cid: str, raw: str, name: str = "run_commands") -> ToolCallPart:
    return ToolCallPart(id=cid, name=name, raw_arguments=raw)


# ----------------------------------------------------------------------------- C20


def c20a_events() -> list[StreamEvent]:
    """Step A: Anthropic stream cut by max_tokens inside a tool call, as the adapter emits it."""
    return [
        MessageStart(id="msg_3", model="claude-sonnet-4-5", usage=Usage(input_tokens=80, output_tokens=1)),
        PartStart(index=0, kind="tool_call", id="toolu_t1", name="run_commands"),
        PartDelta(index=0, arguments='{"commands": ["npm install", '),
        PartDelta(index=0, arguments='"npm test"'),
        PartEnd(index=0),
        MessageEnd(stop_reason="length", usage=Usage(input_tokens=80, output_tokens=30)),
    ]


def test_C20_A_stream_cut_in_tool_call_releases_no_tool_call_and_stops_for_length() -> None:
    out = guard_stream(c20a_events())
    assert not any(isinstance(e, PartStart | PartDelta | PartEnd) for e in out)
    assert isinstance(out[0], MessageStart)
    end = out[-1]
    assert isinstance(end, MessageEnd) and end.stop_reason == "length"
    assert [(w.id, w.raw_arguments, w.reason) for w in end.withheld_tool_calls] == [
        ("toolu_t1", '{"commands": ["npm install", "npm test"', LENGTH_REASON)
    ]
    resp = collect(out)
    assert resp.message.tool_calls == [] and resp.stop_reason == "length"


def test_C20_A_non_stream_path_agrees_with_stream_guard() -> None:
    assert check_truncation(collect(c20a_events())) == collect(guard_stream(c20a_events()))


def test_C20_B_length_with_parseable_arguments_yields_no_executable_call() -> None:
    raw = '{"commands":["npm install","npm test"]}'
    out = check_truncation(response("length", tc("call_t2", raw)))
    assert out.message.tool_calls == []
    assert out.stop_reason == "length"
    assert [(w.id, w.name, w.raw_arguments, w.reason) for w in out.withheld_tool_calls] == [
        ("call_t2", "run_commands", raw, LENGTH_REASON)
    ]


# ----------------------------------------------------------------------------- check_truncation


def test_complete_calls_pass_unchanged() -> None:
    resp = response("tool_use", TextPart(text="ok"), tc("a", '{"x": 1}'), tc("b", ""))
    assert check_truncation(resp) is resp


def test_incomplete_json_with_normal_stop_is_withheld_and_never_repaired() -> None:
    resp = response("tool_use", TextPart(text="hm"), tc("a", '{"x": [1, 2'))
    out = check_truncation(resp)
    assert out.message.content == [TextPart(text="hm")]
    assert out.stop_reason == "error"  # the upstream claimed complete calls; not a length stop
    assert out.withheld_tool_calls[0].raw_arguments == '{"x": [1, 2'
    assert out.withheld_tool_calls[0].reason == INCOMPLETE_REASON
    assert resp.message.tool_calls[0].raw_arguments == '{"x": [1, 2'  # input untouched


def test_one_bad_call_among_good_ones_keeps_the_good_ones_and_the_stop_reason() -> None:
    out = check_truncation(response("tool_use", tc("a", '{"x": 1}'), tc("b", "[1]"), tc("c", "{}")))
    assert [c.id for c in out.message.tool_calls] == ["a", "c"]
    assert out.stop_reason == "tool_use"
    assert [w.id for w in out.withheld_tool_calls] == ["b"]


def test_length_stop_withholds_every_call_but_keeps_text() -> None:
    out = check_truncation(response("length", TextPart(text="t"), tc("a", "{}"), tc("b", '{"y": 2}')))
    assert out.message.content == [TextPart(text="t")]
    assert [w.id for w in out.withheld_tool_calls] == ["a", "b"]


def test_check_truncation_is_idempotent() -> None:
    once = check_truncation(response("length", tc("a", "{")))
    assert check_truncation(once) is once


@pytest.mark.parametrize(
    ("raw", "ok"),
    [
        ("{}", True),
        ('{"a": {"b": [1]}}', True),
        ("", True),
        ("  ", True),
        ("[]", False),
        ('"x"', False),
        ("{", False),
        ('{"a": 1}}', False),
        ('{"a": 1} x', False),
        ("null", False),
    ],
)
def test_arguments_complete_only_for_one_json_object(raw: str, ok: bool) -> None:
    assert arguments_complete(raw) is ok


# ----------------------------------------------------------------------------- stream guard


def test_text_streams_immediately_while_tool_calls_are_held() -> None:
    guard = StreamTruncationGuard()
    assert guard.feed(MessageStart(id="x", model="m")) == [MessageStart(id="x", model="m")]
    assert guard.feed(PartStart(index=0, kind="tool_call", id="a", name="f")) == []
    assert guard.feed(PartDelta(index=0, arguments='{"k": "é"')) == []
    assert guard.held_bytes == len('{"k": "é"'.encode()) and guard.holding
    text = PartStart(index=1, kind="text")
    assert guard.feed(text) == [text]
    delta = PartDelta(index=1, text="hello")
    assert guard.feed(delta) == [delta]
    assert guard.feed(PartDelta(index=0, arguments="}")) == []
    assert guard.feed(PartEnd(index=0)) == []
    assert guard.feed(PartEnd(index=1)) == [PartEnd(index=1)]
    out = guard.feed(MessageEnd(stop_reason="tool_use"))
    assert [type(e).__name__ for e in out] == ["PartStart", "PartDelta", "PartDelta", "PartEnd", "MessageEnd"]
    assert guard.held_bytes == 0 and not guard.holding


def test_stream_error_drops_held_calls_and_passes() -> None:
    guard = StreamTruncationGuard()
    guard.feed(PartStart(index=0, kind="tool_call", id="a", name="f"))
    guard.feed(PartDelta(index=0, arguments="{"))
    err = StreamError(kind="upstream", message="connection reset")
    assert guard.feed(err) == [err]
    assert guard.held_bytes == 0
    # anything after the end passes unchanged
    late = PartDelta(index=0, arguments="}")
    assert guard.feed(late) == [late]


def test_stream_guard_keeps_good_parallel_calls_and_withholds_bad_one() -> None:
    events: list[StreamEvent] = [
        MessageStart(id="x", model="m"),
        PartStart(index=0, kind="tool_call", id="a", name="f"),
        PartStart(index=1, kind="tool_call", id="b", name="g"),
        PartDelta(index=1, arguments='{"q"'),
        PartDelta(index=0, arguments='{"p": 1}'),
        PartEnd(index=0),
        PartEnd(index=1),
        MessageEnd(stop_reason="tool_use"),
    ]
    out = guard_stream(events)
    resp = collect(out)
    assert [c.id for c in resp.message.tool_calls] == ["a"]
    assert resp.stop_reason == "tool_use"
    assert [w.id for w in resp.withheld_tool_calls] == ["b"]
    assert check_truncation(collect(events)) == resp


# ----------------------------------------------------------------------------- collect


def test_collect_orders_parts_by_index_and_concatenates_raw_arguments_byte_exact() -> None:
    prov = Provenance(api="anthropic_messages", provider="anthropic", model="m")
    events: list[StreamEvent] = [
        MessageStart(id="x", model="m", usage=Usage(input_tokens=5, cache_read_tokens=7)),
        PartStart(index=0, kind="thinking", provenance=prov),
        PartDelta(index=0, text="let me "),
        PartDelta(index=0, text="think"),
        PartDelta(index=0, signature="SIG"),
        PartStart(index=2, kind="tool_call", id="b", name="g"),
        PartStart(index=1, kind="tool_call", id="a", name="f"),
        PartDelta(index=2, arguments='{"z":'),
        PartDelta(index=1, arguments='{ "a" :  1 }'),
        PartDelta(index=2, arguments=' "é"}'),
        PartStart(index=3, kind="redacted_thinking", data="opaque"),
        MessageEnd(stop_reason="tool_use", usage=Usage(output_tokens=9)),
    ]
    resp = collect(events)
    c = resp.message.content
    assert c[0] == ThinkingPart(text="let me think", signature="SIG", provenance=prov)
    assert (
        isinstance(c[1], ToolCallPart) and c[1].raw_arguments == '{ "a" :  1 }' and c[1].arguments == {"a": 1}
    )
    assert (
        isinstance(c[2], ToolCallPart) and c[2].raw_arguments == '{"z": "é"}' and c[2].arguments == {"z": "é"}
    )
    assert c[3].type == "redacted_thinking"
    assert resp.usage == Usage(input_tokens=5, cache_read_tokens=7, output_tokens=9)
    assert resp.id == "x" and resp.stop_reason == "tool_use"


def test_collect_keeps_unparseable_raw_and_empty_arguments() -> None:
    resp = collect(
        [
            MessageStart(id="x", model="m"),
            PartStart(index=0, kind="tool_call", id="a", name="f"),
            PartDelta(index=0, arguments="{oops"),
            PartStart(index=1, kind="tool_call", id="b", name="g"),
            MessageEnd(stop_reason="tool_use"),
        ]
    )
    a, b = resp.message.tool_calls
    assert (a.raw_arguments, a.arguments) == ("{oops", {})
    assert (b.raw_arguments, b.arguments) == ("", {})


def test_collect_raises_on_error_and_incomplete_streams() -> None:
    with pytest.raises(UpstreamError):
        collect([MessageStart(id="x", model="m"), StreamError(kind="upstream", message="boom", status=502)])
    with pytest.raises(UpstreamProtocolError):
        collect([MessageStart(id="x", model="m")])
    with pytest.raises(UpstreamProtocolError):
        collect(
            [MessageStart(id="x", model="m"), PartDelta(index=0, text="x"), MessageEnd(stop_reason="stop")]
        )


@pytest.mark.parametrize(
    ("raw", "kind"),
    [("[1, 2]", "array"), ("null", "null"), ('"x"', "string"), ("3", "number"), ("true", "boolean")],
)
def test_arguments_that_are_json_but_not_an_object_are_withheld_saying_so(raw: str, kind: str) -> None:
    out = check_truncation(response("tool_use", tc("a", raw)))
    assert out.withheld_tool_calls[0].reason == f"arguments must be a JSON object, got {kind}"
