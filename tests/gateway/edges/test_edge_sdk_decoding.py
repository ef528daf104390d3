"""The official SDKs decode what the edges render: non-streaming bodies, streams (through the
SDKs' own stream accumulators), errors and the models list. The SDK clients talk to an
``httpx.MockTransport`` that serves the rendered bytes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anthropic
import httpx
import httpx2
import openai
import orjson
import pytest
from edges_testkit import c10_events, c12_events, c13_events, c30b_events, render_all

from gateway.edges import anthropic_messages, openai_chat
from gateway.errors import InvalidRequest, ModelNotFound, UpstreamError
from gateway.schema import (
    AssistantMessage,
    MessageEnd,
    MessageStart,
    PartDelta,
    PartEnd,
    PartStart,
    Provenance,
    Request,
    Response,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    Usage,
    UserMessage,
)

Handler = Callable[[httpx.Request], httpx.Response]


def _sse_response(frames: list[bytes]) -> Handler:
    return lambda _req: httpx.Response(
        200, content=b"".join(frames), headers={"content-type": "text/event-stream"}
    )


def _json_response(body: Any, status: int = 200) -> Handler:
    return lambda _req: httpx.Response(
        status, content=orjson.dumps(body), headers={"content-type": "application/json"}
    )


def _openai(handler: Handler) -> openai.OpenAI:
    return openai.OpenAI(
        api_key="k",
        base_url="http://t/v1",
        max_retries=0,
        http_client=httpx.Client(transport=httpx.MockTransport(handler)),  # type: ignore[arg-type]
    )


def _anthropic(handler: Handler) -> anthropic.Anthropic:
    """An Anthropic client (this SDK version ships its own ``httpx2``) serving ``handler``."""

    def handler2(request: httpx2.Request) -> httpx2.Response:
        resp = handler(httpx.Request(request.method, str(request.url)))
        return httpx2.Response(resp.status_code, content=resp.content, headers=dict(resp.headers))

    return anthropic.Anthropic(
        api_key="k",
        base_url="http://t",
        max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler2)),
    )


def _req(include_usage: bool = False) -> Request:
    return Request(model="m", messages=[UserMessage(content=[])], stream=True, include_usage=include_usage)


MSGS: Any = [{"role": "user", "content": "hi"}]


def test_openai_stream_accumulator_assembles_c10_tool_calls_by_index() -> None:
    frames = render_all(openai_chat.StreamRenderer(_req()), c10_events())
    client = _openai(_sse_response(frames))
    with client.chat.completions.stream(model="m", messages=MSGS) as stream:
        final = stream.get_final_completion()
    msg = final.choices[0].message
    assert msg.content == "Checking both hosts."
    assert msg.tool_calls is not None
    assert [(c.id, c.function.name, c.function.arguments) for c in msg.tool_calls] == [  # type: ignore[union-attr]
        ("toolu_s1", "ping", '{"host":"a.example"}'),
        ("toolu_s2", "ping", '{"host":"b.example"}'),
    ]
    assert final.choices[0].finish_reason == "tool_calls"


def test_openai_stream_accumulator_reads_usage_chunk() -> None:
    frames = render_all(openai_chat.StreamRenderer(_req(include_usage=True)), c30b_events())
    client = _openai(_sse_response(frames))
    with client.chat.completions.stream(
        model="m", messages=MSGS, stream_options={"include_usage": True}
    ) as s:
        final = s.get_final_completion()
    assert final.usage is not None
    assert final.usage.prompt_tokens == 2004
    assert final.usage.prompt_tokens_details is not None
    assert final.usage.prompt_tokens_details.cached_tokens == 2000
    assert final.choices[0].message.content == "Hi."


@pytest.mark.parametrize("events", [c10_events(), c12_events(), c13_events(), c30b_events()])
def test_anthropic_stream_accumulator_matches_rendered_non_stream_body(events: list[Any]) -> None:
    frames = render_all(anthropic_messages.StreamRenderer(_req()), events)
    client = _anthropic(_sse_response(frames))
    with client.messages.stream(model="m", max_tokens=10, messages=MSGS) as stream:
        final = stream.get_final_message()
    # the accumulated message equals what the non-streaming renderer makes of the same events
    parts: dict[int, Any] = {}
    end = events[-1]
    for ev in events:
        if isinstance(ev, PartStart):
            parts[ev.index] = [ev, ""]
        elif isinstance(ev, PartDelta):
            parts[ev.index][1] += ev.text or ev.arguments or ""
    content: list[Any] = []
    for start, acc in parts.values():
        if start.kind == "text":
            content.append(TextPart(text=acc))
        else:
            content.append(
                ToolCallPart(id=start.id, name=start.name, arguments=orjson.loads(acc), raw_arguments=acc)
            )
    resp = Response(
        id=events[0].id,
        model=events[0].model,
        message=AssistantMessage(content=content),
        stop_reason=end.stop_reason,
        usage=end.usage,
    )
    expected = anthropic_messages.render_response(resp, _req())
    expected.pop("turnstile", None)
    got = final.model_dump(exclude_none=True)
    assert got["content"] == expected["content"]
    assert got["stop_reason"] == expected["stop_reason"]
    assert got["id"] == expected["id"]
    assert got["usage"]["output_tokens"] == expected["usage"]["output_tokens"]


def test_anthropic_stream_c13_equals_non_streaming_response() -> None:
    frames = render_all(anthropic_messages.StreamRenderer(_req()), c13_events())
    with _anthropic(_sse_response(frames)).messages.stream(model="m", max_tokens=10, messages=MSGS) as s:
        streamed = s.get_final_message()
    resp = Response(
        id="gem-1",
        model="gemini-2.5-pro",
        message=AssistantMessage(
            content=[
                ToolCallPart(
                    id="call_add",
                    name="add_numbers",
                    arguments={"a": 17, "b": 25},
                    raw_arguments='{"a":17,"b":25}',
                )
            ]
        ),
        stop_reason="tool_use",
        usage=Usage(input_tokens=30, output_tokens=8),
    )
    body = anthropic_messages.render_response(resp, _req())
    non_stream = _anthropic(_json_response(body)).messages.create(model="m", max_tokens=10, messages=MSGS)
    assert streamed.model_dump() == non_stream.model_dump()


def test_anthropic_stream_accumulator_keeps_wrapped_thinking_signature() -> None:
    prov = Provenance(api="anthropic_messages", provider="anthropic", model="claude-sonnet-4-5")
    events = [
        MessageStart(id="msg_1", model="claude-sonnet-4-5"),
        PartStart(index=0, kind="thinking", provenance=prov),
        PartDelta(index=0, text="Need the price tool."),
        PartDelta(index=0, signature="SIG_A_opaque"),
        PartEnd(index=0),
        PartStart(index=1, kind="tool_call", id="toolu_k1", name="get_price"),
        PartDelta(index=1, arguments='{"sku":"X1"}'),
        PartEnd(index=1),
        MessageEnd(stop_reason="tool_use"),
    ]
    frames = render_all(anthropic_messages.StreamRenderer(_req()), events)
    with _anthropic(_sse_response(frames)).messages.stream(model="m", max_tokens=10, messages=MSGS) as s:
        final = s.get_final_message()
    # the client echoes the turn back: the edge recovers signature and provenance
    echoed = {
        "model": "m",
        "max_tokens": 10,
        "messages": [
            {"role": "user", "content": "Price of SKU X1?"},
            {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in final.content]},
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_k1", "content": "9.99"}],
            },
        ],
    }
    req = anthropic_messages.parse_request(orjson.dumps(echoed))
    assistant = req.messages[1]
    assert isinstance(assistant, AssistantMessage)
    thinking = assistant.content[0]
    assert isinstance(thinking, ThinkingPart)
    assert (thinking.text, thinking.signature, thinking.provenance) == (
        "Need the price tool.",
        "SIG_A_opaque",
        prov,
    )


def test_openai_sdk_parses_non_streaming_body_with_reasoning_and_tool_calls() -> None:
    resp = Response(
        id="abc",
        model="gpt-x",
        message=AssistantMessage(
            content=[
                ThinkingPart(text="why"),
                TextPart(text="Calling."),
                ToolCallPart(id="call_1", name="f", arguments={"a": 1}, raw_arguments='{"a": 1}'),
            ]
        ),
        stop_reason="tool_use",
        usage=Usage(input_tokens=5, cache_read_tokens=10, output_tokens=7, reasoning_tokens=3, cost_usd=0.01),
    )
    body = openai_chat.render_response(resp, _req())
    out = _openai(_json_response(body)).chat.completions.create(model="m", messages=MSGS)
    assert out.id == "chatcmpl-abc"
    msg = out.choices[0].message
    assert msg.content == "Calling."
    assert msg.tool_calls and msg.tool_calls[0].function.arguments == '{"a": 1}'  # type: ignore[union-attr]
    assert out.usage and out.usage.prompt_tokens == 15 and out.usage.completion_tokens == 7


def test_both_sdks_read_the_models_list() -> None:
    body = openai_chat.render_models(
        [
            {"id": "demo", "owned_by": "turnstile", "description": "local stand-in"},
            {"id": "claude", "owned_by": "x"},
        ]
    )
    assert [m.id for m in _openai(_json_response(body)).models.list()] == ["demo", "claude"]
    page = _anthropic(_json_response(body)).models.list()
    assert [m.id for m in page.data] == ["demo", "claude"]
    assert page.data[0].display_name == "demo"
    assert anthropic_messages.render_models is openai_chat.render_models


def test_sdks_raise_their_own_error_classes_for_rendered_errors() -> None:
    status, body = openai_chat.render_error(
        InvalidRequest("messages[1].content: bad", param="messages[1].content")
    )
    with pytest.raises(openai.BadRequestError) as oe:
        _openai(_json_response(body, status)).chat.completions.create(model="m", messages=MSGS)
    assert oe.value.param == "messages[1].content"  # type: ignore[attr-defined]
    status, body = openai_chat.render_error(ModelNotFound("no model 'x'"))
    with pytest.raises(openai.NotFoundError) as ne:
        _openai(_json_response(body, status)).chat.completions.create(model="m", messages=MSGS)
    assert ne.value.code == "model_not_found"
    status, body = anthropic_messages.render_error(UpstreamError("slow down", status=429))
    with pytest.raises(anthropic.RateLimitError) as ae:
        _anthropic(_json_response(body, status)).messages.create(model="m", max_tokens=1, messages=MSGS)
    assert ae.value.body == {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}


def test_anthropic_sdk_reads_count_tokens() -> None:
    body = anthropic_messages.render_count_tokens(42)
    out = _anthropic(_json_response(body)).messages.count_tokens(model="m", messages=MSGS)
    assert out.input_tokens == 42
