"""Attempt layer (innermost): one call of ``turn.deployment``'s provider.

Whole answers: the provider's answer through the truncation guard
(:func:`gateway.invariants.check_truncation`: tool calls cut off by the output limit are
withheld; with ``guards.truncation: retry`` the request is sent once more with a larger
limit), its usage completed (estimated when the upstream reported none) and priced, the
attempt noted on the turn. Streams: the provider's stream is opened and returned once its
first batch arrived (a failure before that is raised, so the route layer can fall back);
after that every batch goes through the stream truncation guard (tool calls held until the
stop reason is known), the final usage is priced, every event is kept, and failures end the
stream with a ``StreamError`` event. How it ended goes in ``turn.outcome``.

With tracing on (``turn.trace``) every provider call is one CLIENT span under the turn's span,
named in the upstream request's ``traceparent`` header, ended when the answer is in (a
stream's: when the stream ends) with the answer's usage and finish reason, or the error.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import structlog

from gateway import accounting, invariants, shutdown
from gateway.config import Deployment, GuardPolicy
from gateway.errors import TurnstileError, UpstreamError, UpstreamTooLarge
from gateway.schema import (
    MessageEnd,
    MessageStart,
    PartDelta,
    Request,
    Response,
    StreamError,
    StreamEvent,
    Usage,
    WithheldToolCall,
    evolve,
)
from gateway.turn import KEEPALIVE, Batches, Gateway, StreamOutcome, Turn

log = structlog.get_logger("turnstile.pipeline")


class AttemptLayer:
    """Calls the provider of ``turn.deployment``."""

    def __init__(self, gw: Gateway) -> None:
        self.gw = gw
        self.policy: GuardPolicy = gw.config.guards

    def priced(self, usage: Usage, dep: Deployment, request: Request, resp: Response | None) -> Usage:
        """``usage`` with its cost (USD, the deployment's prices); when the upstream reported
        no tokens at all, estimated ones (input: the request counted for the model, never
        waiting on the event loop; output: a quarter of the answer's characters)."""
        if usage.input_tokens == 0 and usage.output_tokens == 0 and usage.total_input_tokens == 0:
            from gateway.providers.catalog import count_tokens

            out_text = ""
            if resp is not None:
                out_text = resp.message.text + "".join(t.raw_arguments for t in resp.message.tool_calls)
            usage = Usage(
                input_tokens=count_tokens(request, dep.model, wait=False),  # never blocks the loop
                output_tokens=max(0, len(out_text) // 4),
                estimated=True,
            )
        return accounting.priced(usage, self.gw.table.prices.get(dep.name) or dep.price or _no_price())

    def priced_partial(self, partial: Response | None, dep: Deployment, request: Request) -> Response | None:
        """What a stream cut short delivered (``partial``, stop reason ``aborted``) with its
        usage completed and priced, so that its transcript row and the limits' settle charge
        the same known amount: input tokens as the upstream reported them at the start, else
        the request counted for the model; output tokens as reported, or a quarter of the
        delivered characters (text, thinking, tool-call arguments) when that is more; marked
        ``estimated`` when either was counted here. What the upstream billed after the cut
        (it stops generating once the gateway closes the connection) is not known."""
        if partial is None:
            return None
        from gateway.providers.catalog import count_tokens

        u = partial.usage
        chars = sum(len(getattr(p, "text", "") or "") for p in partial.message.content)
        chars += sum(len(t.raw_arguments) for t in partial.message.tool_calls)
        estimated = u.estimated
        input_tokens = u.input_tokens
        if u.total_input_tokens == 0:
            input_tokens, estimated = count_tokens(request, dep.model, wait=False), True
        output_tokens = u.output_tokens
        if -(-chars // 4) > output_tokens:
            output_tokens, estimated = -(-chars // 4), True
        usage = u.model_copy(
            update={"input_tokens": input_tokens, "output_tokens": output_tokens, "estimated": estimated}
        )
        price = self.gw.table.prices.get(dep.name) or dep.price or _no_price()
        return evolve(partial, usage=accounting.priced(usage, price))

    async def complete(self, turn: Turn, request: Request) -> Response:
        """The deployment's whole answer, truncation-guarded and priced. Raises
        :class:`UpstreamError` subclasses."""
        dep = turn.deployment
        assert dep is not None, "the route layer sets the deployment"
        t0 = time.perf_counter()
        provider = self.gw.providers[dep.api]
        span = turn.trace.attempt(turn, dep, request) if turn.trace is not None else None
        try:
            raw = await provider.complete(request, dep, self.gw.table.keys.get(dep.name))
        except BaseException as exc:
            if span is not None:
                span.sent()
                span.end(None, exc)
            raise
        resp = invariants.check_truncation(raw, provider.output_budget(request, dep), deployment=dep.name)
        self.gw.signers.remember(resp)
        self.gw.thinking.remember(resp)
        if self.gw.fleet is not None:  # shared before the answer goes up (the next turn may land elsewhere)
            await self.gw.fleet.remembered()
        usage = self.priced(resp.usage, dep, request, resp)
        if span is not None:
            span.sent()
            span.end(evolve(resp, usage=usage))
        turn.attempts.append(
            {
                "deployment": dep.name,
                "status": 200,
                "ms": round((time.perf_counter() - t0) * 1000, 3),
                "cost_usd": usage.cost_usd,
            }
        )
        if (
            resp.withheld_tool_calls
            and self.policy.truncation == "retry"
            and not request.metadata.get("_turnstile_retried")
        ):
            budget = request.max_output_tokens or dep.max_output_tokens or 4096
            bigger = request.model_copy(
                update={
                    "max_output_tokens": int(budget * self.policy.retry_output_factor),
                    "metadata": {**request.metadata, "_turnstile_retried": True},
                }
            )
            log.info(
                "truncation_retry",
                request_id=turn.request_id,
                deployment=dep.name,
                budget=bigger.max_output_tokens,
            )
            again = await self.complete(turn, bigger)
            total = accounting.merge_usage(usage, again.usage)
            return again.model_copy(update={"usage": total})
        if resp.withheld_tool_calls:
            _log_withheld(turn, dep, resp.withheld_tool_calls)
        return evolve(resp, usage=usage)

    async def stream(self, turn: Turn, request: Request) -> Batches:
        """The deployment's stream, once its first non-empty batch arrived. Raises
        :class:`UpstreamError` (a stream closed before any data: status 502) before that."""
        dep = turn.deployment
        assert dep is not None, "the route layer sets the deployment"
        source = self.gw.providers[dep.api].stream_batches(request, dep, self.gw.table.keys.get(dep.name))
        span = turn.trace.attempt(turn, dep, request) if turn.trace is not None else None
        try:
            first = await anext(source)
            while not first:
                first = await anext(source)
        except StopAsyncIteration:
            err = UpstreamError(
                f"deployment {dep.name!r} closed the stream without data", deployment=dep.name
            )
            if span is not None:
                span.sent()
                span.end(None, err)
            raise err from None
        except BaseException as exc:
            if span is not None:
                span.sent()
                span.end(None, exc)
            raise
        if span is not None:
            span.sent()
        return self._relay(turn, request, dep, first, source, span)

    async def _relay(
        self,
        turn: Turn,
        request: Request,
        dep: Deployment,
        first: list[StreamEvent],
        source: Any,
        span: Any = None,
    ) -> Batches:
        """The client's stream of one upstream stream: each upstream batch through the
        truncation guard (tool calls held until the stop reason is known), the final usage
        priced, every event kept; yields the non-empty batches of events to forward, and an empty
        one (:data:`gateway.turn.KEEPALIVE`) every ``server.stream_keepalive_s`` while tool
        calls are held with nothing else to hand on. The very first event goes on alone (time
        to first byte). Failures end the stream with a
        ``StreamError`` event, and so does the gateway's shutdown bound
        (:mod:`gateway.shutdown`); ``turn.outcome`` says how it ended, however it ends (status
        499 when the client went away first, 503 when the shutdown bound cut it: both with
        what was delivered, stop reason ``aborted``)."""
        budget = self.gw.providers[dep.api].output_budget(request, dep)
        guard = invariants.StreamTruncationGuard(budget, deployment=dep.name)
        feed = guard.feed
        held = guard.held_parts
        collected: list[StreamEvent] = []
        error: TurnstileError | None = None
        cut: TurnstileError | None = None  # set when the server cut the stream (shutdown)
        final: Response | None = None
        status = 200
        unsent: list[StreamEvent] = []  # guarded events not yet handed on (nor collected)
        keepalive = self.gw.config.server.stream_keepalive_s
        quiet: float | None = None  # since when tool calls were held with nothing handed on
        try:
            pending = first[:1]
            rest: list[StreamEvent] | None = first[1:]
            while True:
                for ev in pending:
                    if type(ev) is PartDelta and ev.index not in held:  # text: passes the guard as is
                        unsent.append(ev)
                        continue
                    for out in feed(ev):
                        if isinstance(out, MessageEnd):
                            usage = self.priced(out.usage, dep, request, None)
                            out = out.model_copy(update={"usage": usage})
                            if out.withheld_tool_calls:
                                _log_withheld(turn, dep, out.withheld_tool_calls)
                        elif isinstance(out, StreamError):
                            status = out.status
                        unsent.append(out)
                if unsent:
                    batch, unsent = unsent, []
                    collected += batch
                    quiet = None
                    yield batch  # type: ignore[misc]
                elif guard.holding:  # tool calls held: the client hears nothing meanwhile
                    now = time.monotonic()
                    if quiet is None:
                        quiet = now
                    elif now - quiet >= keepalive:
                        quiet = now
                        yield KEEPALIVE  # type: ignore[misc]
                if rest:
                    pending, rest = rest, None
                    continue
                try:
                    pending = await anext(source)
                except StopAsyncIteration:
                    break
        except TurnstileError as err:
            error = err
            status = err.status
            ev = StreamError(kind=err.kind, message=err.message, status=err.status)
            collected += unsent
            collected.append(ev)
            log.warning("stream_failed", request_id=turn.request_id, deployment=dep.name, error=err.message)
            yield [*unsent, ev]
        except Exception as exc:
            error = TurnstileError(f"internal error: {type(exc).__name__}: {exc}")
            status = 500
            log.exception("stream_internal_error", request_id=turn.request_id, deployment=dep.name)
            ev = StreamError(
                kind=error.kind, message="internal error in the gateway; see its log", status=500
            )
            collected += unsent
            collected.append(ev)
            yield [*unsent, ev]
        except asyncio.CancelledError as exc:
            cut = shutdown.answer_cut(exc)  # the shutdown bound: end with an error event, as above
            if cut is None:
                raise  # the client went away: nobody to tell
            log.warning("turn_cut_by_shutdown", request_id=turn.request_id, deployment=dep.name)
            ev = StreamError(kind=cut.kind, message=cut.message, status=cut.status)
            collected += unsent
            collected.append(ev)
            yield [*unsent, ev]
        finally:
            final = collect_quietly(collected)
            if final is not None:
                self.gw.signers.remember(final)
                self.gw.thinking.remember(final)
            elif cut is not None or (error is None and status == 200):
                # cut by the shutdown bound, or the client went away before the end
                error, status = (cut, cut.status) if cut is not None else (None, 499)
                final = self.priced_partial(collect_partial(collected), dep, request)
            elif isinstance(error, UpstreamTooLarge):
                # what the client got before the cap (stored cut)
                final = self.priced_partial(collect_partial(collected), dep, request)
            turn.outcome = StreamOutcome(final, error, status)
            if span is not None:  # gateway.tracing.AttemptSpan
                span.end(final, error, status)
            if self.gw.fleet is not None and error is None and status == 200:
                await self.gw.fleet.remembered()  # shared before the stream's last bytes go out


def _log_withheld(turn: Turn, dep: Deployment, withheld: list[WithheldToolCall]) -> None:
    log.warning(
        "tool_calls_withheld", request_id=turn.request_id, deployment=dep.name, ids=[w.id for w in withheld]
    )


def _no_price() -> Any:
    from gateway.config import Price

    return Price()


def collect_partial(events: list[StreamEvent]) -> Response | None:
    """What a stream delivered before the client went away, closed as ``aborted`` with the
    last usage known (so tokens already spent are still counted)."""
    if not any(isinstance(e, MessageStart) for e in events):
        return None
    start = next(e for e in events if isinstance(e, MessageStart))
    usage = start.usage or Usage()
    try:
        return invariants.collect(
            [e for e in events if not isinstance(e, StreamError)]
            + [MessageEnd(stop_reason="aborted", usage=usage)]
        )
    except TurnstileError:
        return None


def collect_quietly(events: list[StreamEvent]) -> Response | None:
    """The Response carried by a finished event list, or None if it never reached its end."""
    kinds = set(map(type, events))  # one pass in C; isinstance(e, C) == issubclass(type(e), C)
    if not any(issubclass(k, MessageEnd) for k in kinds):
        return None
    if not any(issubclass(k, MessageStart) for k in kinds):
        events = [MessageStart(id="unknown", model="unknown"), *events]
    if any(issubclass(k, StreamError) for k in kinds):
        events = [e for e in events if not isinstance(e, StreamError)]
    return invariants.collect(events)
