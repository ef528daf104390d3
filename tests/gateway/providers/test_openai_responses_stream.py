"""Streaming side of gateway/providers/openai_responses.py (openai_responses_stream.py), from
recorded Responses streams (fantasy TestOpenAIResponsesCommon/openai-gpt-4o-mini and
TestOpenAIResponsesWithSummaryThinking/openai-gpt-5): the stream gives the same answer as the
whole body of the same turn would, in any read size; failures before output are raised so the
route layer can fall back."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from _wire_helpers import cassette, collect, replay, response_body, summary, usage_tuple

from gateway.config import Deployment
from gateway.errors import UpstreamError, UpstreamProtocolError
from gateway.providers import openai_responses
from gateway.providers.wire import CallContext
from gateway.schema import (
    MessageEnd,
    MessageStart,
    PartDelta,
    PartStart,
    Request,
    StreamError,
    TextPart,
    UserMessage,
)

DEP = Deployment(name="rs", api="openai_responses", model="gpt-5")
COMMON = "fantasy/providertests/testdata/TestOpenAIResponsesCommon/openai-gpt-4o-mini/"
THINKING = "fantasy/providertests/testdata/TestOpenAIResponsesWithSummaryThinking/openai-gpt-5/"
AZURE = "fantasy/providertests/testdata/TestAzureResponsesCommon/azure-gpt-5-mini/"  # Azure OpenAI v1


def _parser() -> Any:
    request = Request(model="m", messages=[UserMessage(content=[TextPart(text="hi")])], stream=True)
    return openai_responses.new_stream_parser(CallContext(deployment=DEP, request=request))


def _sse(events: list[dict[str, Any]]) -> bytes:
    return b"".join(
        b"event: " + ev["type"].encode() + b"\ndata: " + orjson.dumps(ev | {"sequence_number": i}) + b"\n\n"
        for i, ev in enumerate(events)
    )


def _final(raw: bytes) -> dict[str, Any]:
    for block in raw.split(b"\n\n"):
        for line in block.split(b"\n"):
            if line.startswith(b"data:") and b'"response.completed"' in line:
                return dict(orjson.loads(line[5:])["response"])
    raise AssertionError("no response.completed")


def _signed(parts: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    return [(p[0], p[1], bool(p[2])) if p[0] == "thinking" else p for p in parts]


@pytest.mark.parametrize(
    "rel",
    [
        COMMON + "simple_streaming.yaml",
        COMMON + "multi_tool_streaming.yaml",
        THINKING + "thinking-streaming.yaml",
    ],
)
@pytest.mark.parametrize("chunk", [None, 7, 301])
def test_recorded_stream_gives_the_answer_its_final_response_holds(rel: str, chunk: int | None) -> None:
    for interaction in cassette(rel):
        raw = response_body(interaction)
        events = replay(_parser(), raw, chunk)
        streamed = collect(events)
        final = _final(raw)
        whole = openai_responses.parse_response(
            orjson.dumps(final), CallContext(deployment=DEP, request=Request(model="m", messages=[]))
        )
        # response.completed repeats the output with a freshly encrypted copy of each reasoning
        # item (another string, equally valid): the stream keeps the output_item.done one
        assert _signed(summary(streamed)) == _signed(summary(whole))
        assert streamed.stop_reason == whole.stop_reason
        assert usage_tuple(streamed.usage) == usage_tuple(whole.usage)
        assert streamed.id == final["id"]


def test_reasoning_part_opens_at_its_first_summary_and_gets_its_signature_at_item_done() -> None:
    raw = response_body(cassette(THINKING + "thinking-streaming.yaml")[0])
    events = replay(_parser(), raw)
    assert isinstance(events[0], MessageStart) and isinstance(events[1], PartStart)
    assert events[1].kind == "thinking" and events[1].provenance is not None
    assert events[1].provenance.api == "openai_responses"
    sigs = [e for e in events if isinstance(e, PartDelta) and e.signature]
    assert len(sigs) == 1 and sigs[0].index == 0 and sigs[0].signature.startswith("gAAAA")


def _created() -> list[dict[str, Any]]:
    resp = {"id": "resp_1", "status": "in_progress", "model": "gpt-5", "output": []}
    return [
        {"type": "response.created", "response": resp},
        {"type": "response.in_progress", "response": resp},
    ]


@pytest.mark.parametrize(
    ("code", "status"),
    [("rate_limit_exceeded", 429), ("context_length_exceeded", 400), ("server_error", 500)],
)
def test_failure_before_any_output_raises_with_the_http_status_of_its_code(code: str, status: int) -> None:
    failed = {
        "type": "response.failed",
        "response": {"id": "resp_1", "status": "failed", "error": {"code": code, "message": "no"}},
    }
    with pytest.raises(UpstreamError) as info:
        replay(_parser(), _sse([*_created(), failed]))
    assert info.value.status == status and code in info.value.message


def test_error_event_before_output_raises() -> None:
    err = {"type": "error", "code": "rate_limit_exceeded", "message": "slow down", "param": None}
    with pytest.raises(UpstreamError) as info:
        replay(_parser(), _sse([*_created(), err]))
    assert info.value.status == 429


def test_failure_after_output_started_is_a_stream_error() -> None:
    text = {
        "type": "response.output_text.delta",
        "item_id": "msg_1",
        "content_index": 0,
        "output_index": 0,
        "delta": "Hi",
    }
    added = {
        "type": "response.output_item.added",
        "output_index": 0,
        "item": {"id": "msg_1", "type": "message", "content": []},
    }
    failed = {
        "type": "response.failed",
        "response": {"status": "failed", "error": {"code": "server_error", "message": "boom"}},
    }
    events = replay(_parser(), _sse([*_created(), added, text, failed]))
    assert isinstance(events[-1], StreamError)
    assert events[-1].status == 500 and "boom" in events[-1].message
    assert [e.text for e in events if isinstance(e, PartDelta)] == ["Hi"]


def test_stream_cut_before_completed_is_a_protocol_error() -> None:
    with pytest.raises(UpstreamProtocolError):
        replay(_parser(), _sse(_created()))


def _call_item(**extra: Any) -> dict[str, Any]:
    return {
        "id": "fc_1",
        "type": "function_call",
        "call_id": "call_1",
        "name": "add",
        "arguments": "",
        **extra,
    }


def _completed(status: str = "completed", **extra: Any) -> dict[str, Any]:
    resp = {
        "id": "resp_1",
        "status": status,
        "model": "gpt-5",
        "output": [],
        "usage": {"input_tokens": 5, "output_tokens": 7},
    }
    kind = "response.completed" if status == "completed" else "response.incomplete"
    return {"type": kind, "response": resp | extra}


def test_arguments_only_in_the_done_event_are_taken_whole() -> None:
    events = [
        *_created(),
        {"type": "response.output_item.added", "output_index": 0, "item": _call_item()},
        {
            "type": "response.function_call_arguments.done",
            "item_id": "fc_1",
            "output_index": 0,
            "arguments": '{"a":1}',
        },
        {"type": "response.output_item.done", "output_index": 0, "item": _call_item(arguments='{"a":1}')},
        _completed(),
    ]
    resp = collect(replay(_parser(), _sse(events)))
    assert resp.stop_reason == "tool_use"
    assert [(c.id, c.raw_arguments) for c in resp.message.tool_calls] == [("call_1", '{"a":1}')]


def test_incomplete_mid_call_ends_the_open_part_with_length() -> None:
    events = [
        *_created(),
        {"type": "response.output_item.added", "output_index": 0, "item": _call_item()},
        {
            "type": "response.function_call_arguments.delta",
            "item_id": "fc_1",
            "output_index": 0,
            "delta": '{"a":',
        },
        _completed("incomplete", incomplete_details={"reason": "max_output_tokens"}),
    ]
    out = replay(_parser(), _sse(events))
    resp = collect(out)
    assert resp.stop_reason == "length"
    assert resp.message.tool_calls[0].raw_arguments == '{"a":'
    assert isinstance(out[-1], MessageEnd) and out[-1].usage.output_tokens == 7


def test_summary_parts_of_one_reasoning_item_are_one_thinking_part() -> None:
    def delta(i: int, text: str) -> dict[str, Any]:
        return {
            "type": "response.reasoning_summary_text.delta",
            "item_id": "rs_1",
            "output_index": 0,
            "summary_index": i,
            "delta": text,
        }

    item = {"id": "rs_1", "type": "reasoning", "summary": [], "encrypted_content": None}
    events = [
        *_created(),
        {"type": "response.output_item.added", "output_index": 0, "item": item},
        delta(0, "one"),
        delta(1, "two"),
        {
            "type": "response.output_item.done",
            "output_index": 0,
            "item": item | {"encrypted_content": "gAAAA-x"},
        },
        _completed(),
    ]
    resp = collect(replay(_parser(), _sse(events)))
    assert summary(resp) == [("thinking", "one\n\ntwo", "gAAAA-x")]


def test_reasoning_without_text_or_content_makes_no_part() -> None:
    item = {"id": "rs_1", "type": "reasoning", "summary": []}
    events = [
        *_created(),
        {"type": "response.output_item.added", "output_index": 0, "item": item},
        {"type": "response.output_item.done", "output_index": 0, "item": item},
        _completed(),
    ]
    assert collect(replay(_parser(), _sse(events))).message.content == []


def test_message_item_done_without_deltas_gives_its_text() -> None:
    item = {"id": "msg_1", "type": "message", "content": [{"type": "output_text", "text": "whole"}]}
    events = [
        *_created(),
        {"type": "response.output_item.added", "output_index": 0, "item": item | {"content": []}},
        {"type": "response.output_item.done", "output_index": 0, "item": item},
        _completed(),
    ]
    assert summary(collect(replay(_parser(), _sse(events)))) == [("text", "whole")]


def test_unknown_events_are_ignored() -> None:
    events = [*_created(), {"type": "response.something_new", "x": 1}, _completed()]
    resp = collect(replay(_parser(), _sse(events)))
    assert resp.stop_reason == "stop" and resp.message.content == []


def test_non_json_data_is_a_protocol_error() -> None:
    with pytest.raises(UpstreamProtocolError):
        _parser().feed("response.created", b"{nope")


def _custom_item(**extra: Any) -> dict[str, Any]:
    item = {
        "id": "ctc_1",
        "type": "custom_tool_call",
        "call_id": "call_c",
        "name": "apply_patch",
        "input": "",
    }
    return item | extra


PATCH = '*** Begin Patch\n"quoted" \\ tab\t\n*** End Patch'


@pytest.mark.parametrize("streamed", [True, False], ids=["input deltas", "input only at item done"])
def test_custom_tool_call_is_the_emulated_function_with_its_input_as_one_string(streamed: bool) -> None:
    deltas = [
        {"type": "response.custom_tool_call_input.delta", "item_id": "ctc_1", "output_index": 0, "delta": d}
        for d in (PATCH[:9], PATCH[9:20], PATCH[20:])
    ]
    events = [
        *_created(),
        {"type": "response.output_item.added", "output_index": 0, "item": _custom_item()},
        *(deltas if streamed else []),
        {"type": "response.output_item.done", "output_index": 0, "item": _custom_item(input=PATCH)},
        _completed(),
    ]
    resp = collect(replay(_parser(), _sse(events)))
    assert resp.stop_reason == "tool_use"
    [call] = resp.message.tool_calls
    assert (call.id, call.name, call.raw_arguments) == (
        "call_c",
        "apply_patch",
        openai_responses.custom_arguments(PATCH),
    )
    assert call.arguments == {"input": PATCH}
