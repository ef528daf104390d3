"""What one turn is while it runs, and the shape every layer of its chain has.

A turn (:class:`Turn`) is created by the server from a parsed request and handed to the chain
of layers (:mod:`gateway.pipeline`). Each layer is a :class:`Service` built over the service
below it (``inner``): it gets ``(turn, request)``, may change the request it hands down, calls
``inner`` at most once per unit of its own work (the tool loop once per model step, the route
once per deployment it tries) and never calls a layer above it. What a layer learns that a
later layer needs is kept on the turn, in a typed field (see the field comments: each names the
layer that writes it).

Two methods per service, one for each kind of answer: ``complete`` returns a whole
:class:`~gateway.schema.Response`; ``stream`` returns once the first batch of events is
available (so a failure before the first byte can still fall back or be an HTTP error) an
async iterator of non-empty event batches. A stream reports how it ended in
``turn.outcome`` (:class:`StreamOutcome`), written by the layer that produced its events,
before the iterators of the layers above it finish (an inner generator's ``finally`` runs
before its caller's), so every layer reads the outcome its inner layers left.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import structlog

from gateway.access.model import Principal
from gateway.config import Deployment, GatewayConfig
from gateway.deployments import DeploymentTable
from gateway.errors import TurnstileError, UpstreamError
from gateway.http_headers import header_list, header_value
from gateway.metrics import Metrics
from gateway.providers.base import Provider
from gateway.schema import Message, Request, Response, StreamEvent, ToolProgress, Usage
from gateway.signers import SignerMemory
from gateway.thinking_memory import ThinkingMemory
from gateway.transcript import TranscriptWriter
from mcp_servers.clients import EVERYTHING, Visibility

if TYPE_CHECKING:
    from gateway.access.identity import Identity
    from mcp_servers.http_api import McpRuntime
    from routers.engine import RoutingEngine

log = structlog.get_logger("turnstile.pipeline")

StreamItem = StreamEvent | ToolProgress
"""What a streaming turn yields (``ToolProgress``: the server-side tool loop only)."""

Batches = AsyncIterator[list[StreamItem]]
"""A stream's events as non-empty lists, each the events available at one instant."""


@dataclass
class Gateway:
    """Shared state of one gateway process (lives on ``app.state.gateway``)."""

    config: GatewayConfig
    table: DeploymentTable
    providers: dict[str, Provider]
    transcript: TranscriptWriter | None = None
    signers: SignerMemory = field(default_factory=SignerMemory)
    thinking: ThinkingMemory = field(default_factory=ThinkingMemory)  # sized from config (server)
    sessions: Any = None  # gateway.sessions.store.SessionStore, opened in the server lifespan
    routing: RoutingEngine | None = None  # health and routers, made with the Pipeline
    mcp: McpRuntime | None = None  # registry and endpoint, for the tool loop (server lifespan)
    metrics: Metrics = field(default_factory=Metrics)  # counted from the records (gateway.metrics)
    identity: Identity | None = None  # virtual keys (access.auth not off; server lifespan)
    limits: Any = None  # gateway.limits.backend.Limits (server lifespan); None: no limits applied
    tracing: Any = None  # gateway.tracing.Tracing when tracing.enabled (server lifespan); None: off
    guardrails: Any = None  # gateway.guardrails.engine.Guardrails when guardrails.enabled (server lifespan)
    fleet: Any = None  # gateway.fleet.open.Fleet when redis.url is set (server lifespan); None: alone


@dataclass
class StepRow:
    """One model request of the server-side tool loop, for its transcript row
    ``<request id>.step<n>`` (written by the record layer with the turn's own row)."""

    step: int
    request: Request
    response: Response
    deployment: Deployment | None


@dataclass
class StreamOutcome:
    """How a stream ended: the answer as delivered (``aborted`` when cut short), the error
    that ended it, the turn's status (499: the client went away; 503: the shutdown bound)."""

    response: Response | None
    error: TurnstileError | None
    status: int


class SessionHandle(Protocol):
    """A turn's handle on the session it is bound to (made by the session layer; its turn leaf
    moves as the turn appends). Implemented by :class:`gateway.sessions.turns.SessionBinding`."""

    session_id: str

    async def append(self, messages: list[Message]) -> None:
        """Append ``messages`` (a tool-loop step) under the turn's leaf."""
        ...

    async def view(self, request: Request, dep: Deployment, *, reason: str = "window") -> Request:
        """``request`` with its history replaced by the session's context rebuilt for ``dep``'s
        window (compacting when needed), checked by the pairing guard."""
        ...

    async def after_overflow(self, request: Request, dep: Deployment, err: UpstreamError) -> Request | None:
        """The request to retry once after ``dep`` refused it as too long for its context
        window (the session compacted), or None."""
        ...

    async def finish(self, response: Response | None) -> None:
        """Append the turn's answer; never raises."""
        ...


@dataclass
class Turn:
    """What is known about a turn while it runs; becomes its transcript row."""

    request_id: str
    dialect: str
    request: Request  # as the client sent it (the edge's parse)
    headers_in: Mapping[str, str] | None = None  # the HTTP request's headers (case-insensitive get)
    started: float = field(default_factory=time.perf_counter)
    first_byte_s: float | None = None  # a stream's first batch, seconds after ``started`` (record layer)
    wall: float = field(default_factory=time.time)
    session_id: str | None = None  # set by the server from x-turnstile-session / metadata / user
    trace: Any = None  # gateway.tracing.TurnTrace: the turn's span (record layer); None: tracing off
    # access layer
    principal: Principal | None = None  # the caller's virtual key and team (None: anonymous)
    # the caller's MCP tools (access: its key); guards narrow it to the turn's servers (mcp.tool_search)
    mcp_visibility: Visibility = EVERYTHING
    # guards layer
    guard_outcome: str = "ok"
    repairs: list[dict[str, Any]] = field(default_factory=list)
    candidates: list[Deployment] | None = None  # the model's deployments (alias order)
    loop_tools: frozenset[str] | None = None  # the tool loop's MCP tools (gateway.mcp_tools.offer)
    # session layer
    session: SessionHandle | None = None  # the bound session (gateway.sessions.turns.SessionBinding)
    # tool loop layer
    steps: list[StepRow] = field(default_factory=list)
    # route layer
    route: dict[str, Any] | None = None  # the routing decision (gateway.layers.route.route)
    order: list[Deployment] | None = None  # the deployments to try, in order (decided once)
    deployment: Deployment | None = None  # the deployment being tried (then: that answered)
    tried: int = 0  # the index in ``order`` of the deployment that answered
    attempts: list[dict[str, Any]] = field(default_factory=list)
    # target layer
    dropped: tuple[dict[str, Any], ...] = ()  # client fields a target could not take (note_dropped)
    # limits layer
    limit_headers: dict[str, str] | None = None  # x-ratelimit-* of the caller's limits (admission)
    step_holds: Any = None  # gateway.limits.holds.StepHolds: the tool loop holds each later step's budget
    context_hold: Any = (
        None  # gateway.limits.holds.ContextHold: the window layer holds a bound turn's history
    )
    # tool loop layer (read by record and limits)
    spent: Usage | None = None  # what the steps that answered cost when the turn ends without an answer
    # guardrails layer: checked messages by fingerprint -> True (unchanged) or the message to
    # send instead (each checked once per turn, whatever the steps and deployments tried)
    guarded: dict[str, Any] = field(default_factory=dict)
    # the layer that produced a stream's events
    outcome: StreamOutcome | None = None

    def headers(self) -> dict[str, str]:
        """Response headers known before the answer: request id and serving deployment (values
        made safe by :func:`gateway.http_headers.header_value`)."""
        h = {"x-turnstile-request-id": self.request_id}
        if self.deployment is not None:
            h["x-turnstile-deployment"] = header_value(self.deployment.name)
        if self.route is not None:
            h["x-turnstile-route"] = header_value(self.route["header"])
        if self.dropped:
            fields = self.dropped_fields()
            if fields:
                h["x-turnstile-dropped"] = header_list(fields)
        if self.limit_headers:
            h.update(self.limit_headers)
        return h

    def note_dropped(self, note: dict[str, Any]) -> None:
        """Keep ``note`` (``{"kind": "dropped", "field", "values", "deployment", "reason"}``)
        of a client field the deployment tried could not take: stored with the transcript
        row's repairs, named in ``x-turnstile-dropped`` when that deployment answers. The same
        note again (the next tool-loop step on that deployment) is kept once."""
        if note not in self.dropped:
            self.dropped = (*self.dropped, note)

    def dropped_fields(self) -> list[str]:
        """The fields dropped for the deployment that answered (or is being tried), each once."""
        name = self.deployment.name if self.deployment is not None else None
        return list(dict.fromkeys(d["field"] for d in self.dropped if d.get("deployment") == name))

    def final_headers(self, resp: Response) -> dict[str, str]:
        """:meth:`headers` plus what the whole answer tells: its cost (USD), the ids of tool
        calls withheld, how many repairs the guards made."""
        h = self.headers()
        if resp.usage.cost_usd is not None:
            h["x-turnstile-cost-usd"] = f"{resp.usage.cost_usd:.9f}"
        if resp.withheld_tool_calls:
            h["x-turnstile-withheld-tool-calls"] = header_list(w.id for w in resp.withheld_tool_calls)
        if self.repairs:
            h["x-turnstile-repairs"] = str(len(self.repairs))
        return h

    def add_repairs(self, repairs: Sequence[Any]) -> None:
        """Keep ``repairs`` (the guards' or the thinking policy's: dataclasses or pydantic
        models) for the transcript, as JSON-able dicts."""
        self.repairs.extend(_as_dict(r) for r in repairs)

    def note_failed_attempt(self, dep: Deployment, err: UpstreamError) -> None:
        """An attempt on ``dep`` failed with ``err``: one entry in ``attempts`` and one log line."""
        self.attempts.append({"deployment": dep.name, "status": err.status, "error": err.message})
        log.warning(
            "upstream_failed",
            request_id=self.request_id,
            deployment=dep.name,
            status=err.status,
            retryable=err.retryable,
            retry_after_s=err.retry_after_s,
            error=err.message,
        )


def _as_dict(obj: Any) -> dict[str, Any]:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return dataclasses.asdict(obj)
    if hasattr(obj, "model_dump"):
        return dict(obj.model_dump(mode="json"))
    return dict(obj) if isinstance(obj, dict) else {"value": str(obj)}


TurnContext = Turn
"""The name the server and the tests used before the turn became a chain of layers."""


class Service(Protocol):
    """One layer of the chain (or its innermost service): see the module docstring."""

    async def complete(self, turn: Turn, request: Request) -> Response:
        """The whole answer to ``request``. Raises :class:`TurnstileError` subclasses."""
        ...

    async def stream(self, turn: Turn, request: Request) -> Batches:
        """The answer's events, returned once the first batch is available; how the stream
        ended is left in ``turn.outcome``. Raises :class:`TurnstileError` subclasses before
        the first batch; after it, failures end the stream with a ``StreamError`` event."""
        ...


@dataclass
class TurnResult:
    """A finished non-streaming turn."""

    response: Response
    headers: dict[str, str]


class StreamingTurn:
    """An open streaming turn, the first event already fetched, and its response ``headers``.

    Its events are read through ONE of two views: ``events`` yields them one at a time;
    ``batches`` yields non-empty lists of the events that became available at one instant
    (one upstream network read), which the server renders as one write. The constructor
    takes either view (keyword ``events`` or ``batches``); the other is derived from it.
    """

    def __init__(
        self,
        *,
        headers: dict[str, str],
        events: AsyncIterator[StreamItem] | None = None,
        batches: AsyncIterator[Sequence[StreamItem]] | None = None,
    ) -> None:
        if (events is None) == (batches is None):
            raise ValueError("StreamingTurn takes exactly one of events and batches")
        self.headers = headers
        self._events = events
        self._batches = batches

    @property
    def events(self) -> AsyncIterator[StreamItem]:
        """The events one at a time."""
        if self._events is None:
            assert self._batches is not None
            self._events = flatten(self._batches)
        return self._events

    @property
    def batches(self) -> AsyncIterator[Sequence[StreamItem]]:
        """The events as lists, each handed on the moment it is complete (an empty one:
        :data:`KEEPALIVE`)."""
        if self._batches is None:
            self._batches = _singletons(self.events)
        return self._batches


KEEPALIVE: list[Any] = []
"""An empty batch: the stream is alive but has nothing to hand on yet (the attempt layer holds
a tool call's arguments until their stop reason is known); the server sends the dialect's
keep-alive for it. Never mutated."""

KEEPALIVE_EVENT = ToolProgress(id="", name="", done=False)
""":data:`KEEPALIVE` as one event, where batches are flattened (:func:`flatten`)."""


async def flatten(batches: AsyncIterator[Sequence[Any]]) -> AsyncIterator[Any]:
    """The items of ``batches``, one at a time; an empty batch (:data:`KEEPALIVE`) as
    :data:`KEEPALIVE_EVENT`."""
    async for batch in batches:
        if not batch:
            yield KEEPALIVE_EVENT
        for item in batch:
            yield item


async def _singletons(items: AsyncIterator[Any]) -> AsyncIterator[list[Any]]:
    """Each item of ``items`` as a list of one."""
    async for item in items:
        yield [item]


__all__ = [
    "Batches",
    "Gateway",
    "Service",
    "SessionHandle",
    "StepRow",
    "StreamItem",
    "StreamOutcome",
    "StreamingTurn",
    "Turn",
    "TurnContext",
    "TurnResult",
]
