"""Replay of recorded conversations: every assistant turn through the whole pipeline.

For turn ``k`` of a :class:`Conversation` the request the agent sent (the messages before the
answer, or the rebuilt view after a compaction) is encoded in the recorded dialect and parsed
by that dialect's edge together with the recorded answer (one parse; the answer is the last
message and is split off, so the request is exactly what ``parse_request`` makes of the
history). Then:

1. guards with policy ``reject``/``strict``: every pairing and ordering problem becomes a
   finding (reported once per conversation, at the first turn it appears in);
2. round trip to every upstream API (:mod:`gateway.replay.roundtrip`);
3. the pipeline (:class:`gateway.pipeline.Pipeline`, policy ``repair``/``reorder`` so that
   flawed histories still run) with the replay upstream serving the recorded answer and a
   transcript writer: truncation guard, accounting (Turnstile's cost estimate from the
   catalog price and the recorded usage), transcript row;
4. the answer rendered in the client's dialect, streamed and not, read back and compared with
   the recorded answer (text, tool calls with byte-exact arguments, thinking and signatures);
5. with a routing configuration (:mod:`gateway.replay.routing`): what routing would have chosen
   for the turn and what that would have cost.
"""

from __future__ import annotations

import uuid
from typing import Any

import orjson

from gateway import invariants
from gateway.config import Deployment, GuardPolicy
from gateway.edges import get_dialect
from gateway.edges.recorded import default_stop
from gateway.errors import GuardViolation, InvalidRequest, TurnstileError
from gateway.pipeline import Pipeline, Turn
from gateway.replay import clientview
from gateway.replay.records import Conversation
from gateway.replay.report import Report
from gateway.replay.roundtrip import record_round_trip
from gateway.replay.routing import ConversationRoute, ReplayRouting
from gateway.replay.upstream import ReplayProvider
from gateway.schema import AssistantMessage, Request, Response, SystemMessage, Usage

STRICT = GuardPolicy(pairing="reject", ordering="strict")
_PROVIDER_OF = {"openai_chat": "openai", "anthropic_messages": "anthropic"}


class ConversationReplayer:
    """Replays conversations through one pipeline (shared gateway state, one transcript)."""

    def __init__(
        self,
        pipeline: Pipeline,
        providers: dict[str, ReplayProvider],
        report: Report,
        routing: ReplayRouting | None = None,
    ) -> None:
        self.pipeline = pipeline
        self.providers = providers
        self.report = report
        self.routing = routing

    def _deployment(self, dialect: str, model: str) -> Deployment:
        table = self.pipeline.gw.table
        dep = table.deployments.get(model)
        if dep is None:
            dep = Deployment(name=model, api=dialect, model=model, provider=_PROVIDER_OF[dialect])  # type: ignore[arg-type]
            table.deployments[model] = dep
            from gateway.providers.catalog import resolve_price

            table.prices[model] = resolve_price(dep)
        return dep

    async def replay(self, conv: Conversation) -> None:
        """Replay every turn of ``conv`` into the report."""
        rep = self.report
        rep.counts["conversations"] += 1
        edge = get_dialect(conv.dialect)
        seen_findings: set[tuple[str, str, str | None]] = set()
        seen_diffs: set[tuple[str, ...]] = set()
        est_total = 0.0
        est_known = True
        prev_answer_at = 0
        route = self.routing.start(conv.dialect, len(conv.turns)) if self.routing else None
        for k, turn in enumerate(conv.turns):
            where = f"{conv.name} turn {k}"
            rep.counts["turns"] += 1
            model = turn.model or str(conv.head.get("model") or "unknown")
            history = conv.request_messages(k)
            answer_msg = conv.messages[turn.index]
            if not history:
                rep.finding(
                    "empty_request", conv.source, where, None, "assistant turn with no message before it"
                )
                continue
            body = orjson.dumps({**conv.head, "model": model, "messages": [*history, answer_msg]})
            try:
                full = edge.parse_request(body)
            except InvalidRequest as err:
                rep.finding("invalid_request", conv.source, where, None, err.message)
                continue
            answer = full.messages[-1]
            if not isinstance(answer, AssistantMessage):
                rep.crash(
                    conv.source, where, TypeError("recorded answer did not parse as an assistant message")
                )
                continue
            request = full.model_copy(update={"messages": full.messages[:-1]})
            rep.counts["calls"] += len(answer.tool_calls)
            self._guard_findings(request, conv, where, seen_findings)
            try:
                record_round_trip(
                    self.report, self._slice(request, prev_answer_at, k, conv), conv.source, where, seen_diffs
                )
                est = await self._pipeline_turn(
                    request, answer, turn, conv, where, model, answer_msg, route, k
                )
            except Exception as err:
                rep.crash(conv.source, where, err)
                continue
            prev_answer_at = len(request.messages)
            if est is None:
                est_known = False
            else:
                est_total += est
        if conv.total_cost_usd is not None and est_known and conv.turns:
            rep.cost["conversations_compared"] += 1
            rep.cost["conversation_recorded_usd"] += conv.total_cost_usd
            rep.cost["conversation_estimated_usd"] += est_total
        if route is not None:
            rep.route_conversation(conv.source, conv.name, route)

    @staticmethod
    def _slice(request: Request, start: int, k: int, conv: Conversation) -> Request:
        """The part of turn ``k``'s request to convert: the system messages and everything from
        the previous turn's answer on (that answer issued the calls whose results follow).
        Consecutive slices overlap by one message and together cover every message of the
        conversation, so converting the whole prefix again at every turn (quadratic in the
        length of the session) adds nothing; the last turn before a compaction and the last
        turn of the conversation are converted whole, which covers effects across slices."""
        last = k == len(conv.turns) - 1 or ((k + 1) in conv.views and k not in conv.views)
        if last or start <= 1 or (k in conv.views and (k - 1) not in conv.views):
            return request
        head = [m for m in request.messages[: start - 1] if isinstance(m, SystemMessage)]
        return request.model_copy(update={"messages": [*head, *request.messages[start - 1 :]]})

    def _guard_findings(
        self, request: Request, conv: Conversation, where: str, seen: set[tuple[str, str, str | None]]
    ) -> None:
        try:
            invariants.check_request(request, STRICT)
        except GuardViolation as err:
            for p in err.problems:
                key = (p.code, p.id, p.location if p.code.startswith("duplicate") else None)
                if key in seen:
                    continue
                seen.add(key)
                self.report.finding(p.code, conv.source, where, p.id, p.message)

    async def _pipeline_turn(
        self,
        request: Request,
        answer: AssistantMessage,
        turn: Any,
        conv: Conversation,
        where: str,
        model: str,
        answer_msg: dict[str, Any],
        route: ConversationRoute | None = None,
        k: int = 0,
    ) -> float | None:
        rep = self.report
        dep = self._deployment(conv.dialect, model)
        usage = Usage(**turn.usage) if turn.usage else Usage()
        stop = turn.stop or default_stop(bool(answer.tool_calls))
        provider = self.providers[conv.dialect]
        provider.answer = Response(
            id=f"replay-{uuid.uuid4().hex[:12]}",
            model=model,
            message=answer,
            stop_reason=stop,  # type: ignore[arg-type]
            usage=usage,
        )
        ctx = Turn(
            request_id=uuid.uuid4().hex,
            dialect=conv.dialect,
            request=request.model_copy(update={"model": dep.name}),
        )
        try:
            result = await self.pipeline.complete(ctx)
        except GuardViolation as err:
            rep.guard_outcomes["rejected"] += 1
            rep.finding("pipeline_rejected", conv.source, where, None, err.message[:300])
            return None
        except TurnstileError as err:
            rep.crash(conv.source, where, err)
            return None
        rep.guard_outcomes[ctx.guard_outcome] += 1
        rep.counts["pipeline_turns"] += 1
        resp = result.response
        for w in resp.withheld_tool_calls:
            rep.finding("truncated_tool_call", conv.source, where, w.id, f"{w.name}: {w.reason}")
        for problem in clientview.check_conversation_answer(conv.dialect, resp, request, answer_msg, stop):
            rep.loss(conv.source, where, conv.dialect, problem[0], problem[1], problem[2])
        rep.counts["rendered"] += 2
        est = resp.usage.cost_usd
        if resp.usage.estimated:
            rep.cost["turns_estimated_tokens"] += 1
        elif est is None:
            rep.cost["unpriced_turns"] += 1
        if turn.cost_usd is not None and est is not None and not resp.usage.estimated:
            rep.add_cost(model, turn.cost_usd, est)
        if route is not None and self.routing is not None:
            recorded = turn.cost_usd if turn.cost_usd is not None else est
            repriceable = turn.cost_usd is None or not resp.usage.estimated
            self.routing.turn(route, k, request, resp.usage, recorded, repriceable=repriceable)
        return est
