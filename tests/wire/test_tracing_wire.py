"""Traces end to end: a ``turnstile serve`` process with tracing on exports its spans over
OTLP/HTTP (protobuf) to a real receiver started here, with the export headers named in the
config's ``headers_env`` (the value only in the environment); the upstream stand-in received a
``traceparent`` of the same trace, which continues the client's own ``traceparent``."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.trace.v1.trace_pb2 import Span
from standins.serve_process import ServeProcess, clean_env, free_port
from standins.tool_answers import text_answer
from standins.topology import MATRIX
from standins.upstream import UpstreamStandin, replay

CLIENT_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CLIENT_PARENT = f"00-{CLIENT_TRACE}-00f067aa0ba902b7-01"
EXPORT_SECRET = "collector-key-7f3a"


class OtlpReceiver:
    """A minimal OTLP/HTTP traces receiver on 127.0.0.1: ``POST /v1/traces`` with an
    ``application/x-protobuf`` ``ExportTraceServiceRequest``; keeps every span and the request
    headers of every export."""

    def __init__(self) -> None:
        self.spans: list[Span] = []
        self.headers: list[dict[str, str]] = []
        self.arrived = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                ok = (
                    self.path == "/v1/traces" and self.headers.get("content-type") == "application/x-protobuf"
                )
                if ok:
                    export = ExportTraceServiceRequest.FromString(body)
                    with receiver.arrived:
                        receiver.headers.append({k.lower(): v for k, v in self.headers.items()})
                        for rs in export.resource_spans:
                            for ss in rs.scope_spans:
                                receiver.spans.extend(ss.spans)
                        receiver.arrived.notify_all()
                answer = ExportTraceServiceResponse().SerializeToString() if ok else b""
                self.send_response(200 if ok else 400)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1/traces"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def wait_for(self, count: int, timeout_s: float = 15.0) -> list[Span]:
        """The spans received, once there are at least ``count`` (bounded wait)."""
        with self.arrived:
            self.arrived.wait_for(lambda: len(self.spans) >= count, timeout=timeout_s)
            return list(self.spans)

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    r = OtlpReceiver()
    yield r
    r.stop()


@pytest.fixture
def traced_gateway(
    tmp_path: Path, upstream: UpstreamStandin, receiver: OtlpReceiver
) -> Iterator[ServeProcess]:
    config = tmp_path / "turnstile.yaml"
    config.write_text(
        f"server:\n  db_path: {tmp_path / 'transcript.db'}\n"
        "deployments:\n"
        f"  - {{name: traced, api: openai_chat, model: gpt-traced, base_url: '{upstream.url}/v1', "
        "api_key_env: TRACE_TEST_UPSTREAM_KEY, price: {input: 1, output: 1}}\n"
        "tracing:\n  enabled: true\n"
        f"  otlp_endpoint: {receiver.url}\n  service_name: turnstile-wire\n"
        "  headers_env: TRACE_TEST_OTLP_HEADERS\n  batch_delay_ms: 20\n"
    )
    env = clean_env(
        TRACE_TEST_UPSTREAM_KEY="sk-upstream",
        TRACE_TEST_OTLP_HEADERS=f"x-collector-key={EXPORT_SECRET}",
    )
    proc = ServeProcess(config, free_port(), cwd=tmp_path, env=env)
    proc.start()
    yield proc
    proc.kill()


def test_a_gateway_process_exports_turn_and_attempt_spans_over_otlp_and_sends_traceparent_upstream(
    traced_gateway: ServeProcess, upstream: UpstreamStandin, receiver: OtlpReceiver
) -> None:
    upstream.script(replay(text_answer("openai_chat", "traced", stream=False), api="openai_chat"))
    got = httpx.post(
        f"{traced_gateway.url}/v1/chat/completions",
        json={"model": "traced", "messages": [{"role": "user", "content": "hi"}]},
        headers={"traceparent": CLIENT_PARENT},
        timeout=15,
    )
    assert got.status_code == 200, got.text
    spans = receiver.wait_for(2)
    by_kind = {s.kind: s for s in spans}
    turn, attempt = by_kind[Span.SPAN_KIND_SERVER], by_kind[Span.SPAN_KIND_CLIENT]
    assert turn.name == "chat traced" and attempt.name == "chat gpt-traced"
    assert turn.trace_id.hex() == CLIENT_TRACE == attempt.trace_id.hex()
    assert turn.parent_span_id.hex() == "00f067aa0ba902b7"
    assert attempt.parent_span_id == turn.span_id
    attrs = {a.key: a.value for a in attempt.attributes}
    assert attrs["gen_ai.operation.name"].string_value == "chat"
    assert attrs["gen_ai.provider.name"].string_value == "openai"
    assert attrs["gen_ai.request.model"].string_value == "gpt-traced"
    assert attrs["gen_ai.usage.input_tokens"].int_value > 0
    assert [v.string_value for v in attrs["gen_ai.response.finish_reasons"].array_value.values] == ["stop"]
    # the upstream saw the attempt span as its parent, in the client's trace
    (sent,) = upstream.requests(api="openai_chat")
    version, trace_id, parent_id, _flags = sent.headers["traceparent"].split("-")
    assert (version, trace_id, parent_id) == ("00", CLIENT_TRACE, attempt.span_id.hex())
    # the export carried the headers named by headers_env, which the config file never held
    assert all(h.get("x-collector-key") == EXPORT_SECRET for h in receiver.headers)
    assert EXPORT_SECRET not in (traced_gateway.config.read_text())


def test_with_tracing_off_no_traceparent_goes_upstream(
    upstream: UpstreamStandin, oai: openai.OpenAI, gateway_url: str
) -> None:
    upstream.script(replay(text_answer("openai_chat", "plain", stream=False), api="openai_chat"))
    oai.chat.completions.create(
        model=MATRIX["openai_chat"][0],
        messages=[{"role": "user", "content": "hi"}],
        extra_headers={"traceparent": CLIENT_PARENT},
    )
    (sent,) = upstream.requests(api="openai_chat")
    assert "traceparent" not in sent.headers
