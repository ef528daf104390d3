"""``POST /v1/sessions/{id}/compact``: compact a session now, as the caller whose session it is,
held to its limits and charged for it.

The compaction calls a model (``sessions.compaction_deployment``) once per chunk of the history
it summarises, so it is treated like a turn of the caller's key:

* the session must be the caller's (:func:`gateway.sessions.owners.visible`: 404 otherwise,
  as for a session that does not exist);
* a caller whose key (or team) has limits is admitted once (one request counted, one
  concurrent slot: 429 / 503 as for a turn, counted and audited), and every summary call is
  held on its budgets before it is sent and settled with its priced cost
  (:class:`gateway.limits.holds.StepHolds`): a hard budget is never exceeded;
* the compaction is one transcript row (its request id, the compaction deployment, the summary
  calls' usage and cost, the caller's key and team), so the spend ledger charges its cost to
  the key, exactly as the counters do.

The admin key compacts any session; that row has no key (the admin is not one), and no limit
applies.
"""

from __future__ import annotations

import time
from typing import Any

from starlette.requests import Request

from gateway import accounting
from gateway.config import Deployment
from gateway.context import budget_for
from gateway.errors import InvalidRequest, TurnstileError
from gateway.limits.holds import Admitter, StepHolds, principal_scopes
from gateway.schema import Request as TurnRequest
from gateway.schema import Response, Usage
from gateway.sessions.owners import STATE_PRINCIPAL, request_caller, visible
from gateway.sessions.store import SessionStore
from gateway.transcript import TurnRecord

DIALECT = "sessions"
"""The ``client_dialect`` of a compaction's transcript row."""


def _priced(gw: Any, dep: Deployment, request: TurnRequest, resp: Response) -> Usage:
    """The summary call's usage, priced at ``dep``'s price (counted here, and marked
    estimated, when the upstream reported no tokens)."""
    usage = resp.usage
    if usage.total_input_tokens == 0 and usage.output_tokens == 0:
        from gateway.providers.catalog import count_tokens

        usage = Usage(
            input_tokens=count_tokens(request, dep.model, wait=False),
            output_tokens=max(0, len(resp.message.text) // 4),
            estimated=True,
        )
    return accounting.priced(usage, gw.table.prices.get(dep.name) or dep.price)


async def compact(
    request: Request, store: SessionStore, session_id: str, body: dict[str, Any]
) -> dict[str, Any]:
    """Compact ``session_id`` for the window of ``body["deployment"]`` (default: the compaction
    deployment's own) as the request's caller: ``{"compacted": bool, "entry": entry or
    None}``. Raises :class:`gateway.sessions.store.SessionNotFound` (not the caller's, or
    absent), :class:`InvalidRequest` (no compaction deployment, an unknown deployment), the
    limits' refusals and the summariser's upstream errors."""
    from gateway.compaction import compact as run_compaction

    gw = request.app.state.gateway
    state = request.scope.get("state") or {}
    rid: str = state.get("request_id") or "compact"
    await visible(store, session_id, request_caller(state))
    cfg = gw.config.sessions
    summary_dep = gw.table.deployments.get(cfg.compaction_deployment) if cfg.compaction_deployment else None
    if summary_dep is None:
        raise InvalidRequest(
            "no sessions.compaction_deployment is configured and enabled", param="deployment"
        )
    name = body.get("deployment") or summary_dep.name
    if not isinstance(name, str):
        raise InvalidRequest("deployment must be a string or null", param="deployment")
    dep = gw.table.deployments.get(name)
    if dep is None:
        raise InvalidRequest(f"unknown or disabled deployment {name!r}", param="deployment")
    from gateway.sessions.turns import window_of

    budget = budget_for(
        TurnRequest(model=dep.name, messages=[]),
        window_of(dep) or 128_000,
        reserved_output=dep.max_output_tokens or 4096,
    )
    principal = state.get(STATE_PRINCIPAL)
    scopes = principal_scopes(principal) if gw.limits is not None else []
    admitter = Admitter(gw.limits, gw.metrics, gw.identity, principal, rid)
    holds = StepHolds(admitter, scopes, [summary_dep], session_bound=False) if scopes else None
    reservation = None
    provider = gw.providers[summary_dep.api]
    api_key = gw.table.keys.get(summary_dep.name)
    spent = Usage()
    started, wall = time.perf_counter(), time.time()

    async def summarize(summary_request: TurnRequest) -> str:
        nonlocal spent
        req = summary_request.model_copy(update={"model": summary_dep.model})
        hold = await holds.hold(req) if holds is not None else None
        try:
            resp = await provider.complete(req, summary_dep, api_key)
        except BaseException:
            if holds is not None:
                await holds.release(hold)
            raise
        usage = _priced(gw, summary_dep, req, resp)
        spent = accounting.merge_usage(spent, usage)
        if holds is not None:
            await holds.settle(hold, usage.cost_usd)
        return resp.message.text

    error: TurnstileError | None = None
    before = len(await store.entries(session_id))
    try:
        if scopes:
            reservation = await admitter.admit(scopes, 0.0)  # the request and its slot
        await run_compaction(
            store,
            session_id,
            summarizer=summarize,
            budget=budget,
            summarizer_model=summary_dep.model,
            deployment=summary_dep.name,
            reason="request",
            keep_ratio=cfg.keep_ratio,
            chunk_tokens=cfg.chunk_tokens,
        )
    except TurnstileError as err:
        error = err
        raise
    except Exception as exc:  # the gateway's bug: the row says so, the API answers 500
        error = TurnstileError(f"internal error: {type(exc).__name__}: {exc}")
        raise
    finally:
        if reservation is not None:  # every summary call settled its own hold
            await gw.limits.settle(reservation, 0.0, spent.total_input_tokens + spent.output_tokens)
        await _record(gw, rid, wall, started, summary_dep, spent, principal, error)
    added = (await store.entries(session_id))[before:]
    return {"compacted": bool(added), "entry": added[-1].public() if added else None}


async def _record(
    gw: Any,
    rid: str,
    wall: float,
    started: float,
    dep: Deployment,
    usage: Usage,
    principal: Any,
    error: TurnstileError | None,
) -> None:
    """The compaction's transcript row (committed; counted in the metrics): what the ledger
    charges the caller's key."""
    record = TurnRecord(
        request_id=rid,
        ts=wall,
        client_dialect=DIALECT,
        requested_model=dep.name,
        stream=False,
        status=error.status if error is not None else 200,
        deployment=dep.name,
        api=dep.api,
        usage=usage,
        cost_usd=usage.cost_usd,
        latency_ms=round((time.perf_counter() - started) * 1000, 3),
        error=error.message if error is not None else None,
        principal=principal,
    )
    gw.metrics.turn(record)
    if gw.transcript is not None:
        await gw.transcript.commit(record)
