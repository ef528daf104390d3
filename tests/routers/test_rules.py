"""The rules and ordered policies."""

from __future__ import annotations

from helpers_routing import two_tiers
from route_turns import turn

from routers.features import extract
from routers.rules import OrderedRouter, RulesRouter

RULES = [
    {"kind": ["tool_digest", "final_answer"], "tier": "cheap"},
    {"kind": ["fresh_user"], "text_matches": r"\b(plan|design|why)\b", "tier": "strong"},
    {"kind": ["fresh_user"], "max_input_tokens": 3000, "tier": "cheap"},
]


def test_tool_result_digestion_goes_to_the_cheap_tier_with_the_strong_as_fallback() -> None:
    cfg, cands = two_tiers(rules=RULES)
    d = RulesRouter(cfg).decide(extract(turn(8)), cands)
    assert d.deployment == "mini" and d.fallbacks == ("big",) and d.tier == "cheap"
    assert "rule[0]" in d.reason and d.estimated_cost_usd is not None and d.estimated_cost_usd > 0


def test_first_matching_rule_wins_and_unmatched_turns_go_to_the_default_tier() -> None:
    cfg, cands = two_tiers(rules=RULES)
    router = RulesRouter(cfg)
    assert router.decide(extract(turn(2)), cands).deployment == "mini"  # short fresh request: rule[2]
    d = router.decide(extract(turn(22)), cands)  # tool error retry: no rule
    assert d.deployment == "big" and d.reason.startswith("rules: no rule matched")


def test_text_rule_sends_planning_requests_to_the_strong_tier() -> None:
    from gateway.schema import Request, TextPart, UserMessage

    cfg, cands = two_tiers(rules=RULES)
    req = Request(model="auto", messages=[UserMessage(content=[TextPart(text="Please plan the migration")])])
    assert RulesRouter(cfg).decide(extract(req), cands).deployment == "big"


def test_a_tier_without_a_fitting_deployment_is_served_by_the_next_tier_up() -> None:
    cfg, cands = two_tiers(rules=RULES)
    only_big = [c for c in cands if c.name == "big"]
    d = RulesRouter(cfg).decide(extract(turn(8)), only_big)
    assert d.deployment == "big" and "no cheap deployment fits" in d.reason


def test_equal_price_deployments_are_balanced_by_latency_over_weight() -> None:
    from dataclasses import replace

    from helpers_routing import CHEAP_PRICE, cand

    cfg, cands = two_tiers(rules=RULES)
    twin = cand("mini-2", "cheap", 0, CHEAP_PRICE, order=2)
    slow = replace(cands[1], load=900.0)
    d = RulesRouter(cfg).decide(extract(turn(8)), [cands[0], slow, replace(twin, load=100.0)])
    assert d.order == ["mini-2", "mini", "big"]


def test_ordered_policy_keeps_alias_order() -> None:
    _, cands = two_tiers()
    d = OrderedRouter().decide(extract(turn(8)), cands)
    assert d.order == ["big", "mini"] and d.policy == "ordered"
