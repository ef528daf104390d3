"""Prometheus metrics of the gateway: what every turn did, counted from its transcript record.

One :class:`Metrics` per gateway process (``gw.metrics``), its own ``CollectorRegistry``
(prometheus-client). The record layer hands it each turn's :class:`~gateway.transcript.TurnRecord`
(the turn row, the tool loop's step rows, the rows of refused requests) — one source of truth
with the transcript — and the MCP endpoint its tool calls and trust decisions
(:meth:`Metrics.tool_call`, :meth:`Metrics.trust_decision`).

Cost on the hot path: :meth:`Metrics.turn` keeps a tuple of the record's few scalar fields
(no request or answer is held); the tuples are folded into the prometheus-client metrics in
batches — at each scrape, every :data:`FOLD_EVERY` turns, and each second in multiprocess mode
(:func:`fold_periodically`) — so a request pays for a list append, not for a dozen lock-taking
metric updates.

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
* ``tokens_total{deployment,type}`` — ``type`` input | output | cache_read | cache_write | reasoning
* ``cost_usd_total{deployment}``
* ``upstream_attempts_total{deployment,status}`` — ``status`` the HTTP status, or ``skipped``;
  ``fallbacks_total{from_deployment,to_deployment}`` — a turn answered by a later deployment
* ``routing_decisions_total{policy,tier}``; ``routing_estimated_cost_usd_total{deployment}``
* ``guard_repairs_total{code}`` — each repair of :mod:`gateway.guards` by rule
* ``mcp_tool_calls_total{server,tool,outcome}``, ``mcp_tool_call_duration_seconds{server}``;
  ``mcp_trust_decisions_total{server,tier,outcome}`` (confirmations asked, approved, declined)
* ``limit_rejections_total{limit,scope}`` — budget and rate-limit refusals (access control)
* at scrape: ``deployment_circuit_state{deployment,state}`` (1 for the current state),
  ``deployment_cooldown_seconds{deployment}``, ``mcp_server_up{server}``
"""

from __future__ import annotations

import asyncio
import os
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

# One kept turn: (dialect, deployment, status, guard_outcome, stream, seconds, ttfb seconds,
# usage dict, cost USD, attempts, repairs)
_Kept = tuple[str, str, int, str, bool, float | None, float | None, Any, float | None, list[Any], list[Any]]


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
        self.limit_rejections = Counter(
            "turnstile_limit_rejections", "Turns refused by a budget or rate limit, by limit and scope.",
            ["limit", "scope"], registry=r,
        )  # fmt: skip
        self.gauges = ScrapeGauges()
        r.register(self.gauges)
        self._kept: list[_Kept] = []

    # ------------------------------------------------------------------ hot path

    def turn(self, record: TurnRecord, ttfb_s: float | None = None) -> None:
        """Count one transcript record (``ttfb_s``: a stream's time to first byte, seconds)."""
        self._kept.append(
            (
                record.client_dialect,
                record.deployment or NO_DEPLOYMENT,
                record.status,
                record.guard_outcome,
                record.stream,
                None if record.latency_ms is None else record.latency_ms / 1000,
                ttfb_s,
                record.usage,
                record.cost_usd,
                record.attempts,
                record.repairs,
            )
        )
        if len(self._kept) >= FOLD_EVERY:
            self.fold()

    def tool_call(self, server: str, tool: str, outcome: str, seconds: float) -> None:
        """Count one MCP tool call forwarded upstream (``outcome`` ok | error | input_required)."""
        self.tool_calls.labels(server, tool, outcome).inc()
        self.tool_seconds.labels(server).observe(seconds)

    def trust_decision(self, server: str, tier: str, outcome: str) -> None:
        """Count one trust-tier decision on an MCP tool call."""
        self.trust.labels(server, tier, outcome).inc()

    def limit_rejected(self, limit: str, scope: str) -> None:
        """Count one turn refused by ``limit`` (e.g. ``budget``, ``rpm``) of ``scope`` (key, team,
        deployment)."""
        self.limit_rejections.labels(limit, scope).inc()

    # ------------------------------------------------------------------ folding

    def fold(self) -> None:
        """Apply the kept turns to the metrics."""
        kept, self._kept = self._kept, []
        for dialect, dep, status, guard, stream, seconds, ttfb, usage, cost, attempts, repairs in kept:
            self.turns.labels(dialect, dep, str(status), guard).inc()
            if seconds is not None:
                self.duration.labels(dialect, dep).observe(seconds)
            if stream and ttfb is not None:
                self.ttfb.labels(dialect, dep).observe(ttfb)
            u = usage if type(usage) is dict else usage.__pydantic_serializer__.to_python(usage)
            for field, kind in TOKEN_TYPES:
                n = u.get(field)
                if n:
                    self.tokens.labels(dep, kind).inc(n)
            if cost:
                self.cost.labels(dep).inc(cost)
            self._fold_attempts(dep, status, attempts)
            for repair in repairs:
                code = repair.get("code") if type(repair) is dict else None
                if code:
                    self.repairs.labels(code).inc()

    def _fold_attempts(self, answered_by: str, status: int, attempts: list[Any]) -> None:
        first: str | None = None
        for a in attempts:
            if a.get("kind") == "route":
                if a.get("policy"):
                    self.decisions.labels(a["policy"], str(a.get("tier") or "")).inc()
                if a.get("estimated_cost_usd"):
                    self.estimated.labels(a.get("route") or NO_DEPLOYMENT).inc(a["estimated_cost_usd"])
                continue
            dep = a.get("deployment")
            if not dep:
                continue
            first = first or dep
            self.attempts.labels(dep, "skipped" if "skipped" in a else str(a.get("status"))).inc()
        if first is not None and status < 400 and answered_by not in (first, NO_DEPLOYMENT):
            self.fallbacks.labels(first, answered_by).inc()

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
