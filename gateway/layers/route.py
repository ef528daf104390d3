"""Route layer: which deployment serves the turn, and what happens when one fails.

The decision is made once per turn, at its first visit (:func:`route`:
features, fit, policy, stickiness; kept in ``turn.route`` and ``turn.order``; the tool loop's
later steps reuse it). Then ONE fallback loop, for whole answers and streams alike, tries the
deployments in order: before each attempt :func:`may_attempt` (retry budget, windows after a
context overflow), a deployment's quota (the provider's own rate limits: a deployment without
room is skipped, :mod:`gateway.limits.quotas`; when none had room, the quota's 429), then the
layer below for that deployment (``turn.deployment``), then
:func:`succeeded` or :func:`failed` (health, cooldown honouring ``retry-after``, circuit
breaker, latency; whether the next may be tried). A stream
counts as answered at its first batch; nothing is retried after that. Cascade (whole answers
only): an answer that fails its tier's validation goes on to the next tier, and the wasted
attempts are paid for too (:func:`escalation`).

The decision goes in the transcript (first entry of ``attempts``, ``kind: route``) and in the
``x-turnstile-route`` header (``<deployment>; <reason>``). Routing state lives on
``gw.routing`` (a :class:`routers.engine.RoutingEngine` with its
:class:`routers.health.HealthBoard`), made on first use (tests drop it to start afresh).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import structlog

from gateway import accounting
from gateway.config import Deployment
from gateway.errors import CapabilityError, RateLimitExceeded, UpstreamError
from gateway.layers.target_media import check_capabilities
from gateway.limits import quotas
from gateway.schema import Request, Response
from gateway.turn import Batches, Gateway, Service, Turn
from routers.cascade import validate
from routers.engine import RoutingEngine
from routers.health import is_context_overflow

T = TypeVar("T")

LARGE_REQUEST_MESSAGES = 2_000
"""Conversations longer than this (messages) are routed in a worker thread (feature
extraction reads the whole conversation)."""

NO_DEPLOYMENT = "no deployment could be tried for this turn (retry budget exhausted)"


class RouteLayer:
    """Decides the order of the turn's deployments and falls back along it."""

    def __init__(self, gw: Gateway, inner: Service) -> None:
        self.gw = gw
        self.inner = inner
        engine(gw)

    async def _order(self, turn: Turn, request: Request) -> list[Deployment]:
        order = turn.order
        if order is None:
            candidates = turn.candidates or self.gw.table.candidates(turn.request.model)
            if len(request.messages) > LARGE_REQUEST_MESSAGES:
                order = await asyncio.to_thread(route, self.gw, turn, request, candidates)
            else:
                order = route(self.gw, turn, request, candidates)
            turn.order = order
        return order

    async def complete(self, turn: Turn, request: Request) -> Response:
        """The first answer along the order (cascade: the first that passes validation)."""
        order = await self._order(turn, request)
        if turn.route is not None and turn.route.get("cascade"):
            return await self._cascade(turn, request, order)
        return await self._fallback(turn, request, order, self.inner.complete)

    async def stream(self, turn: Turn, request: Request) -> Batches:
        """The first stream along the order that yields its first batch."""
        return await self._fallback(turn, request, await self._order(turn, request), self.inner.stream)

    async def _fallback(
        self,
        turn: Turn,
        request: Request,
        order: list[Deployment],
        attempt: Callable[[Turn, Request], Awaitable[T]],
        start: int = 0,
    ) -> T:
        """The answer of the first deployment of ``order[start:]`` that gives one; raises the
        last retryable failure when none did, the first other failure at once, and a 503
        when the retry budget let none be tried. A deployment that cannot take the request
        (:func:`gateway.layers.target_media.check_capabilities`: tools, images, media, the
        client's same-wire fields) is skipped, never tried; when no deployment could, the first
        such refusal is raised (a 400 naming what it cannot take), unless an upstream failed
        first (that failure is the answer: the request was fine for the model it named)."""
        gw = self.gw
        last: UpstreamError | None = None
        refusal: CapabilityError | None = None
        full: RateLimitExceeded | None = None
        for n in range(start, len(order)):
            dep = order[n]
            if len(order) > 1:
                try:
                    check_capabilities(request, dep)
                except CapabilityError as err:
                    turn.attempts.append(
                        {"deployment": dep.name, "skipped": f"cannot take the request: {err.message}"}
                    )
                    refusal = refusal or err
                    continue
            held = None
            if dep.quota is not None and gw.limits is not None:
                held, no_room = await quota_hold(gw, turn, dep)
                if no_room is not None:
                    full = full or no_room
                    continue
            if not may_attempt(gw, turn, dep, n):
                if held is not None:
                    await quotas.settle(gw.limits, held, None)
                continue
            turn.deployment = dep
            t0 = time.perf_counter()
            try:
                answer = await attempt(turn, request)
            except BaseException as exc:
                if held is not None:
                    await quotas.settle(gw.limits, held, None)
                if not isinstance(exc, UpstreamError):
                    raise
                turn.note_failed_attempt(dep, exc)
                if not failed(gw, turn, dep, exc):
                    raise
                last = exc
                continue
            succeeded(gw, dep, (time.perf_counter() - t0) * 1000)
            turn.tried = n
            if held is not None:
                if isinstance(answer, Response):
                    await quotas.settle(gw.limits, held, answer.usage)
                else:  # a stream: settled with its usage when it ends
                    return _quota_settled(gw, turn, held, answer)  # type: ignore[arg-type, return-value]
            return answer
        if last is not None:
            raise last
        if full is not None:  # every deployment that could take it was at its quota
            raise full
        if refusal is not None:
            raise refusal
        raise UpstreamError(NO_DEPLOYMENT, status=503)

    async def _cascade(self, turn: Turn, request: Request, order: list[Deployment]) -> Response:
        """:meth:`_fallback`, then each answer that must escalate
        (:func:`~gateway.escalation`) goes on along the order; the last one is
        returned when every tier was tried, with the usage of all of them."""
        rejected: Response | None = None
        start = 0
        while True:
            try:
                resp = await self._fallback(turn, request, order, self.inner.complete, start)
            except UpstreamError:
                if rejected is None:
                    raise
                return rejected
            if rejected is not None:  # the cascade's wasted attempts are paid for too
                resp = resp.model_copy(update={"usage": accounting.merge_usage(rejected.usage, resp.usage)})
            n = turn.tried
            if escalation(turn, request, resp, n, len(order)) is None:
                return resp
            rejected, start = resp, n + 1


async def quota_hold(gw: Gateway, turn: Turn, dep: Deployment) -> tuple[Any, RateLimitExceeded | None]:
    """One call on ``dep``'s quota (:mod:`gateway.limits.quotas`): ``(held, None)``, or
    ``(None, refusal)`` when the quota has no room (the attempt is skipped and noted). Raises
    :class:`gateway.errors.LimitsUnavailable` (Redis unreachable, fail closed)."""
    scope = quotas.quota_scope(dep)
    if scope is None:
        return None, None
    try:
        return await quotas.hold(gw.limits, scope), None
    except RateLimitExceeded as err:
        turn.attempts.append({"deployment": dep.name, "skipped": f"quota: {err.message}"})
        log.info(
            "deployment_quota_full", request_id=turn.request_id, deployment=dep.name, limit=err.dimension
        )
        return None, err


async def _quota_settled(gw: Gateway, turn: Turn, held: Any, batches: Batches) -> Batches:
    """``batches``, then the quota call settled with the stream's usage (released when it
    ended without an answer)."""
    try:
        async for batch in batches:
            yield batch
    finally:
        close = getattr(batches, "aclose", None)
        if close is not None:
            await close()
        outcome = turn.outcome
        answer = outcome.response if outcome is not None else None
        await quotas.settle(gw.limits, held, answer.usage if answer is not None else None)


# ---------------------------------------------------------------------------- the decisions


log = structlog.get_logger("turnstile.routing")


def engine(gw: Gateway) -> RoutingEngine:
    """The gateway's routing engine, made on first use (the pipeline is built in the lifespan)."""
    if gw.routing is None:
        gw.routing = RoutingEngine(gw.config)
    return gw.routing


def route(gw: Gateway, turn: Turn, request: Request, candidates: list[Deployment]) -> list[Deployment]:
    """Decide the order of ``candidates`` for this turn and record the decision on ``turn``
    (``turn.route``: the decision's record plus ``header``). Deposits one turn into the retry
    budget."""
    eng = engine(gw)
    eng.health.budget.deposit()
    if len(candidates) == 1 and eng.routing_for(request.model) is None:
        # Nothing to decide: skip feature extraction on the hot path.
        only = candidates[0].name
        record: dict[str, Any] = {
            "kind": "route",
            "route": only,
            "fallbacks": [],
            "reason": "only deployment",
        }
        turn.route = {**record, "header": f"{only}; only deployment"}
        turn.attempts.append(record)
        return candidates
    decision, features = eng.decide(request, candidates, gw.table.prices, stream=request.stream)
    record = {
        "kind": "route",
        **decision.record(),
        "turn_kind": features.kind,
        "est_input_tokens": features.input_tokens,
    }
    turn.route = {**record, "header": decision.header()}
    turn.attempts.append(record)
    if decision.policy != "ordered" or decision.excluded or eng.routing_for(request.model) is not None:
        # Otherwise nothing was decided (alias order, every deployment usable): the decision
        # is in the transcript and the x-turnstile-route header; a line per request would only
        # double the log volume on the hot path.
        log.info("routed", request_id=turn.request_id, deployment=decision.deployment, reason=decision.reason)
    order = decision.order
    if len(order) == len(candidates) and all(d.name == n for d, n in zip(candidates, order, strict=True)):
        return candidates  # alias order: the list as it came
    by_name = {d.name: d for d in candidates}
    return [by_name[n] for n in order if n in by_name]


def may_attempt(gw: Gateway, turn: Turn, dep: Deployment, index: int) -> bool:
    """Whether attempt number ``index`` (0 = first) may go to ``dep``: a fallback onto a
    deployment that is itself failing (:meth:`routers.health.HealthBoard.failing`) spends the
    retry budget, a failover to one that is not failing does not; after a context overflow, a
    deployment whose window is known and not larger than the one that overflowed is skipped.
    Marks the attempt's start for the breaker."""
    eng = engine(gw)
    route_info = turn.route or {}
    floor = route_info.get("overflow_window")
    if index > 0 and floor is not None:
        window = eng.window(dep)
        if window is not None and window <= floor:
            turn.attempts.append({"deployment": dep.name, "skipped": f"window {window} <= {floor}"})
            return False
    if (
        index > 0
        and not route_info.get("escalating")
        and eng.health.failing(dep.name)
        and not eng.health.budget.try_spend()
    ):
        turn.attempts.append({"deployment": dep.name, "skipped": "retry budget exhausted"})
        log.warning("retry_budget_exhausted", request_id=turn.request_id, deployment=dep.name)
        return False
    if route_info:
        route_info.pop("escalating", None)
    eng.health.begin(dep.name)
    return True


def succeeded(gw: Gateway, dep: Deployment, ms: float | None) -> None:
    """``dep`` answered (its first byte, for streams) after ``ms`` milliseconds."""
    engine(gw).health.success(dep.name, ms)


def failed(gw: Gateway, turn: Turn, dep: Deployment, err: UpstreamError) -> bool:
    """Record a failed attempt; True when the next deployment may serve the turn (a
    retryable status — health is charged — or a context overflow, after which only larger
    windows are tried)."""
    eng = engine(gw)
    if is_context_overflow(err.status, err.message):
        window = eng.window(dep)
        route_info = turn.route
        if route_info is not None:
            route_info["overflow_window"] = window or 0
        log.info("context_overflow_fallback", request_id=turn.request_id, deployment=dep.name, window=window)
        return True
    if err.retryable:
        eng.health.failure(dep.name, err.retry_after_s)
        return True
    return False


def escalation(turn: Turn, request: Request, response: Response, index: int, total: int) -> str | None:
    """Cascade: why ``response`` (attempt ``index`` of ``total``) must be escalated to the next
    deployment, or None. Always None outside a cascade decision or on the last candidate."""
    route_info = turn.route or {}
    if not route_info.get("cascade") or index >= total - 1:
        return None
    why = validate(request, response)
    if why is not None:
        route_info["escalating"] = True
        wasted = route_info.setdefault("wasted", [])
        wasted.append({"reason": why, "cost_usd": response.usage.cost_usd})
        turn.attempts.append(
            {"kind": "cascade_escalation", "reason": why, "wasted_cost_usd": response.usage.cost_usd}
        )
        log.info("cascade_escalation", request_id=turn.request_id, reason=why)
    return why
