"""Tool loop layer: a turn with MCP tools attached (``turn.loop_tools``, set by the guards
layer) runs the server-side tool loop (:mod:`gateway.tool_loop`, streams:
:mod:`gateway.tool_loop_stream`): each model step is one call of the layer below (route, so
every step has fallback, its target's context and the truncation guard), each tool call runs
through the MCP registry with the caller's visibility. Each step's messages are appended to
the bound session (``turn.session``) and its model request is kept in ``turn.steps`` for the
record layer (rows ``<request id>.step<n>``). A turn without MCP tools passes through.

Budgets: the limits layer above admitted the turn (its request, its slot); every model step is
held on the caller's budgets before it goes upstream and settled when it ends
(``turn.step_holds``, :class:`gateway.limits.holds.StepHolds`), so concurrent tool loops never
take a hard budget past its limit; a step that does not fit ends the turn with the budget's
429 (a stream: its error event, or the HTTP error when it is the first step). A turn that
fails after some steps answered leaves their usage in ``turn.spent`` (its transcript row and
its settle charge it); a stream cut while a step streams adds that step's delivered part to
the aborted answer's usage.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from gateway import accounting
from gateway.errors import InvalidRequest, TurnCutByShutdown, TurnstileError
from gateway.schema import AssistantMessage, Message, Request, Response, StreamEvent, Usage
from gateway.tool_exec import mcp_runner
from gateway.tool_loop import ToolLoop
from gateway.tool_loop_stream import Out, run_stream
from gateway.turn import Batches, Gateway, Service, StepRow, StreamOutcome, Turn, flatten


class ToolLoopLayer:
    """Runs the server-side tool loop over the layer below."""

    def __init__(self, gw: Gateway, inner: Service) -> None:
        self.gw = gw
        self.inner = inner

    def loop(self, turn: Turn, request: Request, **overrides: Any) -> ToolLoop:
        """The :class:`ToolLoop` of ``turn`` over the gateway's MCP registry (``request``
        carries the MCP tools the guards layer attached; calls run with the caller's
        ``turn.mcp_visibility``). ``overrides`` replace :class:`ToolLoop` arguments (tests)."""
        names = turn.loop_tools or frozenset()
        if self.gw.mcp is None:
            raise InvalidRequest("tools: this gateway's MCP registry is not running", param="tools")
        cfg = self.gw.config.tool_loop

        async def record(n: int, step_req: Request, resp: Response, appended: list[Message]) -> None:
            if appended and turn.session is not None:
                await turn.session.append(appended)  # under the turn's own leaf
            turn.steps.append(StepRow(n, step_req, resp, turn.deployment))

        kwargs: dict[str, Any] = {
            "loop_tools": names,
            "client_tools": frozenset(t.name for t in request.tools) - names,
            "runner": mcp_runner(
                self.gw.mcp.endpoint,
                visibility=turn.mcp_visibility,
                parent=turn.trace.span if turn.trace is not None else None,
            ),
            "max_steps": cfg.max_steps,
            "timeout_s": cfg.call_timeout_s,
            "keepalive_s": cfg.keepalive_s,
            "record": record,
            "session_bound": turn.session is not None,
            **overrides,
        }
        return ToolLoop(**kwargs)

    async def complete(self, turn: Turn, request: Request) -> Response:
        """The loop's final answer (usage summed over its steps)."""
        if turn.loop_tools is None:
            return await self.inner.complete(turn, request)
        inner = self.inner
        holds = turn.step_holds

        async def ask(step_req: Request, n: int) -> Response:
            if holds is None:
                return await inner.complete(turn, step_req)
            hold = await holds.hold(step_req)
            try:
                resp = await inner.complete(turn, step_req)
            except BaseException:
                await holds.release(hold)
                raise
            await holds.settle(hold, resp.usage.cost_usd)
            return resp

        loop = self.loop(turn, request)
        try:
            return await loop.run(request, ask)
        except BaseException:
            if loop.usage != Usage():  # steps answered (and cost) before it failed
                turn.spent = loop.usage
            raise

    async def stream(self, turn: Turn, request: Request) -> Batches:
        """The loop as ONE streamed message (:func:`gateway.tool_loop_stream.run_stream`);
        step 1 is opened here, so a failure before the first byte is still an HTTP error."""
        if turn.loop_tools is None:
            return await self.inner.stream(turn, request)
        inner = self.inner
        loop = self.loop(turn, request)
        holds = turn.step_holds

        async def open_step(step_req: Request, n: int) -> AsyncIterator[StreamEvent]:
            if holds is None:
                return flatten(await inner.stream(turn, step_req))
            hold = await holds.hold(step_req)
            try:
                batches = await inner.stream(turn, step_req)
            except BaseException:
                await holds.release(hold)
                raise
            return _held(turn, flatten(batches), holds, hold)

        async def finish(final: Response | None, error: TurnstileError | None, status: int) -> None:
            step = turn.outcome  # how the last step's stream ended (its producer's outcome)
            if error is None and status != 200 and step is not None and step.error is not None:
                error = step.error  # the step's stream ended with an error event
                if final is None and isinstance(error, TurnCutByShutdown):
                    final = Response(  # cut: aborted, with the usage of the steps so far
                        id="aborted",
                        model=request.model,
                        message=AssistantMessage(),
                        stop_reason="aborted",
                        usage=loop.usage,
                    )
            # a step cut while it streamed: what it delivered (priced) is not in loop.usage
            cut = step.response if step is not None and step.response is not None else None
            spent = loop.usage
            if cut is not None and cut.stop_reason == "aborted":
                spent = accounting.merge_usage(spent, cut.usage)
                if final is not None and final.stop_reason == "aborted":
                    final = final.model_copy(update={"usage": spent})
            if final is None and spent != Usage():
                turn.spent = spent  # failed after steps answered: what they cost
            turn.outcome = StreamOutcome(final, error, status)

        first = await open_step(loop.step_request(request, request.messages, 1), 1)
        return _one_by_one(run_stream(loop, request, first, open_step, finish))


async def _one_by_one(events: AsyncIterator[Out]) -> Batches:
    async for ev in events:
        yield [ev]


async def _held(
    turn: Turn, events: AsyncIterator[StreamEvent], holds: Any, hold: Any
) -> AsyncIterator[StreamEvent]:
    """A held step's events (``holds``: :class:`gateway.limits.holds.StepHolds`); when they
    end, however they end, its ``hold`` is settled with what the step's producer left in
    ``turn.outcome`` (its answer, or the part delivered, priced) or released (no answer)."""
    try:
        async for ev in events:
            yield ev
    finally:
        close = getattr(events, "aclose", None)
        if close is not None:
            await close()  # the producer records how the step's stream ended
        outcome = turn.outcome
        if outcome is not None and outcome.response is not None:
            await holds.settle(hold, outcome.response.usage.cost_usd)
        else:
            await holds.release(hold)
