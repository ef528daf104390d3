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


_TOKENS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens")

_GROUPS = (
    "SELECT {bucket} AS b, t.deployment AS deployment, t.requested_model AS model, "
    'CASE WHEN t.status < 400 AND t.cost_usd IS NOT NULL AND t.attempts LIKE \'%"tier":"%\' '
    "THEN 1 ELSE 0 END AS routed, "
    "COUNT(*) AS turns, SUM(CASE WHEN t.status >= 400 THEN 1 ELSE 0 END) AS errors, "
    "COALESCE(SUM(t.cost_usd), 0) AS cost, COALESCE(SUM(t.latency_ms), 0) AS latency_sum, "
    "COUNT(t.latency_ms) AS latency_n, "
    + ", ".join(f"COALESCE(SUM(t.{c}), 0) AS {c}" for c in _TOKENS)
    + " FROM turns t WHERE t.ts >= ? AND "
    + NOT_A_STEP
    + " GROUP BY 1, 2, 3, 4"
)
"""One pass over the window: its turns grouped by bucket, deployment, model and whether a
routing policy placed them on a tier (and they have a cost); everything else is summed here."""


async def overview(
    reader: TranscriptReader,
    window: Window,
    strongest: dict[str, Price],
    now: float | None = None,
) -> Overview:
    """The buckets of ``window`` ending now (``now``: epoch seconds, for tests), with routing
    savings priced at ``strongest`` (:func:`strongest_prices`) and the window's deployments (the
    20 with the most turns: ``{deployment, turns, errors, cost, latency_ms}``, latency the mean).
    One query (:data:`_GROUPS`), one pass over the window's rows."""
    now = time.time() if now is None else now
    first = int((now - window.span_s) // window.bucket_s) + 1
    last = int(now // window.bucket_s)
    since = first * window.bucket_s
    rows = await reader.rows(_GROUPS.format(bucket=_BUCKET[reader.dialect]), [window.bucket_s, since])
    by_index = {i: Bucket(start=float(i * window.bucket_s)) for i in range(first, last + 1)}
    result = Overview(window, list(by_index.values()))
    deployments: dict[str, dict[str, Any]] = {}
    routed: dict[tuple[int, str], dict[str, float]] = {}
    for r in rows:
        b = by_index.get(int(r["b"]))
        if b is None:
            continue
        b.turns += int(r["turns"])
        b.errors += int(r["errors"] or 0)
        b.spend_usd += float(r["cost"] or 0.0)
        if r["deployment"] is not None:
            d = deployments.setdefault(
                r["deployment"],
                {"deployment": r["deployment"], "turns": 0, "errors": 0, "cost": 0.0, "n": 0, "ms": 0.0},
            )
            d["turns"] += int(r["turns"])
            d["errors"] += int(r["errors"] or 0)
            d["cost"] += float(r["cost"] or 0.0)
            d["n"] += int(r["latency_n"] or 0)
            d["ms"] += float(r["latency_sum"] or 0.0)
        if r["routed"] and strongest:
            sums = routed.setdefault(
                (int(r["b"]), r["model"]), dict.fromkeys((*_TOKENS, "cost", "turns"), 0.0)
            )
            for c in (*_TOKENS, "cost", "turns"):
                sums[c] += float(r[c] or 0)
    for d in deployments.values():
        d["latency_ms"] = d.pop("ms") / d["n"] if d["n"] else None
        del d["n"]
    result.deployments = sorted(deployments.values(), key=lambda d: -d["turns"])[:20]
    for (index, model), sums in routed.items():
        _saving(result, by_index[index], strongest.get(model), sums)
    return result


def _saving(result: Overview, bucket: Bucket, price: Price | None, sums: dict[str, float]) -> None:
    """Add one bucket's routed turns of one alias (summed tokens, cost and turns) to its saving
    and the window's totals (see the module docstring); without a price, to ``unpriced_turns``."""
    baseline = None
    if price is not None:
        usage = Usage(
            input_tokens=int(sums["input_tokens"]),
            output_tokens=int(sums["output_tokens"]),
            cache_read_tokens=int(sums["cache_read_tokens"]),
            cache_write_tokens=int(sums["cache_write_tokens"]),
            reasoning_tokens=int(sums["reasoning_tokens"]),
        )
        baseline = compute_cost(usage, price)
    if baseline is None:
        result.unpriced_turns += int(sums["turns"])
        return
    result.routed_turns += int(sums["turns"])
    result.strong_usd += baseline
    result.routed_usd += sums["cost"]
    bucket.saving_usd = (bucket.saving_usd or 0.0) + (baseline - sums["cost"])
