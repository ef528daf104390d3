"""The ``rules`` policy: configurable conditions over turn features mapping to tiers.

Rules (:class:`gateway.config.RouteRule`) are tried in order; the first whose every set
condition holds names the tier; otherwise ``default_tier`` (default: the strongest). Within
the tier the cheapest estimated deployment goes first; fallbacks continue up the tiers, then
down (:func:`routers.base.ordered_by_tier`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from operator import attrgetter

from gateway.config import RouteRule, RoutingConfig
from routers.base import Candidate, Decision, ordered_by_tier
from routers.features import TurnFeatures

_ORDER = attrgetter("order")


@dataclass(frozen=True)
class CompiledRule:
    """A rule with its regex compiled."""

    rule: RouteRule
    pattern: re.Pattern[str] | None

    def matches(self, f: TurnFeatures) -> bool:
        """True when every condition set on the rule holds for ``f``."""
        r = self.rule
        if r.kind is not None and f.kind not in r.kind:
            return False
        if r.min_input_tokens is not None and f.input_tokens < r.min_input_tokens:
            return False
        if r.max_input_tokens is not None and f.input_tokens > r.max_input_tokens:
            return False
        if r.tools is not None and bool(f.tools) != r.tools:
            return False
        if r.images is not None and bool(f.images) != r.images:
            return False
        if r.code is not None and f.has_code != r.code:
            return False
        if r.thinking is not None and f.thinking != r.thinking:
            return False
        if r.json_mode is not None and f.json_mode != r.json_mode:
            return False
        if r.min_depth is not None and f.depth < r.min_depth:
            return False
        if r.max_depth is not None and f.depth > r.max_depth:
            return False
        if r.min_tool_errors is not None and f.recent_tool_errors < r.min_tool_errors:
            return False
        return not (self.pattern is not None and not self.pattern.search(f.text))

    def describe(self, index: int) -> str:
        """``rule[i] <conditions> -> tier`` for the route reason."""
        conds = self.rule.model_dump(exclude_none=True, exclude={"tier"})
        inner = ",".join(f"{k}={'|'.join(v) if isinstance(v, list) else v}" for k, v in conds.items())
        return f"rule[{index}] {inner or 'always'} -> {self.rule.tier}"


def compile_rules(rules: list[RouteRule]) -> list[CompiledRule]:
    """Compile each rule's ``text_matches`` (case-insensitive)."""
    return [
        CompiledRule(r, re.compile(r.text_matches, re.IGNORECASE) if r.text_matches else None) for r in rules
    ]


def tier_rank(cfg: RoutingConfig, tier: str) -> int:
    """Position of ``tier`` in ``cfg.tiers`` (0 = cheapest)."""
    return list(cfg.tiers).index(tier)


def strongest(cfg: RoutingConfig) -> str:
    """The configured default tier or the last (strongest) one."""
    return cfg.default_tier or list(cfg.tiers)[-1]


def decide_tier(cfg: RoutingConfig, rules: list[CompiledRule], f: TurnFeatures) -> tuple[str, str] | None:
    """``(tier, reason)`` of the first matching rule, or None."""
    for i, r in enumerate(rules):
        if r.matches(f):
            return r.rule.tier, r.describe(i)
    return None


def decision_for_tier(
    policy: str,
    tier: str,
    reason: str,
    cfg: RoutingConfig,
    candidates: list[Candidate],
    f: TurnFeatures,
    **extra: object,
) -> Decision:
    """The :class:`Decision` sending the turn to ``tier`` (its cheapest fitting deployment),
    fallbacks up then down the tiers. If the tier has no fitting candidate the next tier up
    serves, and the reason says so."""
    rank = tier_rank(cfg, tier)
    order = ordered_by_tier(candidates, rank, f.input_tokens)
    first = order[0]
    if first.tier != tier:
        reason = f"{reason}; no {tier} deployment fits, using {first.tier}"
    return Decision(
        deployment=first.name,
        fallbacks=tuple(c.name for c in order[1:]),
        reason=reason,
        estimated_cost_usd=first.estimate_cost(f.input_tokens),
        policy=policy,
        tier=first.tier,
        **extra,  # type: ignore[arg-type]
    )


class RulesRouter:
    """The ``rules`` policy for one alias."""

    name = "rules"

    def __init__(self, cfg: RoutingConfig) -> None:
        self.cfg = cfg
        self.rules = compile_rules(cfg.rules)

    def decide(self, features: TurnFeatures, candidates: list[Candidate]) -> Decision:
        """First matching rule's tier, else the default tier."""
        hit = decide_tier(self.cfg, self.rules, features)
        tier, reason = hit if hit else (strongest(self.cfg), f"no rule matched -> {strongest(self.cfg)}")
        return decision_for_tier(self.name, tier, f"rules: {reason}", self.cfg, candidates, features)


class OrderedRouter:
    """The ``ordered`` policy: the alias's deployments in their configured order."""

    name = "ordered"

    def decide(self, features: TurnFeatures, candidates: list[Candidate]) -> Decision:
        """Alias order, primary first."""
        order = sorted(candidates, key=_ORDER)
        return Decision(
            deployment=order[0].name,
            fallbacks=tuple(c.name for c in order[1:]),
            reason="ordered: alias order",
            estimated_cost_usd=order[0].estimate_cost(features.input_tokens),
            policy=self.name,
        )
