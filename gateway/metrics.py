"""Prometheus metrics of the gateway: what every turn did, counted from its transcript record.

One :class:`Metrics` per gateway process (``gw.metrics``), its own ``CollectorRegistry``
(prometheus-client). The record layer hands it each turn's :class:`~gateway.transcript.TurnRecord`
(the turn row and the rows of refused requests: one count each) and each tool-loop step's row
(counted as a step only: the turn's own row already holds the usage of all its steps, and its
attempts) — one source of truth with the transcript — and the MCP endpoint its tool calls and
trust decisions
(:meth:`Metrics.tool_call`, :meth:`Metrics.trust_decision`).

Cost on the hot path: :meth:`Metrics.turn` adds the record's numbers into plain dicts keyed by
label values (a histogram's observation is a ``bisect`` into its bucket counts); those sums are
applied to the prometheus-client metrics in batches — at each scrape, every :data:`FOLD_EVERY`
turns, and each second in multiprocess mode (:func:`fold_periodically`) — one locked update per
distinct label set per batch, instead of a dozen per turn.

Multiprocess (``turnstile serve --workers N``): the CLI points ``PROMETHEUS_MULTIPROC_DIR`` at
a fresh directory before the workers start; prometheus-client then keeps every worker's values
in files there and :func:`render` adds them up, whichever worker answers the scrape. Gauges read
at scrape time (circuit state, cooldowns, MCP server health) describe the answering worker.

Names follow the Prometheus conventions: base units (seconds, USD), ``_total`` counters, and
labels bounded by the configuration (dialect, deployment, status code, MCP server and tool; never
a request id or a key).

Metrics (all prefixed ``turnstile_``):

* ``turns_total{dialect,deployment,status,guard_outcome}``; ``turn_duration_seconds`` and
  ``time_to_first_byte_seconds`` (streams) histograms ``{dialect,deployment}``
* ``tool_loop_steps_total{deployment}`` — model steps of the server-side tool loop (a turn of
  three steps is one turn and three steps)
* ``tokens_total{deployment,type}`` — ``type`` input | output | cache_read | cache_write | reasoning
* ``cost_usd_total{deployment}``
* ``upstream_attempts_total{deployment,status}`` — ``status`` the HTTP status, or ``skipped``;
  ``fallbacks_total{from_deployment,to_deployment}`` — a turn answered by a later deployment
* ``routing_decisions_total{policy,tier}``; ``routing_estimated_cost_usd_total{deployment}``
* ``guard_repairs_total{code}`` — each repair of :mod:`gateway.guards` by rule
* ``mcp_tool_calls_total{server,tool,outcome}``, ``mcp_tool_call_duration_seconds{server}``;
  ``mcp_trust_decisions_total{server,tier,outcome}`` (confirmations asked, approved, declined)
* ``guardrail_actions_total{stage,check,action}`` — each redact, block and flag of the guardrails
* ``limit_rejections_total{limit,scope}`` — budget and rate-limit refusals (access control)
* ``limit_counters_unreachable_total{outcome}`` — admissions (a turn's, a tool-loop step's, a
  compaction call's) that found the shared limit counters unreachable: ``admitted`` unchecked
  (``redis.fail: open``) or ``refused`` (``closed``, the 503)
* at scrape: ``deployment_circuit_state{deployment,state}`` (1 for the current state),
  ``deployment_cooldown_seconds{deployment}``, ``mcp_server_up{server}``
"""

from __future__ import annotations

import asyncio
import os
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from gateway.transcript import TurnRecord

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
FOLD_EVERY = 512
"""Turns kept before they are folded into the metrics without waiting for a scrape."""
SECONDS_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
TOKEN_TYPES = (
    ("input_tokens", "input"),
    ("output_tokens", "output"),
    ("cache_read_tokens", "cache_read"),
    ("cache_write_tokens", "cache_write"),
    ("reasoning_tokens", "reasoning"),
)
NO_DEPLOYMENT = "none"
"""The ``deployment`` label of a turn no deployment served (refused before routing)."""

_INF = float("inf")
_BOUNDS = (*SECONDS_BUCKETS, _INF)
# Keys of the counter sums: (metric, *label values); of the histogram sums: (metric, *label values).
_TURNS, _ATTEMPTS, _FALLBACKS, _DECISIONS, _ESTIMATED, _REPAIRS, _STEPS = range(7)
_DURATION, _TTFB = range(2)


class _UsageView:
    """A usage dict (a tool-loop step's row) read like :class:`gateway.schema.Usage`."""

    __slots__ = (
        "cache_read_tokens",
        "cache_write_tokens",
        "input_tokens",
        "output_tokens",
        "reasoning_tokens",
    )

    def __init__(self, usage: dict[str, Any]) -> None:
        for name in self.__slots__:
            setattr(self, name, usage.get(name))


class ScrapeGauges(Collector):
    """Gauges read when ``/metrics`` is scraped, from callables registered with
    :meth:`Metrics.on_scrape` (each yields prometheus ``Metric`` families)."""

    def __init__(self) -> None:
        self.sources: list[Callable[[], Iterable[Metric]]] = []

    def collect(self) -> Iterator[Metric]:
        for source in self.sources:
            yield from source()


class Metrics:
    """The gateway's metrics (see the module docstring for names and labels)."""

    def __init__(self) -> None:
        self.multiprocess = bool(os.environ.get(MULTIPROC_ENV))
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.turns = Counter(
            "turnstile_turns", "Turns by client dialect, deployment, HTTP status and guard outcome.",
            ["dialect", "deployment", "status", "guard_outcome"], registry=r,
        )  # fmt: skip
        self.duration = Histogram(
            "turnstile_turn_duration_seconds", "Time from a request's arrival to its answer's end.",
            ["dialect", "deployment"], buckets=SECONDS_BUCKETS, registry=r,
        )  # fmt: skip
        self.ttfb = Histogram(
            "turnstile_time_to_first_byte_seconds", "Streams: time from arrival to the first event.",
            ["dialect", "deployment"], buckets=SECONDS_BUCKETS, registry=r,
        )  # fmt: skip
        self.steps = Counter(
            "turnstile_tool_loop_steps", "Model steps of the server-side tool loop by deployment "
            "(each turn is counted once in turnstile_turns_total, whatever its steps).",
            ["deployment"], registry=r,
        )  # fmt: skip
        self.tokens = Counter(
            "turnstile_tokens", "Tokens by deployment and type (input, output, cache_read, "
            "cache_write, reasoning).", ["deployment", "type"], registry=r,
        )  # fmt: skip
        self.cost = Counter("turnstile_cost_usd", "Cost of the turns in USD.", ["deployment"], registry=r)
        self.attempts = Counter(
            "turnstile_upstream_attempts", "Upstream attempts by deployment and HTTP status (or skipped).",
            ["deployment", "status"], registry=r,
        )  # fmt: skip
        self.fallbacks = Counter(
            "turnstile_fallbacks", "Turns answered by a later deployment after the first failed or was "
            "skipped.", ["from_deployment", "to_deployment"], registry=r,
        )  # fmt: skip
        self.decisions = Counter(
            "turnstile_routing_decisions",
            "Routing decisions by policy and tier.",
            ["policy", "tier"],
            registry=r,
        )
        self.estimated = Counter(
            "turnstile_routing_estimated_cost_usd", "The routers' uncached cost estimate of the chosen "
            "deployment, USD.", ["deployment"], registry=r,
        )  # fmt: skip
        self.repairs = Counter("turnstile_guard_repairs", "Guard repairs by rule.", ["code"], registry=r)
        self.tool_calls = Counter(
            "turnstile_mcp_tool_calls", "MCP tool calls by server, tool and outcome (ok, error, "
            "input_required).", ["server", "tool", "outcome"], registry=r,
        )  # fmt: skip
        self.tool_seconds = Histogram(
            "turnstile_mcp_tool_call_duration_seconds", "MCP tool call time by server.", ["server"],
            buckets=SECONDS_BUCKETS, registry=r,
        )  # fmt: skip
        self.trust = Counter(
            "turnstile_mcp_trust_decisions", "MCP trust-tier decisions by server, tier and outcome "
            "(allowed, refused, asked, approved, declined, ...).", ["server", "tier", "outcome"], registry=r,
        )  # fmt: skip
        self.guardrail_actions = Counter(
            "turnstile_guardrail_actions", "Guardrail actions by stage (tool_output, input, output), check "
            "(secrets, pii, injection, webhook) and action (redact, block, flag).",
            ["stage", "check", "action"],
            registry=r,
        )  # fmt: skip
        self.limit_rejections = Counter(
            "turnstile_limit_rejections", "Turns refused by a budget or rate limit, by limit and scope.",
            ["limit", "scope"], registry=r,
        )  # fmt: skip
        self.limits_unreachable = Counter(
            "turnstile_limit_counters_unreachable", "Admissions that found the shared limit counters "
            "unreachable: admitted unchecked (redis.fail open) or refused (closed).", ["outcome"], registry=r,
        )  # fmt: skip
        self.gauges = ScrapeGauges()
        r.register(self.gauges)
        self._counter_of = {
            _TURNS: self.turns,
            _ATTEMPTS: self.attempts,
            _FALLBACKS: self.fallbacks,
            _DECISIONS: self.decisions,
            _ESTIMATED: self.estimated,
            _REPAIRS: self.repairs,
            _STEPS: self.steps,
        }
        self._histogram_of = {_DURATION: self.duration, _TTFB: self.ttfb}
        self._sums: dict[tuple[Any, ...], float] = {}  # counter increments not applied yet
        self._observed: dict[tuple[Any, ...], list[Any]] = {}  # histogram: [bucket counts, sum]
        self._tokens: dict[str, list[Any]] = {}  # deployment -> [5 token counts in TOKEN_TYPES order, USD]
        self._pending = 0  # turns added since the last fold

    # ------------------------------------------------------------------ hot path

    def turn(self, record: TurnRecord, ttfb_s: float | None = None) -> None:
        """Count one transcript record (``ttfb_s``: a stream's time to first byte, seconds)."""
        sums = self._sums
        dep = record.deployment or NO_DEPLOYMENT
        dialect = record.client_dialect
        key: tuple[Any, ...] = (_TURNS, dialect, dep, record.status, record.guard_outcome)
        sums[key] = sums.get(key, 0) + 1
        if record.latency_ms is not None:
            self._observe((_DURATION, dialect, dep), record.latency_ms / 1000)
        if ttfb_s is not None and record.stream:
            self._observe((_TTFB, dialect, dep), ttfb_s)
        u: Any = record.usage
        if type(u) is dict:
            u = _UsageView(u)
        tokens = self._tokens.get(dep)
        if tokens is None:
            tokens = self._tokens[dep] = [0, 0, 0, 0, 0, 0.0]
        tokens[0] += u.input_tokens or 0
        tokens[1] += u.output_tokens or 0
        tokens[2] += u.cache_read_tokens or 0
        tokens[3] += u.cache_write_tokens or 0
        tokens[4] += u.reasoning_tokens or 0
        tokens[5] += record.cost_usd or 0.0
        if record.attempts:
            self._count_attempts(dep, record.status, record.attempts)
        for repair in record.repairs:
            code = repair.get("code") if type(repair) is dict else None
            if code:
                key = (_REPAIRS, code)
                sums[key] = sums.get(key, 0) + 1
        self._pending += 1
        if self._pending >= FOLD_EVERY:
            self.fold()

    def step(self, record: TurnRecord) -> None:
        """Count one tool-loop step's row (``<request id>.step<n>``) as a step, never as a turn:
        its usage, cost and attempts are in its turn's own row, which :meth:`turn` counts."""
        key = (_STEPS, record.deployment or NO_DEPLOYMENT)
        self._sums[key] = self._sums.get(key, 0) + 1

    def _observe(self, key: tuple[Any, ...], value: float) -> None:
        entry = self._observed.get(key)
        if entry is None:
            entry = self._observed[key] = [[0] * len(_BOUNDS), 0.0]
        entry[0][bisect_left(_BOUNDS, value)] += 1
        entry[1] += value

    def _count_attempts(self, answered_by: str, status: int, attempts: list[Any]) -> None:
        sums = self._sums
        first: str | None = None
        for a in attempts:
            dep = a.get("deployment")
            if dep is None:  # the routing decision (kind route)
                if "policy" in a:
                    key: tuple[Any, ...] = (_DECISIONS, a["policy"], a.get("tier") or "")
                    sums[key] = sums.get(key, 0) + 1
                    cost = a.get("estimated_cost_usd")
                    if cost:
                        key = (_ESTIMATED, a.get("route") or NO_DEPLOYMENT)
                        sums[key] = sums.get(key, 0) + cost
                continue
            if first is None:
                first = dep
            key = (_ATTEMPTS, dep, a.get("status", "skipped"))  # a skipped deployment has no status
            sums[key] = sums.get(key, 0) + 1
        if first is not None and status < 400 and answered_by != first and answered_by != NO_DEPLOYMENT:
            key = (_FALLBACKS, first, answered_by)
            sums[key] = sums.get(key, 0) + 1

    def tool_call(self, server: str, tool: str, outcome: str, seconds: float) -> None:
        """Count one MCP tool call forwarded upstream (``outcome`` ok | error | input_required)."""
        self.tool_calls.labels(server, tool, outcome).inc()
        self.tool_seconds.labels(server).observe(seconds)

    def trust_decision(self, server: str, tier: str, outcome: str) -> None:
        """Count one trust-tier decision on an MCP tool call."""
        self.trust.labels(server, tier, outcome).inc()

    def guardrail(self, stage: str, check: str, action: str) -> None:
        """Count one guardrail action (:mod:`gateway.guardrails.engine`)."""
        self.guardrail_actions.labels(stage, check, action).inc()

    def limit_rejected(self, limit: str, scope: str) -> None:
        """Count one turn refused by ``limit`` (e.g. ``budget``, ``rpm``) of ``scope`` (key, team,
        deployment)."""
        self.limit_rejections.labels(limit, scope).inc()

    def limit_counters_unreachable(self, outcome: str) -> None:
        """Count one admission that could not reach the shared limit counters (``outcome``
        ``admitted``: fail open, unchecked; ``refused``: fail closed)."""
        self.limits_unreachable.labels(outcome).inc()

    # ------------------------------------------------------------------ folding

    def fold(self) -> None:
        """Apply the sums of the turns counted since the last fold to the metrics.

        A histogram's bucket counts and sum are added to its prometheus-client child directly
        (``_buckets``, ``_sum``: what ``observe`` updates, per bucket, in prometheus-client
        0.26; ``tests/gateway/test_metrics.py`` checks the exposition)."""
        sums, self._sums = self._sums, {}
        observed, self._observed = self._observed, {}
        tokens, self._tokens = self._tokens, {}
        self._pending = 0
        for dep, amounts in tokens.items():
            for (_, kind), n in zip(TOKEN_TYPES, amounts, strict=False):
                if n:
                    self.tokens.labels(dep, kind).inc(n)
            if amounts[5]:
                self.cost.labels(dep).inc(amounts[5])
        for (metric, *labels), amount in sums.items():
            self._counter_of[metric].labels(*labels).inc(amount)
        for (metric, *labels), (counts, total) in observed.items():
            child = self._histogram_of[metric].labels(*labels)
            child._sum.inc(total)
            for i, n in enumerate(counts):
                if n:
                    child._buckets[i].inc(n)

    # ------------------------------------------------------------------ scrape

    def on_scrape(self, source: Callable[[], Iterable[Metric]]) -> None:
        """Register ``source``: called at every scrape, it yields gauge families."""
        self.gauges.sources.append(source)

    def render(self) -> tuple[bytes, str]:
        """The text exposition (body, content type): this process's metrics, or in
        multiprocess mode every worker's (counters and histograms summed) plus this worker's
        scrape-time gauges."""
        self.fold()
        if not self.multiprocess:
            return generate_latest(self.registry), CONTENT_TYPE_LATEST
        from prometheus_client import multiprocess

        merged = CollectorRegistry()
        multiprocess.MultiProcessCollector(merged)
        merged.register(self.gauges)
        return generate_latest(merged), CONTENT_TYPE_LATEST


def circuit_gauges(states: Callable[[], Iterable[tuple[str, str, float]]]) -> Callable[[], Iterable[Metric]]:
    """A scrape source for ``deployment_circuit_state`` and ``deployment_cooldown_seconds`` from
    ``states()``: ``(deployment, state, cooldown seconds left)`` per deployment."""

    def collect() -> Iterable[Metric]:
        state = GaugeMetricFamily(
            "turnstile_deployment_circuit_state",
            "1 for the deployment's current circuit state (closed, open, half_open).",
            labels=["deployment", "state"],
        )
        cooldown = GaugeMetricFamily(
            "turnstile_deployment_cooldown_seconds",
            "Seconds left in the deployment's cooldown (0 when none).",
            labels=["deployment"],
        )
        for dep, now, left in states():
            for s in ("closed", "open", "half_open"):
                state.add_metric([dep, s], 1.0 if s == now else 0.0)
            cooldown.add_metric([dep], max(0.0, left))
        return [state, cooldown]

    return collect


def server_gauges(servers: Callable[[], Iterable[tuple[str, bool]]]) -> Callable[[], Iterable[Metric]]:
    """A scrape source for ``mcp_server_up`` from ``servers()``: ``(server, up)`` pairs."""

    def collect() -> Iterable[Metric]:
        up = GaugeMetricFamily(
            "turnstile_mcp_server_up", "1 when the MCP server is connected.", labels=["server"]
        )
        for name, ok in servers():
            up.add_metric([name], 1.0 if ok else 0.0)
        return [up]

    return collect


async def fold_periodically(metrics: Metrics, every_s: float = 1.0) -> None:
    """Fold ``metrics`` every ``every_s`` seconds, until cancelled (multiprocess mode: the
    worker that answers a scrape reads the others' values from their files)."""
    while True:
        await asyncio.sleep(every_s)
        metrics.fold()
