"""The overview's numbers over time, from the transcript: turns per second, error rate, spend and
what routing saved, per time bucket of a window (the last hour, day or week).

Counted like the spend ledger (:mod:`gateway.ledger`): a turn's own row holds its whole cost,
so the rows of its tool-loop steps (``<request id>.step<n>``) are left out.

**Routing savings** are estimated per turn that a routing policy with tiers placed (its route
entry names a ``tier``; :mod:`routers.base`): what the turn's tokens would have cost on the
alias's strongest tier (its first enabled deployment, at that deployment's price, as
``turnstile replay`` prices "always strong": :mod:`gateway.replay.routing`) minus what the turn
cost. Prices are linear in tokens, so the tokens of a bucket's turns are summed per alias in SQL
and priced once. Turns without a known cost, and aliases whose strongest deployment has no
price, are left out of the estimate (counted in ``unpriced_turns``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from gateway.accounting import compute_cost
from gateway.config import GatewayConfig, Price
from gateway.console.transcript_reader import TranscriptReader
from gateway.schema import Usage

NOT_A_STEP = "t.request_id NOT LIKE '%.step%'"


@dataclass(frozen=True)
class Window:
    """A span of time shown: its query name, how far back it reaches and its bucket size
    (seconds), and the ``strftime`` format of a bucket's label (UTC)."""

    name: str
    span_s: int
    bucket_s: int
    label: str


WINDOWS: dict[str, Window] = {
    "1h": Window("1h", 3600, 60, "%H:%M"),
    "24h": Window("24h", 86_400, 1_800, "%H:%M"),
    "7d": Window("7d", 7 * 86_400, 6 * 3600, "%a %H:%M"),
}
"""The overview's windows: an hour in minutes, a day in half hours, a week in six hours."""

_BUCKET = {"sqlite": "CAST(t.ts / ? AS INTEGER)", "postgres": "CAST(FLOOR(t.ts / ?) AS BIGINT)"}


@dataclass
class Bucket:
    """One bucket: its start (epoch seconds), turns, errors (status >= 400), spend (USD) and the
    estimated routing saving (USD; None when nothing routed by tier was priced)."""

    start: float
    turns: int = 0
    errors: int = 0
    spend_usd: float = 0.0
    saving_usd: float | None = None


@dataclass
class Overview:
    """The buckets of a window (oldest first, every bucket present) and their totals."""

    window: Window
    buckets: list[Bucket]
    routed_turns: int = 0
    unpriced_turns: int = 0
    strong_usd: float = 0.0
    routed_usd: float = 0.0
    deployments: list[dict[str, Any]] = field(default_factory=list)

    @property
    def turns(self) -> int:
        """Turns in the window."""
        return sum(b.turns for b in self.buckets)

    @property
    def errors(self) -> int:
        """Turns answered with a status of 400 or more."""
        return sum(b.errors for b in self.buckets)

    @property
    def spend_usd(self) -> float:
        """What the window's turns cost (USD)."""
        return sum(b.spend_usd for b in self.buckets)

    @property
    def saving_usd(self) -> float:
        """The estimated routing saving of the window (USD)."""
        return sum(b.saving_usd or 0.0 for b in self.buckets)

    def labels(self) -> list[str]:
        """Each bucket's start as its window's label format (UTC)."""
        fmt = self.window.label
        return [datetime.fromtimestamp(b.start, UTC).strftime(fmt) for b in self.buckets]


def strongest_prices(config: GatewayConfig, prices: dict[str, Price]) -> dict[str, Price]:
    """Alias name -> the price of the first enabled deployment (one with a price in ``prices``)
    of its strongest tier, for every alias routed by tiers."""
    out: dict[str, Price] = {}
    for alias in config.models:
        routing = alias.routing
        if routing is None or not routing.tiers:
            continue
        strongest = list(routing.tiers.values())[-1]
        # a deployment of the alias in no tier joins the strongest (gateway.config.RoutingConfig)
        tiered = {d for deps in routing.tiers.values() for d in deps}
        members = [*strongest, *(d for d in alias.deployments if d not in tiered)]
        for name in members:
            if name in prices:
                out[alias.name] = prices[name]
                break
    return out


async def overview(
    reader: TranscriptReader,
    window: Window,
    strongest: dict[str, Price],
    now: float | None = None,
) -> Overview:
    """The buckets of ``window`` ending now (``now``: epoch seconds, for tests), with routing
    savings priced at ``strongest`` (:func:`strongest_prices`)."""
    now = time.time() if now is None else now
    first = int((now - window.span_s) // window.bucket_s) + 1
    last = int(now // window.bucket_s)
    since = first * window.bucket_s
    bucket = _BUCKET[reader.dialect]
    rows = await reader.rows(
        f"SELECT {bucket} AS b, COUNT(*) AS turns, "
        "SUM(CASE WHEN t.status >= 400 THEN 1 ELSE 0 END) AS errors, "
        "COALESCE(SUM(t.cost_usd), 0) AS cost "
        f"FROM turns t WHERE t.ts >= ? AND {NOT_A_STEP} GROUP BY 1",
        [window.bucket_s, since],
    )
    by_index = {i: Bucket(start=float(i * window.bucket_s)) for i in range(first, last + 1)}
    for r in rows:
        b = by_index.get(int(r["b"]))
        if b is not None:
            b.turns, b.errors, b.spend_usd = int(r["turns"]), int(r["errors"] or 0), float(r["cost"] or 0.0)
    result = Overview(window, list(by_index.values()))
    if strongest:
        await _savings(reader, result, by_index, strongest, since, bucket)
    result.deployments = await reader.rows(
        "SELECT t.deployment AS deployment, COUNT(*) AS turns, "
        "SUM(CASE WHEN t.status >= 400 THEN 1 ELSE 0 END) AS errors, "
        "COALESCE(SUM(t.cost_usd), 0) AS cost, AVG(t.latency_ms) AS latency_ms "
        f"FROM turns t WHERE t.ts >= ? AND {NOT_A_STEP} AND t.deployment IS NOT NULL "
        "GROUP BY t.deployment ORDER BY COUNT(*) DESC LIMIT 20",
        [since],
    )
    return result


async def _savings(
    reader: TranscriptReader,
    result: Overview,
    by_index: dict[int, Bucket],
    strongest: dict[str, Price],
    since: float,
    bucket: str,
) -> None:
    """Fill each bucket's ``saving_usd`` (see the module docstring) and the window's totals."""
    rows = await reader.rows(
        f"SELECT {bucket} AS b, t.requested_model AS model, COUNT(*) AS turns, "
        "COALESCE(SUM(t.input_tokens), 0) AS input_tokens, "
        "COALESCE(SUM(t.output_tokens), 0) AS output_tokens, "
        "COALESCE(SUM(t.cache_read_tokens), 0) AS cache_read_tokens, "
        "COALESCE(SUM(t.cache_write_tokens), 0) AS cache_write_tokens, "
        "COALESCE(SUM(t.reasoning_tokens), 0) AS reasoning_tokens, COALESCE(SUM(t.cost_usd), 0) AS cost "
        f"FROM turns t WHERE t.ts >= ? AND {NOT_A_STEP} AND t.status < 400 "
        'AND t.attempts LIKE \'%"tier":"%\' AND t.cost_usd IS NOT NULL '
        "GROUP BY 1, 2",
        [result.window.bucket_s, since],
    )
    for r in rows:
        b = by_index.get(int(r["b"]))
        price = strongest.get(r["model"])
        if b is None:
            continue
        baseline = (
            compute_cost(
                Usage(
                    input_tokens=int(r["input_tokens"]),
                    output_tokens=int(r["output_tokens"]),
                    cache_read_tokens=int(r["cache_read_tokens"]),
                    cache_write_tokens=int(r["cache_write_tokens"]),
                    reasoning_tokens=int(r["reasoning_tokens"]),
                ),
                price,
            )
            if price is not None
            else None
        )
        if baseline is None:
            result.unpriced_turns += int(r["turns"])
            continue
        cost = float(r["cost"])
        result.routed_turns += int(r["turns"])
        result.strong_usd += baseline
        result.routed_usd += cost
        b.saving_usd = (b.saving_usd or 0.0) + (baseline - cost)
