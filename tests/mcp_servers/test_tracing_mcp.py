"""MCP tool calls as spans by the MCP semantic conventions (:class:`gateway.tracing.McpTracer`):
a call on ``/mcp`` is a SERVER span continuing the caller's ``params._meta`` context, the call
forwarded upstream its CLIENT child, whose context reaches the upstream server in
``params._meta.traceparent``; ``is_error`` results are ``error.type=tool_error``."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from mcp import Client
from mcp_harness import McpGateway
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes, mcp_attributes
from opentelemetry.trace import SpanKind, StatusCode

from gateway.config import TracingConfig
from gateway.tracing import Tracing

CONVENTION_NAMES = {
    v
    for mod in (gen_ai_attributes, mcp_attributes)
    for k, v in vars(mod).items()
    if k.isupper() and isinstance(v, str)
}
INCOMING = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


@pytest.fixture
def spans(gw: McpGateway) -> Iterator[tuple[Tracing, InMemorySpanExporter]]:
    """Tracing on for the endpoint of the session's gateway while the test runs."""
    exporter = InMemorySpanExporter()
    tracing = Tracing(TracingConfig(enabled=True), processor=SimpleSpanProcessor(exporter))
    endpoint = gw.app.state.mcp.endpoint
    endpoint.tracer = tracing.mcp
    try:
        yield tracing, exporter
    finally:
        endpoint.tracer = None


async def test_a_tools_call_is_a_server_span_continuing_meta_with_a_client_child_whose_context_goes_upstream(
    gw: McpGateway, spans: tuple[Tracing, InMemorySpanExporter]
) -> None:
    _, exporter = spans
    async with Client(gw.mcp_url) as client:
        result = await client.call_tool("github__meta", {}, meta={"traceparent": INCOMING})
    received = json.loads(result.content[0].text)  # type: ignore[union-attr]
    finished = exporter.get_finished_spans()
    (server,) = [s for s in finished if s.kind == SpanKind.SERVER]
    (client_span,) = [s for s in finished if s.kind == SpanKind.CLIENT]
    assert server.name == "tools/call github__meta" and client_span.name == "tools/call meta"
    assert server.context.trace_id == 0x4BF92F3577B34DA6A3CE929D0E0E4736
    assert server.parent is not None and server.parent.span_id == 0x00F067AA0BA902B7
    assert client_span.parent is not None and client_span.parent.span_id == server.context.span_id
    for span, tool in ((server, "github__meta"), (client_span, "meta")):
        attrs = span.attributes or {}
        assert attrs["mcp.method.name"] == "tools/call"
        assert attrs["gen_ai.tool.name"] == tool
        assert attrs["gen_ai.operation.name"] == "execute_tool"
        assert "error.type" not in attrs
        assert {n for n in attrs if n.startswith(("gen_ai.", "mcp."))} <= CONVENTION_NAMES
    # the upstream server got the forwarded call's context in params._meta (SEP-414)
    upstream_parent = received["traceparent"]
    ctx = client_span.context
    assert upstream_parent.startswith(f"00-{ctx.trace_id:032x}-{ctx.span_id:016x}-")


async def test_an_is_error_result_is_a_tool_error_span(
    gw: McpGateway, spans: tuple[Tracing, InMemorySpanExporter]
) -> None:
    _, exporter = spans
    async with Client(gw.mcp_url) as client:
        result = await client.call_tool("github__echo", {"text": 42})  # the schema wants a string
    assert result.is_error
    (server,) = exporter.get_finished_spans()  # refused by the gateway's argument check: not forwarded
    assert (server.attributes or {})["error.type"] == "tool_error"
    assert server.status.status_code == StatusCode.ERROR


async def test_a_tool_loop_call_is_a_client_span_under_the_turn_span(
    gw: McpGateway, spans: tuple[Tracing, InMemorySpanExporter]
) -> None:
    tracing, exporter = spans
    turn_span = tracing.tracer.start_span("chat auto", kind=SpanKind.SERVER)
    endpoint = gw.app.state.mcp.endpoint
    result = gw.loop.call(endpoint.call_for_loop("github__echo", {"text": "hi"}, parent=turn_span))
    turn_span.end()
    assert not result.is_error
    (call,) = [s for s in exporter.get_finished_spans() if s.kind == SpanKind.CLIENT]
    assert call.name == "tools/call echo"
    assert call.parent is not None and call.parent.span_id == turn_span.get_span_context().span_id
    assert (call.attributes or {})["turnstile.mcp.server"] == "github"
