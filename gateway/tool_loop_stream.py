"""The server-side tool loop over streams (rules in :mod:`gateway.tool_loop`).

What the client sees is ONE message: the first step's ``message_start``, then the text and
thinking of every step as it arrives (part indexes renumbered so they stay consecutive), a
:class:`~gateway.schema.ToolProgress` event per finished tool call, in completion order, and
finally the last step's held tool calls (client tools only) and ``message_end`` with the usage
of all steps. Tool-call events of a step are held by the truncation guard until its stop reason
is known; calls the gateway runs are never shown as executable calls. What enters the session
and the transcript is per step, in call order (:meth:`ToolLoop.record`).

An upstream failure after the first step ends the stream with a ``StreamError`` event (nothing
is retried after the first byte reached the client).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable

import structlog

from gateway import invariants, shutdown
from gateway.errors import TurnstileError
from gateway.schema import (
    AssistantMessage,
    Message,
    MessageEnd,
    MessageStart,
    PartDelta,
    PartEnd,
    PartStart,
    Request,
    Response,
    StreamError,
    StreamEvent,
    ToolProgress,
    ToolResultMessage,
)
from gateway.tool_loop import Step, ToolLoop
from gateway.tool_loop_ids import TurnCallIds

log = structlog.get_logger("turnstile.tool_loop")

OpenStep = Callable[[Request, int], Awaitable[AsyncIterator[StreamEvent]]]
"""``(step request, step) -> events`` of one model request, truncation-guarded."""
Finish = Callable[[Response | None, TurnstileError | None, int], Awaitable[None]]
"""``(final response or None, error or None, status)``: records the turn."""

Out = StreamEvent | ToolProgress


class _Renumber:
    """Maps (step, upstream part index) to consecutive client part indexes."""

    def __init__(self) -> None:
        self.next = 0
        self.map: dict[tuple[int, int], int] = {}

    def new(self, step: int, index: int) -> int:
        self.map[(step, index)] = self.next
        self.next += 1
        return self.map[(step, index)]


async def _progress(loop: ToolLoop, step: Step) -> AsyncIterator[ToolProgress | list[ToolResultMessage]]:
    """Yields a :class:`ToolProgress` per finished call (completion order), a keep-alive one
    (``done`` False) after every ``loop.keepalive_s`` seconds in which none finished, then the
    results (call order)."""
    queue: asyncio.Queue[ToolProgress | None] = asyncio.Queue()

    def done(call: object, result: ToolResultMessage) -> None:
        queue.put_nowait(
            ToolProgress(id=result.tool_call_id, name=result.name or "", is_error=result.is_error)
        )

    async def work() -> list[ToolResultMessage]:
        try:
            return await loop.run_tools(step, on_done=done)
        finally:
            queue.put_nowait(None)

    task = asyncio.create_task(work())
    try:
        while True:
            try:
                item = await asyncio.wait_for(queue.get(), loop.keepalive_s)
            except TimeoutError:
                yield ToolProgress(id="", name="", done=False)
                continue
            if item is None:
                break
            yield item
        yield await task
    finally:
        if not task.done():
            task.cancel()


async def run_stream(
    loop: ToolLoop,
    request: Request,
    first: AsyncIterator[StreamEvent],
    open_step: OpenStep,
    finish: Finish,
) -> AsyncIterator[Out]:
    """The client's event stream of a looping turn; ``first`` is step 1's (already opened)."""
    messages: list[Message] = list(request.messages)
    ids = TurnCallIds(messages)
    renumber = _Renumber()
    started = False
    final: Response | None = None
    error: TurnstileError | None = None
    status = 200
    n = 1
    step_req = loop.step_request(request, messages, 1)
    source = first
    try:
        while True:
            events: list[StreamEvent] = []
            upstream_events: list[StreamEvent] = []  # as the upstream sent them (the step's row)
            held: list[StreamEvent] = []
            tool_parts: set[int] = set()
            end: MessageEnd | None = None
            renamed = ids.renamed
            failed = False
            async for up in source:
                if type(up) is ToolProgress:  # a keep-alive from below (tool calls held)
                    yield up
                    continue
                upstream_events.append(up)
                ev = ids.claim_event(up, n)
                events.append(ev)
                if isinstance(ev, MessageStart):
                    if not started:
                        started = True
                        yield ev
                elif isinstance(ev, PartStart):
                    if ev.kind == "tool_call":
                        tool_parts.add(ev.index)
                        held.append(ev)
                    else:
                        yield ev.model_copy(update={"index": renumber.new(n, ev.index)})
                elif isinstance(ev, PartDelta | PartEnd):
                    if ev.index in tool_parts:
                        held.append(ev)
                    else:
                        yield ev.model_copy(update={"index": renumber.map[(n, ev.index)]})
                elif isinstance(ev, MessageEnd):
                    end = ev
                elif isinstance(ev, StreamError):  # the step's producer ended its stream with it
                    status = ev.status
                    failed = True
                    yield ev
            if failed:  # the step's stream was drained, so its producer finished
                return
            if end is None:
                raise TurnstileError(f"tool loop step {n}: the upstream stream ended without its end")
            resp = invariants.collect(events)
            step = loop.plan(resp, n)
            if ids.renamed != renamed:
                resp = invariants.collect(upstream_events)
            if step.kind == "final":
                if loop.record is not None:
                    await loop.record(n, step_req, step.response, [])
                keep = {c.id for c in step.response.message.tool_calls}
                kept_parts = {e.index for e in held if isinstance(e, PartStart) and e.id in keep}
                for ev in held:
                    if isinstance(ev, PartStart | PartDelta | PartEnd) and ev.index in kept_parts:
                        index = (
                            renumber.new(n, ev.index)
                            if isinstance(ev, PartStart)
                            else renumber.map[(n, ev.index)]
                        )
                        yield ev.model_copy(update={"index": index})
                final = loop.final(step)
                yield MessageEnd(
                    stop_reason=final.stop_reason,
                    usage=final.usage,
                    withheld_tool_calls=final.withheld_tool_calls,
                    replaced_call_ids=final.replaced_call_ids,
                )
                return
            results: list[ToolResultMessage] = []
            async for item in _progress(loop, step):
                if isinstance(item, ToolProgress):
                    yield item
                else:
                    results = item
            appended: list[Message] = [step.assistant, *results]
            messages += appended
            if loop.record is not None:
                await loop.record(n, step_req, resp, appended)
            n += 1
            step_req = loop.step_request(request, messages, n)
            source = await open_step(step_req, n)
    except TurnstileError as err:
        error, status = err, err.status
        log.warning("tool_loop_stream_failed", step=n, error=err.message)
        yield StreamError(kind=err.kind, message=err.message, status=err.status)
    except Exception as exc:
        error, status = TurnstileError(f"internal error: {type(exc).__name__}: {exc}"), 500
        log.exception("tool_loop_stream_internal_error", step=n)
        yield StreamError(kind=error.kind, message="internal error in the gateway; see its log", status=500)
    except asyncio.CancelledError as exc:  # the shutdown bound cut the turn, or the client went away
        error = shutdown.answer_cut(exc)
        if error is None:
            raise  # the client went away: nobody to tell
        log.warning("tool_loop_stream_cut_by_shutdown", step=n)
        yield StreamError(kind=error.kind, message=error.message, status=error.status)
    finally:
        if final is None and status == 200:  # the client went away (499), or shutdown cut it
            status = 499 if error is None else error.status
            final = Response(  # aborted, with the usage of the steps so far
                id="aborted",
                model=request.model,
                message=AssistantMessage(),
                stop_reason="aborted",
                usage=loop.usage,
            )
        await finish(final, error, status)
