"""The routing step of a turn, between the guards and the provider call.

Small functions the pipeline calls at fixed points, so that its fallback loop stays short:

* :func:`route` — once per turn: features, fit, policy, stickiness -> the ordered deployments;
  the decision goes in the transcript (first entry of ``attempts``, ``kind: route``) and in
  the ``x-turnstile-route`` header (``<deployment>; <reason>``).
* :func:`may_attempt` — before each attempt: a fallback onto a deployment that is itself
  failing needs a token from the retry budget (a failover to one that is not failing does
  not); after a context overflow only deployments with a larger known window are tried.
* :func:`succeeded` / :func:`failed` — after each attempt: health (cooldown honouring
  ``retry-after``, circuit breaker, latency) and whether the next deployment may be tried
  (retryable status, or a context overflow).
* :func:`escalation` — cascade only: why a successful answer must go to the next tier.

State lives on ``gw.routing`` (a :class:`routers.engine.RoutingEngine` with its
:class:`routers.health.HealthBoard`), made with the pipeline in the server's lifespan.
"""

from __future__ import annotations

from typing import Any

import structlog

from gateway.config import Deployment
from gateway.errors import UpstreamError
from gateway.schema import Request, Response
from routers.cascade import validate
from routers.engine import RoutingEngine
from routers.health import is_context_overflow

log = structlog.get_logger("turnstile.routing")


def engine(gw: Any) -> RoutingEngine:
    """The gateway's routing engine, made on first use (the pipeline is built in the lifespan)."""
    if getattr(gw, "routing", None) is None:
        gw.routing = RoutingEngine(gw.config)
    eng: RoutingEngine = gw.routing
    return eng


def route(gw: Any, ctx: Any, request: Request, candidates: list[Deployment]) -> list[Deployment]:
    """Decide the order of ``candidates`` for this turn and record the decision on ``ctx``
    (``ctx.route``: the decision's record plus ``header``). Deposits one turn into the retry
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
        ctx.route = {**record, "header": f"{only}; only deployment"}
        ctx.attempts.append(record)
        return candidates
    decision, features = eng.decide(request, candidates, gw.table.prices, stream=request.stream)
    record = {
        "kind": "route",
        **decision.record(),
        "turn_kind": features.kind,
        "est_input_tokens": features.input_tokens,
    }
    ctx.route = {**record, "header": decision.header()}
    ctx.attempts.append(record)
    if decision.policy != "ordered" or decision.excluded or eng.routing_for(request.model) is not None:
        # Otherwise nothing was decided (alias order, every deployment usable): the decision
        # is in the transcript and the x-turnstile-route header; a line per request would only
        # double the log volume on the hot path.
        log.info("routed", request_id=ctx.request_id, deployment=decision.deployment, reason=decision.reason)
    order = decision.order
    if len(order) == len(candidates) and all(d.name == n for d, n in zip(candidates, order, strict=True)):
        return candidates  # alias order: the list as it came
    by_name = {d.name: d for d in candidates}
    return [by_name[n] for n in order if n in by_name]


def may_attempt(gw: Any, ctx: Any, dep: Deployment, index: int) -> bool:
    """Whether attempt number ``index`` (0 = first) may go to ``dep``: a fallback onto a
    deployment that is itself failing (:meth:`routers.health.HealthBoard.failing`) spends the
    retry budget, a failover to one that is not failing does not; after a context overflow, a
    deployment whose window is known and not larger than the one that overflowed is skipped.
    Marks the attempt's start for the breaker."""
    eng = engine(gw)
    route_info = getattr(ctx, "route", None) or {}
    floor = route_info.get("overflow_window")
    if index > 0 and floor is not None:
        window = eng.window(dep)
        if window is not None and window <= floor:
            ctx.attempts.append({"deployment": dep.name, "skipped": f"window {window} <= {floor}"})
            return False
    if (
        index > 0
        and not route_info.get("escalating")
        and eng.health.failing(dep.name)
        and not eng.health.budget.try_spend()
    ):
        ctx.attempts.append({"deployment": dep.name, "skipped": "retry budget exhausted"})
        log.warning("retry_budget_exhausted", request_id=ctx.request_id, deployment=dep.name)
        return False
    if route_info:
        route_info.pop("escalating", None)
    eng.health.begin(dep.name)
    return True


def succeeded(gw: Any, dep: Deployment, ms: float | None) -> None:
    """``dep`` answered (its first byte, for streams) after ``ms`` milliseconds."""
    engine(gw).health.success(dep.name, ms)


def failed(gw: Any, ctx: Any, dep: Deployment, err: UpstreamError) -> bool:
    """Record a failed attempt; True when the next deployment may serve the turn (a
    retryable status — health is charged — or a context overflow, after which only larger
    windows are tried)."""
    eng = engine(gw)
    if is_context_overflow(err.status, err.message):
        window = eng.window(dep)
        route_info = getattr(ctx, "route", None)
        if route_info is not None:
            route_info["overflow_window"] = window or 0
        log.info("context_overflow_fallback", request_id=ctx.request_id, deployment=dep.name, window=window)
        return True
    if err.retryable:
        eng.health.failure(dep.name, err.retry_after_s)
        return True
    return False


def escalation(ctx: Any, request: Request, response: Response, index: int, total: int) -> str | None:
    """Cascade: why ``response`` (attempt ``index`` of ``total``) must be escalated to the next
    deployment, or None. Always None outside a cascade decision or on the last candidate."""
    route_info = getattr(ctx, "route", None) or {}
    if not route_info.get("cascade") or index >= total - 1:
        return None
    why = validate(request, response)
    if why is not None:
        route_info["escalating"] = True
        wasted = route_info.setdefault("wasted", [])
        wasted.append({"reason": why, "cost_usd": response.usage.cost_usd})
        ctx.attempts.append(
            {"kind": "cascade_escalation", "reason": why, "wasted_cost_usd": response.usage.cost_usd}
        )
        log.info("cascade_escalation", request_id=ctx.request_id, reason=why)
    return why
