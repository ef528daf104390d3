"""The routing engine: per alias, build candidates, filter by fit and health, ask the policy,
apply session stickiness. One engine per gateway process (made with the ``Gateway``)."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field, replace

from gateway.config import Deployment, GatewayConfig, Price, RoutingConfig
from gateway.schema import Request
from routers.base import Candidate, Decision, Router
from routers.cascade import CascadeRouter
from routers.features import TurnFeatures, extract
from routers.fit import filter_candidates, misfit
from routers.health import HealthBoard
from routers.learned import LearnedRouter
from routers.rules import OrderedRouter, RulesRouter
from routers.sticky import apply as apply_stickiness
from routers.sticky import same_model


def known_window(dep: Deployment) -> int | None:
    """Context window of ``dep`` in tokens: ``dep.context_window`` when configured, else the
    bundled catalog's — but only when that catalog is already loaded (the server loads it at
    start-up to resolve prices); routing never pays the seconds-long litellm import on a
    request path. None when unknown (no window filtering)."""
    if dep.context_window is not None:
        return dep.context_window
    if "litellm" not in sys.modules:
        return None
    from gateway.providers.catalog import context_window

    return context_window(dep)


def make_router(cfg: RoutingConfig) -> Router:
    """The policy object for an alias's routing config."""
    if cfg.policy == "rules":
        return RulesRouter(cfg)
    if cfg.policy == "learned":
        return LearnedRouter(cfg)
    if cfg.policy == "cascade":
        return CascadeRouter(cfg)
    return OrderedRouter()


@dataclass
class RoutingEngine:
    """Routers per alias (built on first use), candidate metadata per deployment (cached: the
    context window may need litellm's table once) and the process's :class:`HealthBoard`."""

    config: GatewayConfig
    health: HealthBoard = field(default_factory=HealthBoard)
    routers: dict[str, tuple[RoutingConfig, Router]] = field(default_factory=dict)
    _base: dict[tuple[str, str], Candidate] = field(default_factory=dict)

    def routing_for(self, model: str) -> RoutingConfig | None:
        """The routing config of alias ``model``, or None (no alias or no ``routing``)."""
        by_name = self.__dict__.get("_routing_by_alias")
        if by_name is None:  # built once: the config does not change while the engine lives
            by_name = self.__dict__["_routing_by_alias"] = {}
            for alias in self.config.models:
                by_name.setdefault(alias.name, alias.routing)
        return by_name.get(model)

    def _router(self, model: str, cfg: RoutingConfig) -> Router:
        hit = self.routers.get(model)
        if hit is None:
            hit = self.routers[model] = (cfg, make_router(cfg))
        return hit[1]

    def candidate(
        self, dep: Deployment, price: Price | None, cfg: RoutingConfig | None, order: int, model: str = ""
    ) -> Candidate:
        """The :class:`Candidate` for ``dep`` in alias ``model`` (cached per alias and
        deployment; latency load refreshed per call)."""
        key = (model, dep.name)
        base = self._base.get(key)
        if base is None:
            tiers = list(cfg.tiers) if cfg else []
            tier, rank = "default", 0
            if tiers:
                tier, rank = tiers[-1], len(tiers) - 1
                for i, name in enumerate(tiers):
                    if dep.name in cfg.tiers[name]:  # type: ignore[union-attr]
                        tier, rank = name, i
                        break
            base = self._base[key] = Candidate(
                deployment=dep,
                price=price or dep.price or Price(),
                window=known_window(dep),
                tier=tier,
                rank=rank,
                order=order,
            )
        if cfg is None:  # the ordered policy never reads ``load``
            return base
        lat = self.health.latency(dep.name)
        if lat is None:
            return base
        weight = (cfg.weights.get(dep.name, 1.0) if cfg else 1.0) or 1.0
        return replace(base, load=lat / weight)

    def window(self, dep: Deployment) -> int | None:
        """Context window of ``dep`` (tokens) from any cached candidate, else the catalog."""
        for (_, name), cand in self._base.items():
            if name == dep.name:
                return cand.window
        return known_window(dep)

    def _alias_order(
        self, model: str, deployments: list[Deployment], prices: dict[str, Price], f: TurnFeatures
    ) -> Decision | None:
        """The ordered policy's decision when every deployment fits and is healthy (the common
        case, decided without the general path's lists and copies), else None."""
        unavailable = self.health.unavailable
        first: Candidate | None = None
        for i, d in enumerate(deployments):
            c = self._base.get((model, d.name)) or self.candidate(d, prices.get(d.name), None, i, model)
            if misfit(f, c) is not None or unavailable(d.name) is not None:
                return None
            if first is None:
                first = c
        if first is None:
            return None
        return Decision(
            deployment=first.name,
            fallbacks=tuple(d.name for d in deployments[1:]),
            reason="ordered: alias order",
            estimated_cost_usd=first.estimate_cost(f.input_tokens),
            policy="ordered",
        )

    def decide(
        self,
        request: Request,
        deployments: list[Deployment],
        prices: dict[str, Price],
        *,
        stream: bool = False,
        features: TurnFeatures | None = None,
    ) -> tuple[Decision, TurnFeatures]:
        """Route one turn over ``deployments`` (the alias's enabled deployments, alias order).

        Returns the decision (fallbacks truncated to ``max_attempts`` for routed aliases) and
        the features used. Never raises for a fit problem: when nothing fits, every
        deployment stays a candidate and the pipeline's checks give the precise error.
        """
        cfg = self.routing_for(request.model)
        # Only the rules and learned policies read the turn's text (patterns, code, scorer).
        f = features or extract(request, text=cfg is not None and cfg.policy in ("rules", "learned"))
        if cfg is None and not f.signed_open_loop:
            plain = self._alias_order(request.model, deployments, prices, f)
            if plain is not None:
                return plain, f
        cands = [
            self.candidate(d, prices.get(d.name), cfg, i, request.model) for i, d in enumerate(deployments)
        ]
        usable, excluded = filter_candidates(f, cands, self.health.unavailable)
        if cfg is None:
            decision = OrderedRouter().decide(f, usable)
            decision = _keep_signed_loop(decision, f, usable)
        else:
            router = self._router(request.model, cfg)
            if isinstance(router, CascadeRouter):
                decision = router.decide(f, usable, stream=stream)
            else:
                decision = router.decide(f, usable)
            if cfg.sticky and cfg.policy != "ordered":
                decision = apply_stickiness(decision, f, usable, cfg.horizon_turns)
            else:
                decision = _keep_signed_loop(decision, f, usable)
            keep = max(1, cfg.max_attempts) - 1
            decision = replace(decision, fallbacks=decision.fallbacks[:keep])
        if excluded or decision.excluded:  # routers never set it: skip the copy when empty
            decision = replace(decision, excluded=excluded)
        return decision, f


def _keep_signed_loop(decision: Decision, f: TurnFeatures, usable: list[Candidate]) -> Decision:
    """C16 for policies without cost stickiness: an open tool loop with signed thinking goes
    back to the model that signed it."""
    if not f.signed_open_loop or f.current is None:
        return decision
    current = next((c for c in usable if same_model(f.current, c)), None)
    if current is None or current.name == decision.deployment:
        return decision
    order = [current.name, *(n for n in decision.order if n != current.name)]
    return replace(
        decision,
        deployment=order[0],
        tier=current.tier if decision.tier is not None else None,
        fallbacks=tuple(order[1:]),
        reason=f"{decision.reason}; kept on {current.name}: open tool loop with signed thinking",
    )
