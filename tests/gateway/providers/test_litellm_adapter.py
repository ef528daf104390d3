"""litellm adapter: driven against a local aiohttp server speaking OpenAI Chat Completions
(litellm's ``openai/`` provider with ``api_base``) and litellm's ``mock_response``; never a
real provider."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest
from aiohttp import web

from gateway.config import Deployment, TimeoutConfig
from gateway.errors import UpstreamError, UpstreamTimeout
from gateway.providers.litellm_adapter import LitellmProvider, map_litellm_error
from gateway.providers.naming import NameMap
from gateway.schema import (
    AssistantMessage,
    MessageEnd,
    MessageStart,
    PartDelta,
    PartStart,
    Request,
    StreamEvent,
    TextPart,
    ToolCallPart,
    ToolDefinition,
    ToolResultMessage,
    UserMessage,
)

TOOL = ToolDefinition(
    name="get_weather", parameters={"type": "object", "properties": {"city": {"type": "string"}}}
)

COMPLETION = {
    "id": "chatcmpl-local-1",
    "object": "chat.completion",
    "created": 1,
    "model": "gpt-4o-mini",
    "choices": [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_abc",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                    }
                ],
            },
            "finish_reason": "tool_calls",
        }
    ],
    "usage": {
        "prompt_tokens": 100,
        "completion_tokens": 12,
        "total_tokens": 112,
        "prompt_tokens_details": {"cached_tokens": 40},
    },
}


def _chunk(delta: dict[str, Any], finish: str | None = None, usage: dict[str, Any] | None = None) -> bytes:
    obj: dict[str, Any] = {
        "id": "chatcmpl-local-2",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-4o-mini",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}] if delta or finish else [],
    }
    if usage is not None:
        obj["usage"] = usage
    return b"data: " + orjson.dumps(obj) + b"\n\n"


STREAM = b"".join(
    [
        _chunk({"role": "assistant", "content": "Checking"}),
        _chunk({"content": " now."}),
        _chunk(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_s1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": ""},
                    }
                ]
            }
        ),
        _chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"city":'}}]}),
        _chunk({"tool_calls": [{"index": 0, "function": {"arguments": ' "Rome"}'}}]}),
        _chunk({}, finish="tool_calls"),
        _chunk({}, usage={"prompt_tokens": 50, "completion_tokens": 9, "total_tokens": 59}),
        b"data: [DONE]\n\n",
    ]
)


class Upstream:
    """A local OpenAI-chat stand-in; ``mode`` picks the answer, ``seen`` records requests."""

    def __init__(self) -> None:
        self.mode = "ok"
        self.seen: list[dict[str, Any]] = []

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.seen.append(
            {
                "body": body,
                "auth": request.headers.get("authorization"),
                "traceparent": request.headers.get("traceparent"),
            }
        )
        if self.mode == "429":
            return web.json_response(
                {"error": {"message": "slow down", "type": "rate_limit_error"}},
                status=429,
                headers={"retry-after": "7"},
            )
        if self.mode == "400":
            return web.json_response(
                {"error": {"message": "bad tools", "type": "invalid_request_error"}}, status=400
            )
        if body.get("stream"):
            resp = web.StreamResponse(headers={"content-type": "text/event-stream"})
            await resp.prepare(request)
            await resp.write(STREAM)
            await resp.write_eof()
            return resp
        return web.json_response(COMPLETION)


@pytest.fixture
async def upstream() -> AsyncIterator[tuple[Upstream, str]]:
    up = Upstream()
    app = web.Application()
    app.router.add_post("/v1/chat/completions", up.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield up, f"http://127.0.0.1:{port}/v1"
    finally:
        await runner.cleanup()


def _deployment(base_url: str) -> Deployment:
    return Deployment(name="tail", api="litellm", model="openai/gpt-4o-mini", base_url=base_url)


def _request(**kw: Any) -> Request:
    return Request(
        model="tail",
        messages=[
            UserMessage(content=[TextPart(text="Weather in Paris?")]),
            AssistantMessage(
                content=[
                    ToolCallPart(
                        id="toolu_1",
                        name="get_weather",
                        raw_arguments='{"city":"Oslo"}',
                        arguments={"city": "Oslo"},
                    )
                ]
            ),
            ToolResultMessage(tool_call_id="toolu_1", content=[TextPart(text="cold")]),
        ],
        tools=[TOOL],
        max_output_tokens=64,
        **kw,
    )


async def test_complete_converts_openai_shaped_answer_and_splits_cached_tokens(
    upstream: tuple[Upstream, str],
) -> None:
    up, base = upstream
    resp = await LitellmProvider(TimeoutConfig()).complete(_request(), _deployment(base), "sk-local")
    (call,) = resp.message.content
    assert isinstance(call, ToolCallPart)
    assert (call.id, call.name, call.raw_arguments) == ("call_abc", "get_weather", '{"city": "Paris"}')
    assert call.arguments == {"city": "Paris"}
    assert resp.stop_reason == "tool_use"
    assert (resp.usage.input_tokens, resp.usage.cache_read_tokens, resp.usage.output_tokens) == (60, 40, 12)
    sent = up.seen[0]
    assert sent["auth"] == "Bearer sk-local"
    assert sent["body"]["model"] == "gpt-4o-mini"
    assert sent["body"]["tools"][0]["function"]["name"] == "get_weather"
    assert [m["role"] for m in sent["body"]["messages"]] == ["user", "assistant", "tool"]
    assert sent["body"]["messages"][2]["tool_call_id"] == "toolu_1"


async def test_the_attempts_traceparent_goes_upstream_whole_and_streamed(
    upstream: tuple[Upstream, str],
) -> None:
    """With tracing on, the attempt layer puts its span's ``traceparent`` in
    ``UPSTREAM_TRACEPARENT`` while the call is made; a litellm upstream gets it as a header, next
    to the deployment's own extra headers; with tracing off it gets none."""
    from gateway.config import Quirks
    from gateway.providers.transport import UPSTREAM_TRACEPARENT

    up, base = upstream
    dep = _deployment(base).model_copy(update={"quirks": Quirks(extra_headers={"x-team": "a"})})
    parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    token = UPSTREAM_TRACEPARENT.set(parent)
    try:
        await LitellmProvider(TimeoutConfig()).complete(_request(), dep, "sk-local")
        _ = [ev async for ev in LitellmProvider().stream(_request(stream=True), dep, "sk-local")]
    finally:
        UPSTREAM_TRACEPARENT.reset(token)
    await LitellmProvider(TimeoutConfig()).complete(_request(), dep, "sk-local")
    assert [s["traceparent"] for s in up.seen] == [parent, parent, None]
    kwargs = LitellmProvider().call_kwargs(_request(), dep, None, NameMap())
    assert kwargs["extra_headers"] == {"x-team": "a"}  # nothing left behind in the deployment's headers


async def test_stream_yields_text_then_tool_call_and_usage(upstream: tuple[Upstream, str]) -> None:
    _, base = upstream
    events: list[StreamEvent] = [
        ev async for ev in LitellmProvider().stream(_request(stream=True), _deployment(base), "sk-local")
    ]
    assert isinstance(events[0], MessageStart)
    text = "".join(e.text or "" for e in events if isinstance(e, PartDelta))
    assert text == "Checking now."
    starts = [e for e in events if isinstance(e, PartStart) and e.kind == "tool_call"]
    assert [(s.id, s.name) for s in starts] == [("call_s1", "get_weather")]
    args = "".join(e.arguments or "" for e in events if isinstance(e, PartDelta))
    assert orjson.loads(args) == {"city": "Rome"}
    end = events[-1]
    assert isinstance(end, MessageEnd)
    assert end.stop_reason == "tool_use"
    assert (end.usage.input_tokens, end.usage.output_tokens) == (50, 9)


async def test_rate_limit_becomes_upstream_error_with_retry_after(upstream: tuple[Upstream, str]) -> None:
    up, base = upstream
    up.mode = "429"
    with pytest.raises(UpstreamError) as err:
        await LitellmProvider().complete(_request(), _deployment(base), "sk-local")
    assert err.value.status == 429
    assert err.value.kind == "rate_limit"
    assert err.value.retry_after_s == 7.0
    assert err.value.retryable
    assert len(up.seen) == 1  # litellm did not retry on its own


async def test_bad_request_becomes_non_retryable_400(upstream: tuple[Upstream, str]) -> None:
    up, base = upstream
    up.mode = "400"
    with pytest.raises(UpstreamError) as err:
        [ev async for ev in LitellmProvider().stream(_request(stream=True), _deployment(base), "sk-local")]
    assert err.value.status == 400
    assert err.value.kind == "invalid_request"
    assert not err.value.retryable


async def test_mock_response_round_trip_without_any_server() -> None:
    provider = LitellmProvider()
    dep = Deployment(name="mock", api="litellm", model="mistral/mistral-small-latest")
    req = Request(model="mock", messages=[UserMessage(content=[TextPart(text="hi")])])
    kwargs = provider.call_kwargs(req, dep, "k", NameMap())
    assert kwargs["model"] == "mistral/mistral-small-latest"
    assert kwargs["num_retries"] == 0 and kwargs["stream"] is False

    original = provider.call_kwargs

    def with_mock(*a: Any, **k: Any) -> dict[str, Any]:
        out = original(*a, **k)
        out["mock_response"] = "Bonjour"
        return out

    provider.call_kwargs = with_mock  # type: ignore[method-assign]
    resp = await provider.complete(req, dep, "k")
    assert resp.message.text == "Bonjour"
    assert resp.stop_reason == "stop"


def test_litellm_timeout_and_connection_errors_are_mapped() -> None:
    import litellm

    dep = Deployment(name="tail", api="litellm", model="openai/x")
    timeout = map_litellm_error(litellm.exceptions.Timeout("slow", model="x", llm_provider="openai"), dep)
    assert isinstance(timeout, UpstreamTimeout) and timeout.status == 504
    conn = map_litellm_error(
        litellm.exceptions.APIConnectionError("reset", llm_provider="openai", model="x"), dep
    )
    assert isinstance(conn, UpstreamError) and conn.status == 502 and conn.retryable
    other = map_litellm_error(RuntimeError("weird"), dep)
    assert isinstance(other, UpstreamError) and other.status == 502
