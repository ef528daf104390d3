"""A local OTLP/HTTP traces sink for ``bench.inproc --tracing``: accepts ``POST /v1/traces``
(protobuf), counts the spans it decodes, answers an empty ``ExportTraceServiceResponse``.
Runs in a daemon thread of the benchmark process, started before the measured loop (so its
work is not in the loop's opcode counts, but is in the process CPU time)."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class OtlpSink:
    """Listens on 127.0.0.1 at a free port; :attr:`url` is its traces endpoint, :attr:`spans`
    the number of spans received so far."""

    def __init__(self) -> None:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
            ExportTraceServiceResponse,
        )

        sink = self
        self.spans = 0
        answer = ExportTraceServiceResponse().SerializeToString()

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                export = ExportTraceServiceRequest.FromString(body)
                sink.spans += sum(len(ss.spans) for rs in export.resource_spans for ss in rs.scope_spans)
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1/traces"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        """Stop listening."""
        self.server.shutdown()
        self.server.server_close()
