"""One turn through the turnstile.

``schema.Request`` (already parsed by an edge) -> guards (pairing, ordering) -> candidate
deployments (primary, then fallbacks) -> per-target thinking policy and capability checks ->
provider call -> truncation guard -> accounting -> transcript -> ``schema.Response`` or a
stream of ``schema`` events for the edge to render.

Fallback: a retryable upstream failure (429, 408/409, 5xx, timeout, connection error) before
the first byte of an answer moves on to the next deployment; nothing is retried after the
first event of a stream has been handed to the client. Every repair, rejection and fallback
is logged with the request id and stored with the turn.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import structlog

from gateway import accounting, invariants, route_step, shutdown, signers, tool_loop
from gateway.config import Deployment, GatewayConfig
from gateway.deployments import DeploymentTable, provenance_of
from gateway.errors import (
    CapabilityError,
    GuardViolation,
    TurnCutByShutdown,
    TurnstileError,
    UpstreamError,
    UpstreamTooLarge,
)
from gateway.http_headers import header_list, header_value
from gateway.providers.base import Provider
from gateway.schema import (
    AssistantMessage,
    ImagePart,
    MessageEnd,
    MessageStart,
    PartDelta,
    Request,
    Response,
    StreamError,
    StreamEvent,
    SystemMessage,
    ToolProgress,
    ToolResultMessage,
    Usage,
    UserMessage,
    evolve,
)
from gateway.sessions import turns as session_turns
from gateway.signers import SignerMemory
from gateway.transcript import TranscriptWriter, TurnRecord
from gateway.validation import validate_request
from mcp_servers.clients import EVERYTHING, Visibility

log = structlog.get_logger("turnstile.pipeline")

LARGE_REQUEST_MESSAGES = 2_000
"""Conversations longer than this (messages) are guarded in a worker thread."""


@dataclass
class Gateway:
    """Shared state of one gateway process (lives on ``app.state.gateway``)."""

    config: GatewayConfig
    table: DeploymentTable
    providers: dict[str, Provider]
    transcript: TranscriptWriter | None = None
    signers: SignerMemory = field(default_factory=SignerMemory)
    sessions: Any = None  # gateway.sessions.SessionStore, opened in the server lifespan
    routing: Any = None  # routers.engine.RoutingEngine (health, routers), made with the Pipeline
    mcp: Any = None  # mcp_servers.http_api.McpRuntime (registry, endpoint) for the tool loop


@dataclass
class TurnContext:
    """What is known about a turn while it runs; becomes its transcript row."""

    request_id: str
    dialect: str
    request: Request
    started: float = field(default_factory=time.perf_counter)
    wall: float = field(default_factory=time.time)
    deployment: Deployment | None = None
    repairs: list[dict[str, Any]] = field(default_factory=list)
    attempts: list[dict[str, Any]] = field(default_factory=list)
    guard_outcome: str = "ok"
    session_id: str | None = None  # set by the server from x-turnstile-session / metadata / user
    route: dict[str, Any] | None = None  # the routing decision (gateway.route_step.route)
    mcp_visibility: Visibility = EVERYTHING  # the caller's MCP tools (set by the server from its key)
    loop_tools: frozenset[str] | None = None  # the tool loop's MCP tools (gateway.tool_loop.offer)

    def headers(self) -> dict[str, str]:
        """Response headers known before the answer: request id and serving deployment (values
        made safe by :func:`gateway.http_headers.header_value`)."""
        h = {"x-turnstile-request-id": self.request_id}
        if self.deployment is not None:
            h["x-turnstile-deployment"] = header_value(self.deployment.name)
        if self.route is not None:
            h["x-turnstile-route"] = header_value(self.route["header"])
        return h


@dataclass
class TurnResult:
    """A finished non-streaming turn."""

    response: Response
    headers: dict[str, str]


StreamItem = StreamEvent | ToolProgress
"""What a streaming turn yields (``ToolProgress``: the server-side tool loop only)."""


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
            self._events = _flatten(self._batches)
        return self._events

    @property
    def batches(self) -> AsyncIterator[Sequence[StreamItem]]:
        """The events as non-empty lists, each handed on the moment it is complete."""
        if self._batches is None:
            self._batches = _singletons(self.events)
        return self._batches


async def _prepend(batch: list[Any], batches: AsyncIterator[list[Any]]) -> AsyncIterator[list[Any]]:
    """``batch`` (when not empty), then the batches of ``batches``."""
    if batch:
        yield batch
    async for b in batches:
        yield b


async def _flatten(batches: AsyncIterator[Sequence[Any]]) -> AsyncIterator[Any]:
    """The items of ``batches``, one at a time."""
    async for batch in batches:
        for item in batch:
            yield item


async def _singletons(items: AsyncIterator[Any]) -> AsyncIterator[list[Any]]:
    """Each item of ``items`` as a list of one."""
    async for item in items:
        yield [item]


def _as_dict(obj: Any) -> dict[str, Any]:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return dataclasses.asdict(obj)
    if hasattr(obj, "model_dump"):
        return dict(obj.model_dump(mode="json"))
    return dict(obj) if isinstance(obj, dict) else {"value": str(obj)}


def _check_capabilities(request: Request, dep: Deployment) -> None:
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


class Pipeline:
    """Runs turns for a :class:`Gateway`."""

    def __init__(self, gw: Gateway) -> None:
        self.gw = gw
        self.policy = gw.config.guards
        route_step.engine(gw)

    # ------------------------------------------------------------------ preparation

    async def _guard_off_loop(self, ctx: TurnContext) -> tuple[Request, list[Deployment]]:
        """:meth:`_guard` in a worker thread for long conversations, so one huge request does
        not stall every other request on the event loop. The tool loop's MCP tools are
        attached first, on the event loop (the registry is not shared with threads)."""
        offered = tool_loop.offer(self.gw, ctx)
        if len(ctx.request.messages) > LARGE_REQUEST_MESSAGES:
            return await asyncio.to_thread(self._guard, ctx, offered)
        return self._guard(ctx, offered)

    def _guard(self, ctx: TurnContext, request: Request) -> tuple[Request, list[Deployment]]:
        """Validation, pairing and ordering over ``request`` (``ctx.request`` with the tool
        loop's MCP tools attached: :func:`gateway.tool_loop.offer`), then routing."""
        candidates = self.gw.table.candidates(ctx.request.model)
        validate_request(request)
        try:
            outcome = invariants.check_request(request, self.policy)
        except GuardViolation as err:
            ctx.guard_outcome = "rejected"
            log.warning(
                "guard_rejected", request_id=ctx.request_id, problems=[p.message for p in err.problems]
            )
            raise
        if outcome.repairs:
            ctx.guard_outcome = "repaired"
            ctx.repairs.extend(_as_dict(r) for r in outcome.repairs)
            log.info("guard_repaired", request_id=ctx.request_id, repairs=ctx.repairs)
        request = signers.resolve(outcome.request, candidates, self.gw.signers)
        return request, route_step.route(self.gw, ctx, request, candidates)

    def _for_target(self, ctx: TurnContext, request: Request, dep: Deployment) -> Request:
        _check_capabilities(request, dep)
        if request.max_output_tokens is None and dep.max_output_tokens is not None:
            request = request.model_copy(update={"max_output_tokens": dep.max_output_tokens})
        prepared, repairs = invariants.apply_thinking_policy(request, provenance_of(dep), self.policy)
        if repairs:
            ctx.repairs.extend(_as_dict(r) for r in repairs)
            log.info(
                "thinking_policy_applied",
                request_id=ctx.request_id,
                deployment=dep.name,
                repairs=len(repairs),
            )
        return prepared

    def _provider(self, dep: Deployment) -> Provider:
        return self.gw.providers[dep.api]

    def _finish_usage(self, usage: Usage, dep: Deployment, request: Request, resp: Response | None) -> Usage:
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

    # ------------------------------------------------------------------ non-streaming

    async def complete(self, ctx: TurnContext) -> TurnResult:
        """Run a non-streaming turn. Raises :class:`TurnstileError` subclasses; every outcome,
        success or not, is appended to the transcript."""
        response: Response | None = None
        error: TurnstileError | None = None
        try:
            offered = tool_loop.offer(self.gw, ctx)
            if len(ctx.request.messages) > LARGE_REQUEST_MESSAGES:
                request, candidates = await asyncio.to_thread(self._guard, ctx, offered)
            else:  # no coroutine for the common case
                request, candidates = self._guard(ctx, offered)
            if ctx.session_id:  # the session hooks are no-ops for an unbound turn
                await session_turns.prepare_turn(self.gw, ctx, request)
            if ctx.loop_tools is not None:
                response = await tool_loop.complete(self, ctx, request, candidates)
            else:
                response = await self._complete_with_fallback(ctx, request, candidates)
            return TurnResult(response=response, headers=self._final_headers(ctx, response))
        except TurnstileError as err:
            error = err
            raise
        except Exception as exc:
            error = TurnstileError(f"internal error: {type(exc).__name__}: {exc}")
            raise
        except asyncio.CancelledError:  # no client watch on whole answers: the server cut it
            error = TurnCutByShutdown()
            raise
        finally:
            await self._record(ctx, response, error)

    async def _complete_with_fallback(
        self, ctx: TurnContext, request: Request, candidates: list[Deployment]
    ) -> Response:
        last: UpstreamError | None = None
        rejected: Response | None = None  # cascade: the last answer that failed validation
        for n, dep in enumerate(candidates):
            if not route_step.may_attempt(self.gw, ctx, dep, n):
                continue
            ctx.deployment = dep
            target_req = self._for_target(ctx, request, dep)
            if ctx.session_id:
                target_req = await session_turns.target_request(self.gw, ctx, target_req, dep)
            t0 = time.perf_counter()
            try:
                resp = await self._call_once(ctx, target_req, dep)
            except UpstreamError as err:
                self._note_attempt(ctx, dep, err)
                retry_req = await session_turns.compact_after_overflow(self.gw, ctx, target_req, dep, err)
                if retry_req is not None:
                    return await self._call_once(ctx, retry_req, dep)
                if not route_step.failed(self.gw, ctx, dep, err):
                    raise
                last = err
                continue
            route_step.succeeded(self.gw, dep, (time.perf_counter() - t0) * 1000)
            if rejected is not None:  # the cascade's wasted attempts are paid for too
                resp = resp.model_copy(update={"usage": accounting.merge_usage(rejected.usage, resp.usage)})
            if route_step.escalation(ctx, target_req, resp, n, len(candidates)) is not None:
                rejected = resp
                continue
            return resp
        if rejected is not None:
            return rejected
        if last is None:
            raise UpstreamError(
                "no deployment could be tried for this turn (retry budget exhausted)", status=503
            )
        raise last

    async def _call_once(self, ctx: TurnContext, request: Request, dep: Deployment) -> Response:
        t0 = time.perf_counter()
        provider = self._provider(dep)
        raw = await provider.complete(request, dep, self.gw.table.keys.get(dep.name))
        resp = invariants.check_truncation(raw, provider.output_budget(request, dep))
        self.gw.signers.remember(resp)
        usage = self._finish_usage(resp.usage, dep, request, resp)
        ctx.attempts.append(
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
                request_id=ctx.request_id,
                deployment=dep.name,
                budget=bigger.max_output_tokens,
            )
            again = await self._call_once(ctx, bigger, dep)
            total = accounting.merge_usage(usage, again.usage)
            return again.model_copy(update={"usage": total})
        if resp.withheld_tool_calls:
            log.warning(
                "tool_calls_withheld",
                request_id=ctx.request_id,
                deployment=dep.name,
                ids=[w.id for w in resp.withheld_tool_calls],
            )
        return evolve(resp, usage=usage)

    # ------------------------------------------------------------------ streaming

    async def open_stream(self, ctx: TurnContext) -> StreamingTurn:
        """Start a streaming turn. Falls back across deployments until one yields its first
        event; after that, failures end the stream with a ``StreamError`` event. Raises
        :class:`TurnstileError` when no deployment could start."""
        try:
            request, candidates = await self._guard_off_loop(ctx)
            await session_turns.prepare_turn(self.gw, ctx, request)
            if ctx.loop_tools is not None:
                from gateway import tool_loop_stream

                return await tool_loop_stream.open_stream(self, ctx, request, candidates)
            target_req, dep, first, source = await self._start_stream_batches(ctx, request, candidates)
        except TurnstileError as err:
            await self._record(ctx, None, err, stream=True)
            raise
        except asyncio.CancelledError:  # before the first byte no client watch runs: the server cut it
            await self._record(ctx, None, TurnCutByShutdown(), stream=True)
            raise
        except Exception as exc:  # the gateway's bug: still one row (the server answers a 500 and logs it)
            await self._record(
                ctx, None, TurnstileError(f"internal error: {type(exc).__name__}: {exc}"), stream=True
            )
            raise
        return StreamingTurn(batches=self._relay(ctx, target_req, dep, first, source), headers=ctx.headers())

    async def _start_stream(
        self, ctx: TurnContext, request: Request, candidates: list[Deployment]
    ) -> tuple[Request, Deployment, StreamEvent, AsyncIterator[StreamEvent]]:
        """Open an upstream stream with fallback: ``(target request, deployment, first event,
        the rest)``. Raises :class:`TurnstileError` when no deployment could start (nothing is
        recorded here)."""
        target_req, dep, first, batches = await self._start_stream_batches(ctx, request, candidates)
        return target_req, dep, first[0], _flatten(_prepend(first[1:], batches))

    async def _start_stream_batches(
        self, ctx: TurnContext, request: Request, candidates: list[Deployment]
    ) -> tuple[Request, Deployment, list[StreamEvent], AsyncIterator[list[StreamEvent]]]:
        """:meth:`_start_stream` in batches (:meth:`Provider.stream_batches`): ``(target
        request, deployment, first batch (non-empty), the rest)``."""
        last: UpstreamError | None = None
        for n, dep in enumerate(candidates):
            if not route_step.may_attempt(self.gw, ctx, dep, n):
                continue
            ctx.deployment = dep
            t0 = time.perf_counter()
            try:
                target_req = self._for_target(ctx, request, dep)
                target_req = await session_turns.target_request(self.gw, ctx, target_req, dep)
                source = self._provider(dep).stream_batches(target_req, dep, self.gw.table.keys.get(dep.name))
                first = await anext(source)
                while not first:
                    first = await anext(source)
                route_step.succeeded(self.gw, dep, (time.perf_counter() - t0) * 1000)
            except UpstreamError as err:
                self._note_attempt(ctx, dep, err)
                if not route_step.failed(self.gw, ctx, dep, err):
                    raise
                last = err
                continue
            except StopAsyncIteration:
                empty = UpstreamError(
                    f"deployment {dep.name!r} closed the stream without data", deployment=dep.name
                )
                self._note_attempt(ctx, dep, empty)
                last = empty
                continue
            return target_req, dep, first, source
        if last is None:
            last = UpstreamError(
                "no deployment could be tried for this turn (retry budget exhausted)", status=503
            )
        raise last

    async def _relay(
        self,
        ctx: TurnContext,
        request: Request,
        dep: Deployment,
        first: list[StreamEvent],
        source: AsyncIterator[list[StreamEvent]],
    ) -> AsyncIterator[list[StreamEvent]]:
        """The client's stream of one upstream stream: each upstream batch through the
        truncation guard (tool calls held until the stop reason is known), the final usage
        priced, every event kept for the transcript; yields the non-empty batches of events
        to forward. The very first event goes on alone (time to first byte). Failures end
        the stream with a ``StreamError`` event, and so does the gateway's shutdown bound
        (:mod:`gateway.shutdown`); the turn is recorded when the stream ends, however it ends
        (status 499 when the client went away first, 503 when the shutdown bound cut it: both
        with what was delivered, stop reason ``aborted``)."""
        guard = invariants.StreamTruncationGuard(self._provider(dep).output_budget(request, dep))
        feed = guard.feed
        held = guard.held_parts
        collected: list[StreamEvent] = []
        error: TurnstileError | None = None
        cut: TurnstileError | None = None  # set when the server cut the stream (shutdown)
        final: Response | None = None
        status = 200
        unsent: list[StreamEvent] = []  # guarded events not yet handed on (nor collected)
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
                            usage = self._finish_usage(out.usage, dep, request, None)
                            out = out.model_copy(update={"usage": usage})
                            if out.withheld_tool_calls:
                                log.warning(
                                    "tool_calls_withheld",
                                    request_id=ctx.request_id,
                                    deployment=dep.name,
                                    ids=[w.id for w in out.withheld_tool_calls],
                                )
                        elif isinstance(out, StreamError):
                            status = out.status
                        unsent.append(out)
                if unsent:
                    batch, unsent = unsent, []
                    collected += batch
                    yield batch
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
            log.warning("stream_failed", request_id=ctx.request_id, deployment=dep.name, error=err.message)
            yield [*unsent, ev]
        except Exception as exc:
            error = TurnstileError(f"internal error: {type(exc).__name__}: {exc}")
            status = 500
            log.exception("stream_internal_error", request_id=ctx.request_id, deployment=dep.name)
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
            log.warning("turn_cut_by_shutdown", request_id=ctx.request_id, deployment=dep.name)
            ev = StreamError(kind=cut.kind, message=cut.message, status=cut.status)
            collected += unsent
            collected.append(ev)
            yield [*unsent, ev]
        finally:
            final = _collect_quietly(collected)
            if final is not None:
                self.gw.signers.remember(final)
            elif cut is not None or (error is None and status == 200):
                # cut by the shutdown bound, or the client went away before the end
                error, status = (cut, cut.status) if cut is not None else (None, 499)
                final = _collect_partial(collected)
            elif isinstance(error, UpstreamTooLarge):
                final = _collect_partial(collected)  # what the client got before the cap (stored cut)
            await self._record(ctx, final, error, stream=True, status=status)

    # ------------------------------------------------------------------ bookkeeping

    async def record_refused(self, request_id: str, dialect: str, error: TurnstileError) -> None:
        """One transcript row for a request refused before it became a turn (malformed body,
        a missing field, a body over the size limit, a bad session id): status and error, no
        request (it could not be read). Returns once the row is committed (bounded, as every
        turn's row: the error answer is released after it)."""
        if self.gw.transcript is None:
            return
        await self.gw.transcript.commit(
            TurnRecord(
                request_id=request_id,
                ts=time.time(),
                client_dialect=dialect,
                requested_model=None,
                stream=False,
                status=error.status,
                guard_outcome="invalid_request",
                error=error.message,
            )
        )

    def _note_attempt(self, ctx: TurnContext, dep: Deployment, err: UpstreamError) -> None:
        ctx.attempts.append({"deployment": dep.name, "status": err.status, "error": err.message})
        log.warning(
            "upstream_failed",
            request_id=ctx.request_id,
            deployment=dep.name,
            status=err.status,
            retryable=err.retryable,
            retry_after_s=err.retry_after_s,
            error=err.message,
        )

    def _final_headers(self, ctx: TurnContext, resp: Response) -> dict[str, str]:
        h = ctx.headers()
        if resp.usage.cost_usd is not None:
            h["x-turnstile-cost-usd"] = f"{resp.usage.cost_usd:.9f}"
        if resp.withheld_tool_calls:
            h["x-turnstile-withheld-tool-calls"] = header_list(w.id for w in resp.withheld_tool_calls)
        if ctx.repairs:
            h["x-turnstile-repairs"] = str(len(ctx.repairs))
        return h

    async def _record(
        self,
        ctx: TurnContext,
        resp: Response | None,
        error: TurnstileError | None,
        *,
        stream: bool = False,
        status: int | None = None,
    ) -> None:
        if ctx.session_id:
            await session_turns.finish_turn(self.gw, ctx, resp)
        if self.gw.transcript is None:
            return
        usage = resp.usage if resp is not None else Usage()
        record = TurnRecord(
            request_id=ctx.request_id,
            ts=ctx.wall,
            client_dialect=ctx.dialect,
            requested_model=ctx.request.model,
            stream=stream,
            status=status if status is not None else (error.status if error is not None else 200),
            deployment=ctx.deployment.name if ctx.deployment else None,
            api=ctx.deployment.api if ctx.deployment else None,
            stop_reason=resp.stop_reason if resp is not None else None,
            usage=usage,  # models, dumped by the transcript writer thread (off the request path)
            cost_usd=usage.cost_usd,
            latency_ms=round((time.perf_counter() - ctx.started) * 1000, 3),
            guard_outcome=ctx.guard_outcome,
            repairs=ctx.repairs,
            withheld=list(resp.withheld_tool_calls) if resp is not None else [],
            attempts=ctx.attempts,
            error=error.message if error is not None else None,
            request=turn_part(ctx.request),
            response=resp,
        )
        # Committed before the answer is released (the caller sends it after this returns): a
        # turn a client received is on disk even after kill -9. Bounded: see TranscriptWriter.
        transcript = self.gw.transcript
        committed = transcript.try_commit(record)
        await (committed if committed is not None else transcript.commit(record))


HISTORY_OMITTED_KEY = "turnstile.history_omitted"
"""Metadata key, in a stored request, of how many earlier messages were left out."""


def turn_part(request: Request) -> Request:
    """The part of ``request`` that is new in this turn, for the transcript: the system
    messages and every message after the last assistant message (the user's new input or the
    tool results it sends back). Storing the whole history on every turn would grow the
    transcript quadratically with conversation length; the earlier messages are already in
    the rows of the earlier turns (and, when a session is bound, once in its log). The count of
    left-out messages is kept under ``metadata[HISTORY_OMITTED_KEY]``."""
    messages = request.messages
    last = -1
    for i in range(len(messages) - 1, -1, -1):
        if type(messages[i]) is AssistantMessage:
            last = i
            break
    if last < 0:
        return request
    kept = [m for m in messages[: last + 1] if type(m) is SystemMessage] + list(messages[last + 1 :])
    omitted = len(messages) - len(kept)
    return request.model_copy(
        update={"messages": kept, "metadata": {**request.metadata, HISTORY_OMITTED_KEY: omitted}}
    )


def _no_price() -> Any:
    from gateway.config import Price

    return Price()


def _collect_partial(events: list[StreamEvent]) -> Response | None:
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


def _collect_quietly(events: list[StreamEvent]) -> Response | None:
    """The Response carried by a finished event list, or None if it never reached its end."""
    kinds = set(map(type, events))  # one pass in C; isinstance(e, C) == issubclass(type(e), C)
    if not any(issubclass(k, MessageEnd) for k in kinds):
        return None
    if not any(issubclass(k, MessageStart) for k in kinds):
        events = [MessageStart(id="unknown", model="unknown"), *events]
    if any(issubclass(k, StreamError) for k in kinds):
        events = [e for e in events if not isinstance(e, StreamError)]
    return invariants.collect(events)


__all__ = ["Gateway", "Pipeline", "StreamingTurn", "TurnContext", "TurnResult"]
