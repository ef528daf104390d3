"""Session stickiness with cache awareness.

A session that moves to another model loses its warm prompt cache (the next turn pays the
history at the new model's *uncached* input price instead of the old model's cache-read
price) and its signed thinking (only valid for the model that signed it). So a router's
proposal to switch to a tier no stronger than the current one (a switch made to save money) is
kept only when the saving expected over the next ``horizon`` turns is
larger than that one-off cost, and never while a tool loop with signed thinking is open
(handed case C16: the continuation goes back to the model that signed the thinking, byte-
identical; if that model cannot serve, the pipeline's thinking policy strips the foreign
thinking and disables thinking for the request).

Per-turn warm cost of staying on model m (USD):
``history * cache_read(m) + (input - history) * input(m) + out * output(m)``; a switch to n
adds ``history * (input(n) - cache_read(n))`` once. A switch to a stronger tier (made for
quality) is always kept, except inside an open signed tool loop. Unknown prices are treated as "no saving"
(stay).
"""

from __future__ import annotations

from dataclasses import replace

from gateway.schema import Provenance
from routers.base import EXPECTED_OUTPUT_TOKENS, Candidate, Decision
from routers.features import TurnFeatures


def same_model(prov: Provenance, cand: Candidate) -> bool:
    """True when ``cand`` is the model that produced ``prov`` (same API and provider; model
    equal or unrecorded)."""
    dep = cand.deployment
    return (dep.api, dep.provider) == (prov.api, prov.provider) and prov.model in ("", dep.model)


def warm_turn_cost(cand: Candidate, features: TurnFeatures, *, warm: bool) -> float | None:
    """Cost of one turn on ``cand`` (USD) with the history cached (``warm``) or not; None when
    the price is unknown."""
    p = cand.price
    if p.input is None or p.output is None:
        return None
    hist = min(features.history_tokens, features.input_tokens)
    fresh = features.input_tokens - hist
    cached_rate = p.cache_read if (warm and p.cache_read is not None) else p.input
    return (hist * cached_rate + fresh * p.input + EXPECTED_OUTPUT_TOKENS * p.output) / 1e6


def apply(decision: Decision, features: TurnFeatures, candidates: list[Candidate], horizon: int) -> Decision:
    """``decision`` or, when switching away from the session's current model does not pay off
    (or would break an open signed tool loop), the same decision with the current model moved
    first. ``candidates`` are the fitting, healthy ones."""
    if features.current is None:
        return decision
    current = next((c for c in candidates if same_model(features.current, c)), None)
    if current is None or current.name == decision.deployment:
        return decision
    proposed = next((c for c in candidates if c.name == decision.deployment), None)
    order = [current.name, *(n for n in decision.order if n != current.name)]
    if features.signed_open_loop:
        return replace(
            decision,
            deployment=order[0],
            tier=current.tier,
            fallbacks=tuple(order[1:]),
            reason=f"{decision.reason}; kept on {current.name}: open tool loop with signed thinking",
            estimated_cost_usd=warm_turn_cost(current, features, warm=True),
        )
    if proposed is None:
        return decision
    if proposed.rank > current.rank:
        return replace(decision, reason=f"{decision.reason}; escalates from {current.name}")
    stay = warm_turn_cost(current, features, warm=True)
    move_warm = warm_turn_cost(proposed, features, warm=True)
    move_cold = warm_turn_cost(proposed, features, warm=False)
    if stay is None or move_warm is None or move_cold is None:
        return decision
    switch_cost = move_cold - move_warm
    saving = horizon * (stay - move_warm)
    if saving > switch_cost:
        return replace(
            decision,
            reason=f"{decision.reason}; switch pays: saves ${saving:.6f} > cache loss ${switch_cost:.6f}",
        )
    return replace(
        decision,
        deployment=order[0],
        tier=current.tier,
        fallbacks=tuple(order[1:]),
        reason=f"{decision.reason}; sticky on {current.name}: saving ${saving:.6f} "
        f"<= cache loss ${switch_cost:.6f}",
        estimated_cost_usd=stay,
    )
