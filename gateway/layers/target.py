"""Target layer: the request made fit for the deployment being tried (``turn.deployment``).

The deployment must be able to take what the request carries (tools, images: else
:class:`CapabilityError`, HTTP 400, naming the message); a request without an output limit
gets the deployment's ``max_output_tokens``; the thinking policy adapts thinking parts to the
target's provenance (:func:`gateway.invariants.apply_thinking_policy`, repairs kept on the turn).
Passed-through fields the target cannot carry (:func:`gateway.providers.passthrough.split`:
fields of another wire API) are dropped and said so: ``turn.dropped`` (the
``x-turnstile-dropped`` header), a ``passthrough_dropped`` repair on the transcript row and one
log line.
"""

from __future__ import annotations

import structlog

from gateway import invariants
from gateway.config import Deployment
from gateway.deployments import provenance_of
from gateway.errors import CapabilityError
from gateway.providers import passthrough
from gateway.schema import ImagePart, Request, Response, ToolResultMessage, UserMessage
from gateway.turn import Batches, Gateway, Service, Turn

log = structlog.get_logger("turnstile.pipeline")


class TargetLayer:
    """Hands the layer below the request for ``turn.deployment``."""

    def __init__(self, gw: Gateway, inner: Service) -> None:
        self.inner = inner
        self.policy = gw.config.guards

    def for_target(self, turn: Turn, request: Request) -> Request:
        """``request`` for ``turn.deployment`` (see the module docstring). Raises
        :class:`CapabilityError`."""
        dep = turn.deployment
        assert dep is not None, "the route layer sets the deployment"
        check_capabilities(request, dep)
        if request.max_output_tokens is None and dep.max_output_tokens is not None:
            request = request.model_copy(update={"max_output_tokens": dep.max_output_tokens})
        note_dropped(turn, request, dep)
        prepared, repairs = invariants.apply_thinking_policy(request, provenance_of(dep), self.policy)
        if repairs:
            turn.add_repairs(repairs)
            log.info(
                "thinking_policy_applied",
                request_id=turn.request_id,
                deployment=dep.name,
                repairs=len(repairs),
            )
        return prepared

    async def complete(self, turn: Turn, request: Request) -> Response:
        """The inner answer to the target's request."""
        return await self.inner.complete(turn, self.for_target(turn, request))

    async def stream(self, turn: Turn, request: Request) -> Batches:
        """The inner stream of the target's request."""
        return await self.inner.stream(turn, self.for_target(turn, request))


def note_dropped(turn: Turn, request: Request, dep: Deployment) -> None:
    """Set ``turn.dropped`` to the passed-through fields ``dep`` cannot carry (each attempt
    anew: a fallback target may carry them) and note them on the turn and in the log."""
    dropped = passthrough.split(request, dep)[1]
    turn.dropped = dropped
    if dropped:
        turn.add_repairs(
            [{"kind": "passthrough_dropped", "deployment": dep.name, "api": dep.api, "fields": dropped}]
        )
        log.info("passthrough_dropped", request_id=turn.request_id, deployment=dep.name, fields=dropped)


def check_capabilities(request: Request, dep: Deployment) -> None:
    """Raise :class:`CapabilityError` when ``dep`` cannot take the request's tools or images."""
    if request.tools and not dep.supports_tools:
        raise CapabilityError(
            f"the request offers {len(request.tools)} tool(s), and model {dep.name!r} cannot take tools",
            param="tools",
        )
    if dep.supports_images:
        return
    for i, msg in enumerate(request.messages):
        if (type(msg) is UserMessage or type(msg) is ToolResultMessage) and any(
            type(p) is ImagePart for p in msg.content
        ):
            where = msg.src or f"messages[{i}]"
            what = (
                f"the tool result for {msg.tool_call_id}"
                if type(msg) is ToolResultMessage
                else "a user message"
            )
            raise CapabilityError(
                f"{what} ({where}) contains an image, and model {dep.name!r} cannot take images",
                param=where,
            )
