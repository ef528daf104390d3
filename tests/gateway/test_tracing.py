"""Turn and attempt spans by the GenAI conventions (:mod:`gateway.tracing`), captured with the
OpenTelemetry SDK's in-memory exporter from turns run through the pipeline."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes
from opentelemetry.trace import SpanKind, StatusCode

from gateway.config import Deployment, GatewayConfig, Settings, parse_config
from gateway.deployments import DeploymentTable
from gateway.errors import GuardViolation, UpstreamError
from gateway.pipeline import Gateway, Pipeline, TurnContext
from gateway.providers.base import Provider
from gateway.providers.demo import response_events
from gateway.providers.transport import UPSTREAM_TRACEPARENT
from gateway.schema import (
    AssistantMessage,
    Request,
    Response,
    StreamEvent,
    SystemMessage,
    TextPart,
    ToolCallPart,
    Usage,
    UserMessage,
)
from gateway.tracing import Tracing, provider_name

CONFIG: dict[str, Any] = {
    "deployments": [
        {"name": "a", "api": "openai_chat", "model": "model-a", "base_url": "https://api.example.test/v1"},
        {"name": "b", "api": "openai_chat", "model": "model-b", "provider": "xai"},
    ],
    "models": [{"name": "auto", "deployments": ["a", "b"]}],
}
USER = UserMessage(content=[TextPart(text="the secret prompt")])
# Attribute names the GenAI conventions define, from the OpenTelemetry semantic-conventions
# package (its incubating gen_ai registry): every gen_ai.* name a span carries must be one.
GEN_AI_NAMES = {v for k, v in vars(gen_ai_attributes).items() if k.isupper() and isinstance(v, str)}


def _answer(text: str = "ok", **usage: int) -> Response:
    return Response(
        id="resp-1",
        model="model-a-2026",
        message=AssistantMessage(content=[TextPart(text=text)]),
        stop_reason="stop",
        usage=Usage(**usage) if usage else Usage(input_tokens=10, output_tokens=5),
    )


class Scripted(Provider):
    """Answers each call with the next scripted item (a Response, or an exception to raise);
    keeps the ``traceparent`` the transport would have sent with each call."""

    api = "openai_chat"

    def __init__(self, *script: Response | Exception) -> None:
        self.script = list(script)
        self.traceparents: list[str | None] = []

    def _next(self) -> Response:
        self.traceparents.append(UPSTREAM_TRACEPARENT.get())
        item = self.script.pop(0)
        if isinstance(item, Exception):
            raise item
        return item

    async def complete(self, request: Request, deployment: Deployment, api_key: str | None) -> Response:
        return self._next()

    async def stream(
        self, request: Request, deployment: Deployment, api_key: str | None
    ) -> AsyncIterator[StreamEvent]:
        resp = self._next()
        for ev in response_events(resp, chunk_chars=2):
            yield ev


def _pipeline(
    provider: Provider, capture: bool = False, **extra: Any
) -> tuple[Pipeline, InMemorySpanExporter]:
    cfg: GatewayConfig = parse_config({**CONFIG, **extra, "tracing": {"capture_content": capture}})
    table = DeploymentTable.build(cfg, Settings(), resolve_prices=False)
    exporter = InMemorySpanExporter()
    gw = Gateway(config=cfg, table=table, providers={"openai_chat": provider})
    gw.tracing = Tracing(cfg.tracing, processor=SimpleSpanProcessor(exporter))
    return Pipeline(gw), exporter


def _turn(
    *messages: Any, headers: dict[str, str] | None = None, session: str | None = None, **kw: Any
) -> TurnContext:
    return TurnContext(
        request_id="req-1",
        dialect="openai_chat",
        request=Request(model="auto", messages=list(messages or [USER]), **kw),
        headers_in=headers,
        session_id=session,
    )


def _by_kind(spans: tuple[ReadableSpan, ...], kind: SpanKind) -> list[ReadableSpan]:
    return [s for s in spans if s.kind == kind]


def _conventional(span: ReadableSpan) -> None:
    """Every gen_ai.* attribute of ``span`` and of its events is a name of the conventions."""
    names = set(span.attributes or {})
    for ev in span.events:
        names |= set(ev.attributes or {})
    unknown = {n for n in names if n.startswith("gen_ai.")} - GEN_AI_NAMES
    assert not unknown, unknown


async def test_a_turn_is_a_server_span_with_one_client_span_per_attempt_named_by_the_genai_conventions() -> (
    None
):
    provider = Scripted(_answer(input_tokens=10, output_tokens=5, cache_read_tokens=4, reasoning_tokens=2))
    pipe, exporter = _pipeline(provider)
    await pipe.complete(_turn(max_output_tokens=64, temperature=0.5, session="sess-9"))
    spans = exporter.get_finished_spans()
    (turn,) = _by_kind(spans, SpanKind.SERVER)
    (attempt,) = _by_kind(spans, SpanKind.CLIENT)
    assert turn.name == "chat auto"
    assert attempt.name == "chat model-a"
    assert attempt.parent is not None and attempt.parent.span_id == turn.context.span_id
    assert attempt.context.trace_id == turn.context.trace_id
    a = attempt.attributes or {}
    assert a["gen_ai.operation.name"] == "chat"
    assert a["gen_ai.provider.name"] == "openai"
    assert a["gen_ai.request.model"] == "model-a"
    assert a["gen_ai.response.model"] == "model-a-2026"
    assert a["gen_ai.response.id"] == "resp-1"
    assert a["gen_ai.response.finish_reasons"] == ("stop",)
    assert a["gen_ai.usage.input_tokens"] == 14  # uncached + cache reads
    assert a["gen_ai.usage.cache_read.input_tokens"] == 4
    assert a["gen_ai.usage.output_tokens"] == 5
    assert a["gen_ai.usage.reasoning.output_tokens"] == 2
    assert a["gen_ai.request.max_tokens"] == 64 and a["gen_ai.request.temperature"] == 0.5
    assert a["gen_ai.conversation.id"] == "sess-9"
    assert a["server.address"] == "api.example.test" and a["server.port"] == 443
    t = turn.attributes or {}
    assert t["gen_ai.conversation.id"] == "sess-9" and t["turnstile.deployment"] == "a"
    assert t["http.response.status_code"] == 200 and t["gen_ai.usage.output_tokens"] == 5
    assert "error.type" not in t and "error.type" not in a
    route = [e for e in turn.events if e.name == "turnstile.route"]
    assert len(route) == 1 and (route[0].attributes or {})["turnstile.route.route"] == "a"
    _conventional(turn)
    _conventional(attempt)
    # the upstream call carried the attempt span as its traceparent
    ctx = attempt.context
    (sent,) = provider.traceparents
    assert sent is not None and sent.startswith(f"00-{ctx.trace_id:032x}-{ctx.span_id:016x}-")
    assert UPSTREAM_TRACEPARENT.get() is None


async def test_an_incoming_traceparent_is_continued() -> None:
    pipe, exporter = _pipeline(Scripted(_answer()))
    incoming = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    await pipe.complete(_turn(headers={"traceparent": incoming}))
    (turn,) = _by_kind(exporter.get_finished_spans(), SpanKind.SERVER)
    assert turn.context.trace_id == 0x4BF92F3577B34DA6A3CE929D0E0E4736
    assert turn.parent is not None and turn.parent.span_id == 0x00F067AA0BA902B7 and turn.parent.is_remote


async def test_a_failed_attempt_is_an_error_span_and_the_fallback_its_sibling() -> None:
    provider = Scripted(UpstreamError("boom", status=500, deployment="a"), _answer())
    pipe, exporter = _pipeline(provider)
    await pipe.complete(_turn())
    spans = exporter.get_finished_spans()
    (turn,) = _by_kind(spans, SpanKind.SERVER)
    failed, answered = sorted(_by_kind(spans, SpanKind.CLIENT), key=lambda s: s.start_time or 0)
    assert failed.name == "chat model-a" and answered.name == "chat model-b"
    assert (failed.attributes or {})["error.type"] == "500"
    assert failed.status.status_code == StatusCode.ERROR
    assert (answered.attributes or {})["gen_ai.provider.name"] == "x_ai"
    assert all(s.parent is not None and s.parent.span_id == turn.context.span_id for s in (failed, answered))
    assert (turn.attributes or {})["turnstile.deployment"] == "b"
    assert provider.traceparents[0] != provider.traceparents[1]


async def test_a_stream_attempt_span_ends_when_the_stream_ends_with_its_usage() -> None:
    pipe, exporter = _pipeline(Scripted(_answer("streamed text", input_tokens=7, output_tokens=3)))
    turn = await pipe.open_stream(_turn(stream=True))
    open_while_streaming = []
    async for _batch in turn.batches:
        open_while_streaming.append(not _by_kind(exporter.get_finished_spans(), SpanKind.CLIENT))
    assert len(open_while_streaming) > 1 and all(open_while_streaming)
    spans = exporter.get_finished_spans()
    (attempt,) = _by_kind(spans, SpanKind.CLIENT)
    (server,) = _by_kind(spans, SpanKind.SERVER)
    a = attempt.attributes or {}
    assert a["gen_ai.request.stream"] is True
    assert a["gen_ai.usage.input_tokens"] == 7 and a["gen_ai.usage.output_tokens"] == 3
    assert a["gen_ai.response.finish_reasons"] == ("stop",)
    assert (
        attempt.end_time is not None and server.end_time is not None and attempt.end_time <= server.end_time
    )


async def test_a_guard_rejection_is_an_event_and_error_on_the_turn_span_with_no_attempt() -> None:
    orphan = AssistantMessage(content=[ToolCallPart(id="c1", name="f", arguments={})])
    pipe, exporter = _pipeline(Scripted())
    with pytest.raises(GuardViolation):
        await pipe.complete(_turn(USER, orphan, UserMessage(content=[TextPart(text="go on")])))
    spans = exporter.get_finished_spans()
    assert not _by_kind(spans, SpanKind.CLIENT)
    (turn,) = spans
    t = turn.attributes or {}
    assert t["error.type"] == "invalid_request" and t["http.response.status_code"] == 400
    assert turn.status.status_code == StatusCode.ERROR
    assert [e.name for e in turn.events] == ["turnstile.guard.rejected"]


async def test_guard_repairs_are_events_on_the_turn_span() -> None:
    orphan = AssistantMessage(content=[ToolCallPart(id="c1", name="f", arguments={})])
    pipe, exporter = _pipeline(Scripted(_answer()), guards={"pairing": "repair"})
    await pipe.complete(_turn(USER, orphan, UserMessage(content=[TextPart(text="go on")])))
    (turn,) = _by_kind(exporter.get_finished_spans(), SpanKind.SERVER)
    repairs = [e for e in turn.events if e.name == "turnstile.guard.repair"]
    assert repairs and (repairs[0].attributes or {}).get("turnstile.repair.code")
    assert (turn.attributes or {})["turnstile.guard_outcome"] == "repaired"


async def test_no_prompt_or_answer_text_in_spans_unless_content_capture_is_on() -> None:
    pipe, exporter = _pipeline(Scripted(_answer("the secret answer")))
    await pipe.complete(_turn())
    dumped = json.dumps([s.to_json() for s in exporter.get_finished_spans()])
    assert "secret" not in dumped


async def test_content_capture_records_the_request_and_answer_as_an_event_in_the_conventions_shapes() -> None:
    system = SystemMessage(content=[TextPart(text="be brief")])
    pipe, exporter = _pipeline(Scripted(_answer("the secret answer")), capture=True)
    await pipe.complete(_turn(system, USER))
    (attempt,) = _by_kind(exporter.get_finished_spans(), SpanKind.CLIENT)
    (event,) = [e for e in attempt.events if e.name == "gen_ai.client.inference.operation.details"]
    attrs = event.attributes or {}
    assert json.loads(str(attrs["gen_ai.system_instructions"])) == [{"type": "text", "content": "be brief"}]
    assert json.loads(str(attrs["gen_ai.input.messages"])) == [
        {"role": "user", "parts": [{"type": "text", "content": "the secret prompt"}]}
    ]
    assert json.loads(str(attrs["gen_ai.output.messages"])) == [
        {
            "role": "assistant",
            "parts": [{"type": "text", "content": "the secret answer"}],
            "finish_reason": "stop",
        }
    ]
    assert attrs["gen_ai.operation.name"] == "chat" and attrs["gen_ai.provider.name"] == "openai"
    _conventional(attempt)


def test_provider_names_follow_the_conventions_registry() -> None:
    def dep(provider: str, api: str = "openai_chat") -> Deployment:
        return Deployment(name="d", api=api, model="m", provider=provider)  # type: ignore[arg-type]

    assert provider_name(dep("")) == "openai"
    assert provider_name(Deployment(name="d", api="gemini", model="m")) == "gcp.gemini"
    assert provider_name(Deployment(name="d", api="anthropic_messages", model="m")) == "anthropic"
    assert provider_name(dep("mistral")) == "mistral_ai"
    assert provider_name(dep("groq")) == "groq"


async def test_a_request_refused_before_it_became_a_turn_is_one_error_span() -> None:
    from gateway.errors import InvalidRequest

    pipe, exporter = _pipeline(Scripted())
    await pipe.record_refused("req-bad", "openai_chat", InvalidRequest("request body is not JSON"))
    (span,) = exporter.get_finished_spans()
    attrs = span.attributes or {}
    assert span.kind == SpanKind.SERVER and span.name == "chat"
    assert attrs["error.type"] == "invalid_request" and attrs["http.response.status_code"] == 400
    assert attrs["turnstile.request_id"] == "req-bad" and span.status.status_code == StatusCode.ERROR
