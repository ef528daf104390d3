"""What cost-based routing would have chosen on recorded sessions, and what it would have cost.

For each conversation the replay routes over the alias named after the conversation's recorded
dialect (``anthropic_messages`` / ``openai_chat``) in a routing configuration (default:
:data:`DEFAULT_ROUTING_PATH`, a two-tier alias per provider). Each turn that ran through the
pipeline is routed with :meth:`routers.engine.RoutingEngine.decide` (pure: features, fit,
policy, stickiness) and priced three ways on the turn's token usage (the recorded usage, or
Turnstile's token estimate when the recording has none):

* ``recorded_usd``: the recorded cost of the turn, or the catalog price of the recorded model
  when the recording has no cost (turns of models with no catalog price are left out of all
  three sums and counted in ``unpriced_turns``; a turn with a recorded cost but no recorded
  token usage counts its recorded cost in all three sums);
* ``routed_usd``: the chosen deployment's catalog price, **net of lost prompt cache**: when the
  route switches model from the previous routed turn, the prefix the previous deployment had
  cached (the turn's recorded cache-read tokens) is not in the new deployment's cache, so it
  is paid in full: at the new deployment's cache-write price where it has one (the prefix is
  written to its cache, as a client marking cache breakpoints is billed) and its input price
  otherwise. Every switch is treated as cold, even back to a model used earlier within its
  cache lifetime (an upper bound). ``cache_loss_usd`` is that extra paid on switches (already
  inside ``routed_usd``), so the saving shown is what a bill would show;
* ``strong_usd``: always the strongest tier's first deployment (no switches), the baseline that
  separates the saving of routing from the saving of a different model family.

Only cost is estimated: a replay cannot know whether the cheap tier would have answered as
well (the offline quality estimate is ``turnstile route-eval``). The chosen deployment's
answer would also have differed in length; the recorded output token count is used.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from gateway.accounting import compute_cost
from gateway.config import GatewayConfig, Price, load_config
from gateway.schema import Provenance, Request, Usage

DEFAULT_ROUTING_PATH = Path(__file__).resolve().parent / "routing.yaml"

#: Marker for a turn that was not routed (it did not run through the pipeline).
NOT_ROUTED = "-"


def load_routing(path: Path | None = None) -> GatewayConfig:
    """The replay routing configuration at ``path`` (default :data:`DEFAULT_ROUTING_PATH`).
    Raises :class:`gateway.errors.ConfigError` when it cannot be read or does not validate."""
    return load_config(path or DEFAULT_ROUTING_PATH)


def empty_totals() -> dict[str, Any]:
    """Zeroed routing totals (the shape of ``Report.routing``)."""
    return {
        "conversations": 0,
        "turns": 0,
        "by_tier": {},
        "switches": 0,
        "priced_turns": 0,
        "unpriced_turns": 0,
        "recorded_usd": 0.0,
        "routed_usd": 0.0,
        "cache_loss_usd": 0.0,
        "strong_usd": 0.0,
    }


def saving(recorded: float, routed: float) -> float | None:
    """``1 - routed / recorded`` (fraction of the recorded cost saved), None when nothing was
    recorded."""
    return None if recorded <= 0 else round(1.0 - routed / recorded, 4)


@dataclass
class ConversationRoute:
    """Routing state and tallies of one conversation (``tiers[k]`` is turn ``k``'s tier or
    :data:`NOT_ROUTED`)."""

    alias: str
    tiers: list[str]
    previous: str | None = None
    by_tier: dict[str, int] = field(default_factory=dict)
    switches: int = 0
    priced_turns: int = 0
    unpriced_turns: int = 0
    recorded_usd: float = 0.0
    routed_usd: float = 0.0
    cache_loss_usd: float = 0.0
    strong_usd: float = 0.0


class ReplayRouting:
    """Routes replayed turns with one :class:`routers.engine.RoutingEngine` (one per file, so
    results do not depend on how files are spread over workers)."""

    def __init__(self, config: GatewayConfig) -> None:
        from gateway.providers.catalog import resolve_price
        from routers.engine import RoutingEngine

        self.config = config
        self.engine = RoutingEngine(config)
        self.deployments = {d.name: d for d in config.deployments}
        self.prices: dict[str, Price] = {d.name: resolve_price(d) for d in config.deployments}
        self.aliases = {a.name: a for a in config.models}

    def start(self, dialect: str, turns: int) -> ConversationRoute | None:
        """State for a conversation of ``turns`` turns recorded in ``dialect``, or None when the
        configuration has no alias for that dialect."""
        alias = self.aliases.get(dialect)
        if alias is None:
            return None
        return ConversationRoute(alias=alias.name, tiers=[NOT_ROUTED] * turns)

    def _strong(self, route: ConversationRoute) -> str:
        alias = self.aliases[route.alias]
        if alias.routing and alias.routing.tiers:
            last = list(alias.routing.tiers.values())[-1]
            if last:
                return last[0]
        return alias.deployments[0]

    def turn(
        self,
        route: ConversationRoute,
        k: int,
        request: Request,
        usage: Usage,
        recorded_usd: float | None,
        *,
        repriceable: bool = True,
    ) -> str:
        """Route turn ``k`` (its parsed ``request``; ``usage`` its tokens) and add its costs.
        ``recorded_usd`` is the turn's recorded (or catalog-estimated) cost, None when unknown.
        ``repriceable`` False (a recorded cost but no recorded tokens, e.g. pi-mono's errored
        turns recorded at cost 0) counts ``recorded_usd`` unchanged in all three sums: there are
        no tokens to price on another model. Returns the chosen deployment."""
        from routers.features import extract

        deps = [self.deployments[n] for n in self.aliases[route.alias].deployments]
        req = request.model_copy(update={"model": route.alias})
        f = extract(req)
        prev = self.deployments.get(route.previous) if route.previous else None
        # The session's current model is the one routing chose for the previous turn.
        current = Provenance(api=prev.api, provider=prev.provider, model=prev.model) if prev else None
        f = replace(f, current=current)
        decision, _ = self.engine.decide(req, deps, self.prices, features=f)
        chosen = decision.deployment
        tier = decision.tier or "default"
        route.tiers[k] = tier
        route.by_tier[tier] = route.by_tier.get(tier, 0) + 1
        switched = route.previous is not None and chosen != route.previous
        route.switches += switched
        route.previous = chosen
        routed_usage = usage
        if switched and usage.cache_read_tokens:
            routed_usage = usage.model_copy(
                update={
                    "cache_read_tokens": 0,
                    "cache_write_tokens": usage.cache_write_tokens + usage.cache_read_tokens,
                }
            )
        routed = compute_cost(routed_usage, self.prices[chosen])
        warm = compute_cost(usage, self.prices[chosen]) if routed_usage is not usage else routed
        strong = compute_cost(usage, self.prices[self._strong(route)])
        if not repriceable:
            routed = warm = strong = recorded_usd
        if recorded_usd is None or routed is None or strong is None:
            route.unpriced_turns += 1
        else:
            route.priced_turns += 1
            route.recorded_usd += recorded_usd
            route.routed_usd += routed
            route.cache_loss_usd += routed - (warm if warm is not None else routed)
            route.strong_usd += strong
        return chosen


def conversation_entry(file: str, name: str, route: ConversationRoute) -> dict[str, Any]:
    """The JSON-ready per-conversation routing line of the report."""
    return {
        "file": file,
        "conversation": name,
        "alias": route.alias,
        "turns": sum(route.by_tier.values()),
        "by_tier": dict(sorted(route.by_tier.items())),
        "switches": route.switches,
        "priced_turns": route.priced_turns,
        "unpriced_turns": route.unpriced_turns,
        "recorded_usd": round(route.recorded_usd, 6),
        "routed_usd": round(route.routed_usd, 6),
        "cache_loss_usd": round(route.cache_loss_usd, 6),
        "strong_usd": round(route.strong_usd, 6),
        "saving": saving(route.recorded_usd, route.routed_usd),
        "route": route.tiers,
    }


def add_conversation(totals: dict[str, Any], route: ConversationRoute) -> None:
    """Add one conversation's tallies into ``totals`` (:func:`empty_totals`)."""
    totals["conversations"] += 1
    for tier, n in route.by_tier.items():
        totals["by_tier"][tier] = totals["by_tier"].get(tier, 0) + n
        totals["turns"] += n
    for k in (
        "switches",
        "priced_turns",
        "unpriced_turns",
        "recorded_usd",
        "routed_usd",
        "cache_loss_usd",
        "strong_usd",
    ):
        totals[k] += getattr(route, k)


def merge_totals(into: dict[str, Any], other: dict[str, Any]) -> None:
    """Add routing totals ``other`` into ``into``."""
    for k, v in other.items():
        if k == "by_tier":
            for tier, n in v.items():
                into["by_tier"][tier] = into["by_tier"].get(tier, 0) + n
        else:
            into[k] += v


def totals_dict(totals: dict[str, Any]) -> dict[str, Any]:
    """The totals as JSON-ready data (USD rounded to 1e-6, saving fractions added)."""
    out = dict(totals)
    out["by_tier"] = dict(sorted(totals["by_tier"].items()))
    for k in ("recorded_usd", "routed_usd", "cache_loss_usd", "strong_usd"):
        out[k] = round(totals.get(k, 0.0), 6)
    out["saving_vs_recorded"] = saving(totals["recorded_usd"], totals["routed_usd"])
    out["saving_vs_strong"] = saving(totals["strong_usd"], totals["routed_usd"])
    return out
