"""OpenTelemetry traces of the gateway, by the GenAI and MCP semantic conventions.

Off unless ``tracing.enabled`` (:class:`gateway.config.TracingConfig`): then the server makes
one :class:`Tracing` (``gw.tracing``; None when off, and every hook below is behind one
``is None`` test) with its own ``TracerProvider`` (never the process-global one) exporting
over OTLP/HTTP in batches from a background thread.

Spans, and who starts them:

* **a request refused before it became a turn** (malformed body, over the size limit, a bad
  session id): one SERVER span ``chat`` with its status and ``error.type``.
* **the turn** (SERVER): started by the record layer (:meth:`Tracing.start_turn`, kept on
  the turn as ``turn.trace``), continuing the client's W3C ``traceparent`` header; named
  ``{gen_ai.operation.name} {gen_ai.request.model}`` (the model the client asked for); ended
  with the turn's record (:meth:`TurnTrace.end`): the answering deployment, status, usage,
  finish reason, cost, ``error.type`` (the gateway's error kind) on failures.
* **each upstream attempt** (CLIENT, child of the turn span, parented explicitly: context
  variables do not survive the streaming generators): started by the attempt layer
  (:meth:`TurnTrace.attempt`), ended when the answer is in or, for a stream, when the stream
  ends; ``{operation} {deployment model}``, ``gen_ai.provider.name`` (the deployment's
  provider as the conventions name it), the response's id, model, finish reasons and token
  usage (``gen_ai.usage.input_tokens`` including cached input, ``output_tokens``,
  ``cache_read.input_tokens``, ``cache_creation.input_tokens``, ``reasoning.output_tokens``),
  ``error.type`` the upstream's HTTP status (``timeout`` for a timeout). Its ``traceparent``
  goes upstream as an HTTP header (:data:`gateway.providers.transport.UPSTREAM_TRACEPARENT`).
* **MCP tool calls** (:class:`McpTracer`, the MCP endpoint's ``tracer`` hook): ``tools/call
  {tool}`` with ``mcp.method.name``, ``gen_ai.tool.name``, ``gen_ai.operation.name``
  ``execute_tool``, ``mcp.session.id`` when known, ``error.type`` ``tool_error`` for an
  ``is_error`` result. A call on ``/mcp`` is a SERVER span continuing the caller's context
  (``params._meta.traceparent``, else its HTTP ``traceparent``); each call forwarded upstream
  is a CLIENT span (child of that, or of the turn span for the tool loop) made current while
  the upstream is called, so the ``mcp`` SDK writes its ``traceparent`` into the upstream
  request's ``params._meta`` (SEP-414).

Span events on the turn span: ``turnstile.guard.repair`` (each guard repair, by rule),
``turnstile.guard.rejected`` (the turn refused by a guard), ``turnstile.route`` (the routing
decision: policy, tier, chosen deployment, reason, fallbacks), ``turnstile.attempt.skipped``,
``turnstile.cascade.escalation``, ``turnstile.field.dropped``. They are written when the first
upstream attempt starts (guards and route have decided by then) and, for what came later, when
the turn ends.

Content (``capture_content``, off by default): each attempt span gets a
``gen_ai.client.inference.operation.details`` event with ``gen_ai.system_instructions``,
``gen_ai.input.messages`` and ``gen_ai.output.messages`` as JSON strings in the conventions'
message shapes (role, parts of type ``text``, ``reasoning``, ``tool_call``,
``tool_call_response``, ``blob``/``uri`` for media: described, never the bytes).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

import orjson
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import Span, SpanKind, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from gateway.config import Deployment, TracingConfig
from gateway.providers.transport import UPSTREAM_TRACEPARENT

PROVIDER_NAMES = {
    "google": "gcp.gemini",
    "gemini": "gcp.gemini",
    "vertex_ai": "gcp.vertex_ai",
    "vertex": "gcp.vertex_ai",
    "mistral": "mistral_ai",
    "xai": "x_ai",
    "bedrock": "aws.bedrock",
    "azure": "azure.ai.openai",
    "moonshot": "moonshot_ai",
    "watsonx": "ibm.watsonx.ai",
}
"""A deployment's ``provider`` -> ``gen_ai.provider.name`` where the conventions name it
differently (``openai``, ``anthropic``, ``groq``, ``deepseek``, ``cohere``, ``perplexity`` are
the same; any other provider is passed as it is)."""

_PROPAGATOR = TraceContextTextMapPropagator()


def provider_name(dep: Deployment) -> str:
    """``gen_ai.provider.name`` of ``dep``."""
    return PROVIDER_NAMES.get(dep.provider, dep.provider)


def operation_name(api: str) -> str:
    """``gen_ai.operation.name`` of a call on wire API ``api``: ``generate_content`` for
    Gemini, ``chat`` for the others."""
    return "generate_content" if api == "gemini" else "chat"


def traceparent(span: Span) -> str:
    """The W3C ``traceparent`` header value naming ``span`` as the parent (version ``00``;
    the flags are the span's: sampled, and the SDK's random-trace-id bit)."""
    ctx = span.get_span_context()
    return f"00-{ctx.trace_id:032x}-{ctx.span_id:016x}-{int(ctx.trace_flags):02x}"


def extract(carrier: Mapping[str, Any] | None) -> Context | None:
    """The remote parent in ``carrier`` (HTTP headers or an MCP ``_meta``: ``traceparent``,
    ``tracestate``), or None when there is none that is valid."""
    if not carrier:
        return None
    try:
        ctx = _PROPAGATOR.extract(carrier)
    except (TypeError, ValueError):
        return None
    return ctx if trace.get_current_span(ctx).get_span_context().is_valid else None


def _error_type(err: Any) -> str:
    """``error.type`` of a failed upstream attempt: ``timeout``, else the HTTP status."""
    kind = getattr(err, "kind", None)
    if kind == "timeout":
        return "timeout"
    status = getattr(err, "status", None)
    return str(status) if status is not None else type(err).__qualname__


def _flat(prefix: str, entry: Mapping[str, Any]) -> dict[str, Any]:
    """Span-event attributes of a repair/route entry: its primitive values (and lists of
    strings) under ``prefix``; nested objects as JSON strings."""
    out: dict[str, Any] = {}
    for key, value in entry.items():
        if value is None or key == "kind":
            continue
        if isinstance(value, str | bool | int | float):
            out[prefix + key] = value
        elif isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
            out[prefix + key] = list(value)
        else:
            out[prefix + key] = orjson.dumps(value, default=str).decode()
    return out


class Tracing:
    """The gateway's tracer (one per process while tracing is on)."""

    def __init__(
        self,
        config: TracingConfig,
        headers: Mapping[str, str] | None = None,
        *,
        processor: SpanProcessor | None = None,
    ) -> None:
        """``headers``: sent with every export (read from ``config.headers_env`` by the
        settings object). ``processor``: instead of the batching OTLP/HTTP export (tests pass a
        ``SimpleSpanProcessor`` over an ``InMemorySpanExporter``)."""
        self.config = config
        self.capture_content = config.capture_content
        self.provider = TracerProvider(resource=Resource.create({"service.name": config.service_name}))
        if processor is None:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            exporter = OTLPSpanExporter(
                endpoint=config.otlp_endpoint, headers=dict(headers or {}), timeout=config.export_timeout_s
            )
            processor = BatchSpanProcessor(exporter, schedule_delay_millis=config.batch_delay_ms)
        self.provider.add_span_processor(processor)
        self.tracer = self.provider.get_tracer("turnstile")
        self.mcp = McpTracer(self)

    def start_turn(self, turn: Any) -> TurnTrace:
        """The span of ``turn`` (a :class:`gateway.turn.Turn`), continuing its request's
        ``traceparent`` header."""
        request = turn.request
        attrs: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": request.model,
            "turnstile.request_id": turn.request_id,
            "turnstile.client_dialect": turn.dialect,
        }
        if request.stream:
            attrs["gen_ai.request.stream"] = True
        if turn.session_id:
            attrs["gen_ai.conversation.id"] = turn.session_id
        _request_attrs(attrs, request)
        span = self.tracer.start_span(
            f"chat {request.model}", context=extract(turn.headers_in), kind=SpanKind.SERVER, attributes=attrs
        )
        return TurnTrace(self, span, turn.session_id)

    def refused(self, record: Any, error: Any) -> None:
        """One SERVER span, ended at once, for a request refused before it became a turn
        (``record``: its transcript row; ``error`` the ``TurnstileError``): ``chat`` with the
        status and ``error.type``, no parent (its headers were not kept)."""
        span = self.tracer.start_span(
            "chat",
            kind=SpanKind.SERVER,
            attributes={
                "gen_ai.operation.name": "chat",
                "turnstile.request_id": record.request_id,
                "turnstile.client_dialect": record.client_dialect,
                "http.response.status_code": record.status,
                "error.type": error.kind,
            },
        )
        span.set_status(StatusCode.ERROR, error.message[:256])
        span.end()

    def shutdown(self) -> None:
        """Export what is left and stop the exporter (bounded by ``export_timeout_s``)."""
        self.provider.shutdown()


def _request_attrs(attrs: dict[str, Any], request: Any) -> None:
    if request.max_output_tokens is not None:
        attrs["gen_ai.request.max_tokens"] = request.max_output_tokens
    if request.temperature is not None:
        attrs["gen_ai.request.temperature"] = request.temperature
    if request.top_p is not None:
        attrs["gen_ai.request.top_p"] = request.top_p


def _usage_attrs(attrs: dict[str, Any], usage: Any) -> None:
    """The conventions' usage attributes (``input_tokens`` includes cached input)."""
    attrs["gen_ai.usage.input_tokens"] = (
        usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens
    )
    attrs["gen_ai.usage.output_tokens"] = usage.output_tokens
    if usage.cache_read_tokens:
        attrs["gen_ai.usage.cache_read.input_tokens"] = usage.cache_read_tokens
    if usage.cache_write_tokens:
        attrs["gen_ai.usage.cache_creation.input_tokens"] = usage.cache_write_tokens
    if usage.reasoning_tokens:
        attrs["gen_ai.usage.reasoning.output_tokens"] = usage.reasoning_tokens
    if usage.cost_usd is not None:
        attrs["turnstile.cost_usd"] = usage.cost_usd
    if usage.estimated:
        attrs["turnstile.usage_estimated"] = True


def _response_attrs(attrs: dict[str, Any], resp: Any) -> None:
    attrs["gen_ai.response.id"] = resp.id
    attrs["gen_ai.response.model"] = resp.model
    attrs["gen_ai.response.finish_reasons"] = [resp.stop_reason]
    _usage_attrs(attrs, resp.usage)


class TurnTrace:
    """A turn's span (``turn.trace``) and the attempts under it."""

    __slots__ = ("noted_attempts", "noted_dropped", "noted_repairs", "session_id", "span", "tracing")

    def __init__(self, tracing: Tracing, span: Span, session_id: str | None) -> None:
        self.tracing = tracing
        self.span = span
        self.session_id = session_id
        self.noted_repairs = 0  # entries of turn.repairs already written as events
        self.noted_attempts = 0  # entries of turn.attempts looked at
        self.noted_dropped = 0

    def note(self, turn: Any) -> None:
        """Write the guard repairs, routing decisions, skipped deployments, cascade escalations
        and dropped fields ``turn`` gained since the last call as span events."""
        span = self.span
        repairs = turn.repairs
        for entry in repairs[self.noted_repairs :]:
            if isinstance(entry, Mapping):
                span.add_event("turnstile.guard.repair", _flat("turnstile.repair.", entry))
        self.noted_repairs = len(repairs)
        attempts = turn.attempts
        for entry in attempts[self.noted_attempts :]:
            kind = entry.get("kind")
            if kind == "route":
                span.add_event("turnstile.route", _flat("turnstile.route.", entry))
            elif kind == "cascade_escalation":
                span.add_event("turnstile.cascade.escalation", _flat("turnstile.cascade.", entry))
            elif "skipped" in entry:
                span.add_event("turnstile.attempt.skipped", _flat("turnstile.attempt.", entry))
        self.noted_attempts = len(attempts)
        dropped = turn.dropped
        for entry in dropped[self.noted_dropped :]:
            span.add_event("turnstile.field.dropped", _flat("turnstile.dropped.", entry))
        self.noted_dropped = len(dropped)

    def attempt(self, turn: Any, dep: Deployment, request: Any) -> AttemptSpan:
        """Start the span of one upstream call of ``dep`` (a child of the turn's span) and
        name it in the ``traceparent`` header the transport sends with that call (the context
        variable is cleared by :meth:`AttemptSpan.sent`)."""
        self.note(turn)
        op = operation_name(dep.api)
        attrs: dict[str, Any] = {
            "gen_ai.operation.name": op,
            "gen_ai.provider.name": provider_name(dep),
            "gen_ai.request.model": dep.model,
            "turnstile.deployment": dep.name,
        }
        if dep.base_url:
            url = urlsplit(dep.base_url)
            if url.hostname:
                attrs["server.address"] = url.hostname
                attrs["server.port"] = url.port or (443 if url.scheme == "https" else 80)
        if request.stream:
            attrs["gen_ai.request.stream"] = True
        if self.session_id:
            attrs["gen_ai.conversation.id"] = self.session_id
        _request_attrs(attrs, request)
        span = self.tracing.tracer.start_span(
            f"{op} {dep.model}",
            context=trace.set_span_in_context(self.span),
            kind=SpanKind.CLIENT,
            attributes=attrs,
        )
        UPSTREAM_TRACEPARENT.set(traceparent(span))
        return AttemptSpan(self.tracing, span, request, op, attrs["gen_ai.provider.name"], dep.model)

    def end(self, turn: Any, record: Any, error: Any) -> None:
        """End the turn's span with its transcript ``record`` (a
        :class:`gateway.transcript.TurnRecord`) and ``error`` (a ``TurnstileError`` or None)."""
        self.note(turn)
        span = self.span
        attrs: dict[str, Any] = {
            "http.response.status_code": record.status,
            "turnstile.guard_outcome": record.guard_outcome,
        }
        if record.guard_outcome not in ("ok", "repaired"):
            span.add_event("turnstile.guard.rejected", {"turnstile.guard_outcome": record.guard_outcome})
        dep = turn.deployment
        if dep is not None:
            attrs["turnstile.deployment"] = dep.name
            attrs["gen_ai.provider.name"] = provider_name(dep)
        resp = record.response
        if resp is not None:
            _response_attrs(attrs, resp)
        elif record.stop_reason:
            attrs["gen_ai.response.finish_reasons"] = [record.stop_reason]
        if error is not None:
            attrs["error.type"] = error.kind
            span.set_status(StatusCode.ERROR, error.message[:256])
        elif record.status >= 400:
            attrs["error.type"] = str(record.status)
            span.set_status(StatusCode.ERROR)
        span.set_attributes(attrs)
        span.end()


class AttemptSpan:
    """The span of one upstream call (:meth:`TurnTrace.attempt`)."""

    __slots__ = ("model", "op", "provider", "request", "span", "tracing")

    def __init__(
        self, tracing: Tracing, span: Span, request: Any, op: str, provider: str, model: str
    ) -> None:
        self.tracing = tracing
        self.span = span
        self.request = request
        self.op = op
        self.provider = provider
        self.model = model

    @staticmethod
    def sent() -> None:
        """The upstream request went out (or failed to): later calls carry no ``traceparent``
        of this span."""
        UPSTREAM_TRACEPARENT.set(None)

    def end(self, resp: Any, error: Any = None, status: int = 200) -> None:
        """End the span with the answer ``resp`` (a :class:`gateway.schema.Response`, None
        when there is none), ``error`` (what ended the call, or None) and, for a stream, the
        turn's ``status`` (499: the client went away first; 503: cut by the shutdown bound)."""
        span = self.span
        attrs: dict[str, Any] = {}
        if resp is not None:
            _response_attrs(attrs, resp)
        if error is not None:
            attrs["error.type"] = _error_type(error)
            span.set_status(StatusCode.ERROR, str(getattr(error, "message", error))[:256])
        elif status >= 400:
            attrs["error.type"] = str(status)
            span.set_status(StatusCode.ERROR)
        if attrs:
            span.set_attributes(attrs)
        if self.tracing.capture_content:
            span.add_event("gen_ai.client.inference.operation.details", self._content(resp, attrs))
        span.end()

    def _content(self, resp: Any, attrs: dict[str, Any]) -> dict[str, Any]:
        from gateway.providers.otel_messages import input_messages, output_messages, system_instructions

        out: dict[str, Any] = {
            "gen_ai.operation.name": self.op,
            "gen_ai.provider.name": self.provider,
            "gen_ai.request.model": self.model,
            **{k: v for k, v in attrs.items() if k.startswith("gen_ai.")},
        }
        system = system_instructions(self.request)
        if system:
            out["gen_ai.system_instructions"] = orjson.dumps(system).decode()
        out["gen_ai.input.messages"] = orjson.dumps(input_messages(self.request)).decode()
        if resp is not None:
            out["gen_ai.output.messages"] = orjson.dumps(output_messages(resp)).decode()
        return out


class McpTracer:
    """The MCP endpoint's ``tracer`` hook (:mod:`mcp_servers.endpoint`): spans of tool calls
    by the MCP semantic conventions."""

    def __init__(self, tracing: Tracing) -> None:
        self.tracing = tracing

    def server_span(
        self,
        tool: str,
        meta: Mapping[str, Any] | None,
        headers: Mapping[str, Any] | None,
        session_id: str | None,
    ) -> Span:
        """The SERVER span of a ``tools/call`` of ``tool`` (its exposed name) on ``/mcp``,
        continuing the caller's ``params._meta`` context, else its HTTP ``traceparent``."""
        return self._start(tool, SpanKind.SERVER, extract(meta) or extract(headers), session_id)

    def client_span(self, tool: str, server: str, parent: Span | None, session_id: str | None = None) -> Span:
        """The CLIENT span of a call of ``tool`` (its upstream name) on MCP server ``server``;
        parented on ``parent`` (the turn's span, for the tool loop), else on the current span
        (the ``/mcp`` server span)."""
        ctx = trace.set_span_in_context(parent) if parent is not None else None
        span = self._start(tool, SpanKind.CLIENT, ctx, session_id)
        span.set_attribute("turnstile.mcp.server", server)
        return span

    def _start(self, tool: str, kind: SpanKind, ctx: Context | None, session_id: str | None) -> Span:
        attrs: dict[str, Any] = {
            "mcp.method.name": "tools/call",
            "gen_ai.tool.name": tool,
            "gen_ai.operation.name": "execute_tool",
        }
        if session_id:
            attrs["mcp.session.id"] = session_id
        return self.tracing.tracer.start_span(f"tools/call {tool}", context=ctx, kind=kind, attributes=attrs)

    @staticmethod
    @contextmanager
    def current(span: Span) -> Iterator[None]:
        """Make ``span`` the current span while the upstream is called: the ``mcp`` SDK injects
        the current context into the request's ``params._meta`` (``traceparent``)."""
        with trace.use_span(span, end_on_exit=False, record_exception=False, set_status_on_exception=False):
            yield

    @staticmethod
    def end(span: Span, result: Any, error_code: str | None = None) -> None:
        """End an MCP span: ``error.type`` ``tool_error`` for an ``is_error`` result, the
        JSON-RPC error code for an error answer (``error_code``)."""
        if error_code is not None:
            span.set_attribute("error.type", error_code)
            span.set_attribute("rpc.response.status_code", error_code)
            span.set_status(StatusCode.ERROR)
        elif getattr(result, "is_error", False):
            span.set_attribute("error.type", "tool_error")
            span.set_status(StatusCode.ERROR)
        span.end()


__all__ = [
    "PROVIDER_NAMES",
    "AttemptSpan",
    "McpTracer",
    "Tracing",
    "TurnTrace",
    "extract",
    "operation_name",
    "provider_name",
    "traceparent",
]
