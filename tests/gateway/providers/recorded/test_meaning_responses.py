"""The independent reader of OpenAI Responses answers: bodies and streams mean the same."""

from __future__ import annotations

from gateway.providers.recorded.meaning import Call
from gateway.providers.recorded.meaning_responses import responses_body, responses_events

USAGE = {
    "input_tokens": 120,
    "input_tokens_details": {"cached_tokens": 100},
    "output_tokens": 40,
    "output_tokens_details": {"reasoning_tokens": 25},
    "total_tokens": 160,
}

REASONING = {
    "id": "rs_1",
    "type": "reasoning",
    "summary": [{"type": "summary_text", "text": "Think."}],
    "encrypted_content": "enc-1",
}
MESSAGE = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "content": [{"type": "output_text", "text": "Hello", "annotations": []}],
}
CALL = {
    "id": "fc_1",
    "type": "function_call",
    "call_id": "call_1",
    "name": "get_weather",
    "arguments": '{"city":"Paris"}',
}


def _response(status: str = "completed", output: list | None = None, **extra: object) -> dict:
    body = {"id": "resp_1", "object": "response", "status": status, "output": output or [], "usage": USAGE}
    return {**body, **extra}


def test_body_reads_text_reasoning_calls_and_usage_with_cached_tokens_subtracted() -> None:
    m = responses_body(_response(output=[REASONING, MESSAGE, CALL]))
    assert m.text == "Hello"
    assert m.thinking == [("Think.", "enc-1")]
    assert m.calls == [Call("call_1", "get_weather", '{"city":"Paris"}')]
    assert m.stop == "tool_use"
    assert m.usage == {"input": 20, "output": 40, "cache_read": 100, "cache_write": 0, "reasoning": 25}


def test_incomplete_for_max_output_tokens_is_stop_reason_length() -> None:
    m = responses_body(_response("incomplete", [MESSAGE], incomplete_details={"reason": "max_output_tokens"}))
    assert (m.stop, m.raw_stop) == ("length", "incomplete:max_output_tokens")


def test_custom_tool_call_is_a_call_with_its_input_as_the_one_argument() -> None:
    item = {"type": "custom_tool_call", "call_id": "call_2", "name": "apply_patch", "input": "*** Begin"}
    assert responses_body(_response(output=[item])).calls == [
        Call("call_2", "apply_patch", '{"input":"*** Begin"}')
    ]


def test_stream_means_what_its_final_response_means() -> None:
    events = [
        {"type": "response.created", "response": _response("in_progress")},
        {"type": "response.output_item.added", "output_index": 0, "item": {**REASONING, "summary": []}},
        {"type": "response.reasoning_summary_text.delta", "item_id": "rs_1", "delta": "Thi"},
        {"type": "response.reasoning_summary_text.delta", "item_id": "rs_1", "delta": "nk."},
        {"type": "response.output_item.done", "output_index": 0, "item": REASONING},
        {"type": "response.output_item.added", "output_index": 1, "item": {**MESSAGE, "content": []}},
        {"type": "response.output_text.delta", "item_id": "msg_1", "delta": "Hel"},
        {"type": "response.output_text.delta", "item_id": "msg_1", "delta": "lo"},
        {"type": "response.output_item.done", "output_index": 1, "item": MESSAGE},
        {"type": "response.output_item.added", "output_index": 2, "item": {**CALL, "arguments": ""}},
        {"type": "response.function_call_arguments.delta", "item_id": "fc_1", "delta": '{"city":'},
        {"type": "response.function_call_arguments.delta", "item_id": "fc_1", "delta": '"Paris"}'},
        {"type": "response.output_item.done", "output_index": 2, "item": CALL},
        {"type": "response.completed", "response": _response(output=[REASONING, MESSAGE, CALL])},
    ]
    streamed, whole = responses_events(events), responses_body(events[-1]["response"])
    assert (streamed.text, streamed.thinking, streamed.calls, streamed.stop, streamed.usage) == (
        whole.text,
        whole.thinking,
        whole.calls,
        whole.stop,
        whole.usage,
    )


def test_stream_cut_before_its_end_keeps_what_it_delivered_and_has_no_stop_reason() -> None:
    events = [
        {"type": "response.output_item.added", "output_index": 0, "item": {**CALL, "arguments": ""}},
        {"type": "response.function_call_arguments.delta", "item_id": "fc_1", "delta": '{"city":'},
    ]
    m = responses_events(events)
    assert m.calls == [Call("call_1", "get_weather", '{"city":')]
    assert m.stop is None
