"""The contract every upstream wire API implements: the verbs of a wire module and the values
they pass (:class:`UpstreamRequest`, :class:`CallContext`, :class:`StreamParser`).

A wire module (``openai_chat``, ``openai_responses``, ``anthropic_messages``, ``gemini``) exposes
the same verbs:

* ``build_request(request, deployment, api_key) -> (UpstreamRequest, CallContext)``:
  internal schema -> wire body, URL and headers. Tool names and tool-call ids that break the
  upstream's rules are rewritten here (``CallContext.names``) and mapped back on the way out.
* ``parse_response(body, ctx) -> Response``: a non-streaming wire body -> internal schema.
* ``new_stream_parser(ctx) -> StreamParser``: an incremental parser of the wire stream.
* ``map_stop_reason(raw) -> StopReason``: raises :class:`UnknownStopReason` on a value it
  does not know; nothing is guessed.
* ``error_message(status, body) -> str``: the human message inside an upstream error body.
* ``output_budget(request, deployment) -> int | None``: the output budget (tokens) the built
  request carries, which the truncation guard compares the output usage with.

:class:`gateway.providers.base.HttpProvider` runs those verbs over the shared aiohttp transport
(:mod:`gateway.providers.transport`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from gateway.config import Deployment
from gateway.providers.naming import NameMap
from gateway.schema import Request, Response, StopReason, StreamEvent


@dataclass
class UpstreamRequest:
    """One HTTP request to an upstream: ``body`` is already-encoded JSON bytes."""

    url: str
    headers: dict[str, str]
    body: bytes
    stream: bool
    method: str = "POST"


@dataclass
class CallContext:
    """What a wire module needs to read the answer of the request it built: the deployment,
    the original request and the tool name / id rewrites it applied. ``output_tool`` is the
    upstream name of the tool that carries a structured answer when the upstream has no native
    slot for it (its call is the answer's text, never a tool call); ``output_wrapped``: the
    answer is that tool's ``value`` argument (a schema whose root is not an object)."""

    deployment: Deployment
    request: Request
    names: NameMap = field(default_factory=NameMap)
    output_tool: str | None = None
    output_wrapped: bool = False


class StreamParser(Protocol):
    """Incremental stream conversion: wire events in, internal :mod:`gateway.schema` events out.

    ``feed(event, data)`` takes one SSE event (``event`` is the SSE ``event:`` field or None,
    ``data`` the raw ``data:`` payload bytes) and returns the internal events it completes.
    ``finish()`` is called when the upstream closes the stream; it raises
    :class:`gateway.errors.UpstreamProtocolError` if the stream ended before its stop reason.
    """

    def feed(self, event: str | None, data: bytes) -> list[StreamEvent]: ...

    def finish(self) -> list[StreamEvent]: ...


class WireModule(Protocol):
    """The verbs of a wire module (see module docstring)."""

    API: str

    def build_request(
        self, request: Request, deployment: Deployment, api_key: str | None
    ) -> tuple[UpstreamRequest, CallContext]: ...

    def parse_response(self, body: bytes, ctx: CallContext) -> Response: ...

    def new_stream_parser(self, ctx: CallContext) -> StreamParser: ...

    def map_stop_reason(self, raw: str) -> StopReason: ...

    def error_message(self, status: int, body: bytes) -> str: ...

    def output_budget(self, request: Request, deployment: Deployment) -> int | None: ...
