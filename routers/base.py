"""The router interface: a pure decision over a turn's features and its candidate deployments.

The pipeline computes :class:`routers.features.TurnFeatures` once per turn, wraps each
deployment that may serve the requested model in a :class:`Candidate` (its price, window and
tier), filters them by fit (:mod:`routers.fit`) and hands both to a :class:`Router`. The router
returns a :class:`Decision`: the deployment to try first, the ordered fallbacks, a short
human-readable reason and the estimated cost of the turn (USD). Routers do no I/O and keep no
per-request state; anything that changes over time (health, cooldowns) is passed in.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from gateway.config import Deployment, Price

#: Output tokens assumed for a turn when estimating its cost before it runs (tokens).
EXPECTED_OUTPUT_TOKENS = 500


# Treated as immutable (changed with dataclasses.replace); not frozen: a frozen init costs µs per turn.
@dataclass(slots=True)
class Candidate:
    """A deployment that may serve the turn, with what routing needs to know about it.

    ``price`` is USD per million tokens (fields may be None when unknown); ``window`` is the
    input context window in tokens (None when unknown); ``tier`` is the name of the routing
    tier it belongs to and ``rank`` that tier's position (0 = cheapest tier); ``order`` is its
    position in the alias's deployment list; ``load`` its latency EWMA (ms) divided by its
    balancing weight (0 when unknown), which orders deployments of equal estimated cost.
    """

    deployment: Deployment
    price: Price
    window: int | None = None
    tier: str = "default"
    rank: int = 0
    order: int = 0
    load: float = 0.0

    @property
    def name(self) -> str:
        """The deployment name."""
        return self.deployment.name

    def estimate_cost(self, input_tokens: int, output_tokens: int = EXPECTED_OUTPUT_TOKENS) -> float | None:
        """Uncached cost of a turn of ``input_tokens`` in and ``output_tokens`` out (USD), or
        None when the price is unknown."""
        if self.price.input is None or self.price.output is None:
            return None
        return (input_tokens * self.price.input + output_tokens * self.price.output) / 1e6


# Treated as immutable (changed with dataclasses.replace); not frozen: a frozen init costs µs per turn.
@dataclass(slots=True)
class Decision:
    """Where a turn goes: ``deployment`` first, then ``fallbacks`` in order.

    ``reason`` is a short explanation (``"rules: kind=tool_digest -> cheap"``); ``policy`` the
    policy that decided; ``tier`` the chosen tier; ``score`` the learned scorer's probability
    that the strong tier is needed (learned policy only); ``cascade`` is True when the pipeline
    must validate each answer and escalate to the next deployment on failure;
    ``estimated_cost_usd`` the uncached cost estimate for the chosen deployment (USD).
    """

    deployment: str
    fallbacks: tuple[str, ...] = ()
    reason: str = ""
    estimated_cost_usd: float | None = None
    policy: str = "ordered"
    tier: str | None = None
    score: float | None = None
    cascade: bool = False
    excluded: dict[str, str] = field(default_factory=dict)

    @property
    def order(self) -> list[str]:
        """``[deployment, *fallbacks]``."""
        return [self.deployment, *self.fallbacks]

    def header(self) -> str:
        """The value of the ``x-turnstile-route`` response header: ``<deployment>; <reason>``
        (ASCII, at most 200 characters)."""
        text = f"{self.deployment}; {self.reason}"
        return text.encode("ascii", "replace").decode()[:200]

    def record(self) -> dict[str, Any]:
        """The decision as a JSON-ready dict for the transcript."""
        return {
            "route": self.deployment,
            "fallbacks": list(self.fallbacks),
            "reason": self.reason,
            "policy": self.policy,
            "tier": self.tier,
            "score": self.score,
            "cascade": self.cascade,
            "estimated_cost_usd": self.estimated_cost_usd,
            "excluded": dict(self.excluded),
        }


class Router(Protocol):
    """A routing policy. ``decide`` must be pure and fast (p99 under a millisecond for rules,
    five for learned); ``candidates`` is non-empty and already filtered by fit, in the alias's
    order."""

    name: str

    def decide(self, features: Any, candidates: list[Candidate]) -> Decision:
        """Choose the deployment order for a turn with ``features`` (a
        :class:`routers.features.TurnFeatures`)."""
        ...


def ordered_by_tier(candidates: list[Candidate], first_rank: int, input_tokens: int) -> list[Candidate]:
    """Candidates in fallback order starting at tier ``first_rank``: that tier (cheapest
    estimate first, alias order on ties), then stronger tiers upward, then cheaper tiers
    downward. Equal estimates are ordered by ``load`` (latency / weight), then alias order."""

    def cost(c: Candidate) -> tuple[float, float, int]:
        est = c.estimate_cost(input_tokens)
        return (round(est, 12) if est is not None else float("inf"), c.load, c.order)

    ranks = sorted({c.rank for c in candidates})
    up = [r for r in ranks if r >= first_rank]
    down = sorted((r for r in ranks if r < first_rank), reverse=True)
    out: list[Candidate] = []
    for r in [*up, *down]:
        out.extend(sorted((c for c in candidates if c.rank == r), key=cost))
    return out
