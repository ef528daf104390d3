"""One turn through the turnstile: a chain of layers, outermost first.

Each layer is one concern, visited once at its place in the chain (below the tool loop: once
per model step; below the route: once per deployment tried); none calls back up. How they
fit, where each keeps its state and how to add one: ``docs/architecture.md``.
"""

from __future__ import annotations

from gateway.config import GuardPolicy
from gateway.errors import TurnstileError
from gateway.layers.access import AccessLayer
from gateway.layers.attempt import AttemptLayer
from gateway.layers.guardrails import GuardrailsLayer
from gateway.layers.guards import GuardLayer
from gateway.layers.limits import LimitsLayer
from gateway.layers.record import RecordLayer, record_refused
from gateway.layers.route import RouteLayer
from gateway.layers.session import SessionLayer
from gateway.layers.target import TargetLayer
from gateway.layers.tool_loop import ToolLoopLayer
from gateway.layers.window import WindowLayer
from gateway.turn import Gateway, Service, StreamingTurn, Turn, TurnContext, TurnResult

LAYERS = (
    RecordLayer,  # the transcript row of every turn, committed before the answer is released
    AccessLayer,  # who is calling: the virtual key, its models and MCP tools
    GuardLayer,  # deployments looked up, MCP tools offered, validation, pairing, ordering
    LimitsLayer,  # the caller's budgets and rate limits: admitted once, settled when it ends
    SessionLayer,  # a bound session: the client's new messages before, the answer after
    ToolLoopLayer,  # the server-side MCP tool loop: the layers below once per model step
    RouteLayer,  # the routing decision, then one fallback loop over the deployments
    TargetLayer,  # capabilities, output limit and thinking policy of the deployment tried
    WindowLayer,  # a bound session's context rebuilt for that deployment's window
    GuardrailsLayer,  # tool results (and input, output) checked: only when guardrails are on
)
"""The layers in order, outermost first; :class:`AttemptLayer` is the innermost service. A
layer with a ``wanted(gw)`` static method is left out of the chain when it returns False (a
concern that is off costs a turn nothing)."""


class Pipeline:
    """Runs turns for a :class:`Gateway` through :data:`LAYERS`."""

    def __init__(self, gw: Gateway) -> None:
        self.gw = gw
        self.attempt = AttemptLayer(gw)
        chain: Service = self.attempt
        for layer in reversed(LAYERS):
            wanted = getattr(layer, "wanted", None)
            if wanted is None or wanted(gw):
                chain = layer(gw, chain)
        self.chain = chain

    @property
    def policy(self) -> GuardPolicy:
        """The guard policy the layers apply (``guards`` of the configuration)."""
        return self.attempt.policy

    @policy.setter
    def policy(self, policy: GuardPolicy) -> None:
        """Apply ``policy`` in every layer that reads it (tests switch it on a running gateway)."""
        layer: object = self.chain
        while layer is not None:
            if hasattr(layer, "policy"):
                layer.policy = policy  # type: ignore[attr-defined]
            layer = getattr(layer, "inner", None)

    async def complete(self, turn: Turn) -> TurnResult:
        """Run a non-streaming turn. Raises :class:`TurnstileError` subclasses; every outcome,
        success or not, is recorded."""
        response = await self.chain.complete(turn, turn.request)
        return TurnResult(response=response, headers=turn.final_headers(response))

    async def open_stream(self, turn: Turn) -> StreamingTurn:
        """Start a streaming turn: returns once the first batch of events is there (after
        fallback across deployments); failures after that end the stream with a
        ``StreamError`` event. Raises :class:`TurnstileError` when no deployment could start."""
        batches = await self.chain.stream(turn, turn.request)
        return StreamingTurn(batches=batches, headers=turn.headers())

    async def record_refused(self, request_id: str, dialect: str, error: TurnstileError) -> None:
        """One transcript row for a request refused before it became a turn
        (:func:`gateway.layers.record.record_refused`)."""
        await record_refused(self.gw, request_id, dialect, error)


__all__ = ["LAYERS", "Gateway", "Pipeline", "StreamingTurn", "Turn", "TurnContext", "TurnResult"]
