"""Providers: the interface the pipeline calls (:class:`Provider`) and :class:`HttpProvider`,
which runs a wire module (:class:`gateway.providers.wire.WireModule`: ``openai_chat``,
``openai_responses``, ``anthropic_messages``, ``gemini``) over the shared aiohttp transport
(:mod:`gateway.providers.transport`). Adapters that do not speak HTTP themselves (``litellm``,
``demo``) implement :class:`Provider` directly.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING

from gateway.config import Deployment, TimeoutConfig, effective_timeouts
from gateway.providers import transport
from gateway.providers.wire import WireModule
from gateway.schema import Request, Response, StreamEvent

if TYPE_CHECKING:
    import aiohttp


class Provider(ABC):
    """An upstream that can answer a :class:`Request` for a :class:`Deployment`."""

    api: str

    @abstractmethod
    async def complete(self, request: Request, deployment: Deployment, api_key: str | None) -> Response:
        """One non-streaming call. Raises :class:`gateway.errors.UpstreamError` subclasses."""

    @abstractmethod
    def stream(
        self, request: Request, deployment: Deployment, api_key: str | None
    ) -> AsyncIterator[StreamEvent]:
        """One streaming call, as internal events. Errors before the first event raise
        :class:`gateway.errors.UpstreamError`; after it, they end the stream with a
        ``StreamError`` event or raise."""

    def output_budget(self, request: Request, deployment: Deployment) -> int | None:
        """The output budget (tokens) a call for ``request`` on ``deployment`` carries, None when
        unknown: by default the request's ``max_output_tokens``, else the deployment's."""
        return request.max_output_tokens or deployment.max_output_tokens

    async def stream_batches(
        self, request: Request, deployment: Deployment, api_key: str | None
    ) -> AsyncIterator[list[StreamEvent]]:
        """:meth:`stream` in batches: non-empty lists of internal events, each handed on the
        moment it is complete (a batch is what became available at one instant, never held
        back for more). Flattened, the batches are exactly :meth:`stream`'s events, with its
        errors at the same place. This default wraps each event of :meth:`stream` in a list
        of one; :class:`HttpProvider` yields one batch per network read."""
        async for event in self.stream(request, deployment, api_key):
            yield [event]


class HttpProvider(Provider):
    """Runs a :class:`WireModule` over the shared aiohttp session with the configured
    timeouts and answer cap (``max_response_bytes``, bytes; a deployment's own
    ``max_response_bytes`` wins). ``on_large`` is called after an answer over
    :data:`gateway.providers.transport.LARGE_ANSWER_BYTES`. One instance per wire API, made in
    the app lifespan."""

    def __init__(
        self,
        wire: WireModule,
        session: aiohttp.ClientSession,
        timeouts: TimeoutConfig,
        max_response_bytes: int = transport.DEFAULT_MAX_BYTES,
        on_large: Callable[[], None] | None = None,
    ) -> None:
        self.wire = wire
        self.api = wire.API
        self.session = session
        self.timeouts = timeouts
        self.max_response_bytes = max_response_bytes
        self.on_large = on_large

    def output_budget(self, request: Request, deployment: Deployment) -> int | None:
        """The wire module's ``output_budget`` (what its request body carries)."""
        return self.wire.output_budget(request, deployment)

    async def complete(self, request: Request, deployment: Deployment, api_key: str | None) -> Response:
        if request.stream:
            request = request.model_copy(update={"stream": False})
        up, ctx = self.wire.build_request(request, deployment, api_key)
        timeouts = effective_timeouts(self.timeouts, deployment) if deployment.timeouts_s else self.timeouts
        cap, cap_name = self._cap(deployment)
        body = await transport.send(
            self.session, up, timeouts, self.wire, deployment.name, cap, self.on_large, cap_name=cap_name
        )
        return self.wire.parse_response(body, ctx)

    async def stream(
        self, request: Request, deployment: Deployment, api_key: str | None
    ) -> AsyncIterator[StreamEvent]:
        async for batch in self.stream_batches(request, deployment, api_key):
            for event in batch:
                yield event

    async def stream_batches(
        self, request: Request, deployment: Deployment, api_key: str | None
    ) -> AsyncIterator[list[StreamEvent]]:
        """One batch per network read: the internal events of every SSE event the read
        completed. The first events of the stream (those of its first SSE event that has
        any) form a batch of their own, handed on before the rest of their read is parsed,
        so the time to first byte does not grow with the size of the first read. A parse
        error yields the events before it first, then raises (as :meth:`stream` would)."""
        if not request.stream:
            request = request.model_copy(update={"stream": True})
        up, ctx = self.wire.build_request(request, deployment, api_key)
        parser = self.wire.new_stream_parser(ctx)
        feed = parser.feed
        first = True
        cap, cap_name = self._cap(deployment)
        async for reads in transport.send_stream_reads(
            self.session,
            up,
            self._timeouts(deployment),
            self.wire,
            deployment.name,
            cap,
            self.on_large,
            cap_name=cap_name,
        ):
            out: list[StreamEvent] = []
            try:
                for event_name, data in reads:
                    events = feed(event_name, data)
                    if not events:
                        continue
                    if first:
                        first = False
                        yield events
                    else:
                        out += events
            except Exception:
                if out:
                    yield out
                raise
            if out:
                yield out
        last = parser.finish()
        if last:
            yield last

    def _timeouts(self, deployment: Deployment) -> TimeoutConfig:
        return effective_timeouts(self.timeouts, deployment)

    def _cap(self, deployment: Deployment) -> tuple[int, str]:
        """The answer cap for ``deployment`` (bytes) and the setting it comes from."""
        if deployment.max_response_bytes is None:
            return self.max_response_bytes, transport.SERVER_CAP
        return deployment.max_response_bytes, f"max_response_bytes of deployment {deployment.name!r}"
