"""The replay's routed cost is net of the prompt cache a switch loses."""

from __future__ import annotations

import pytest

from gateway.config import parse_config
from gateway.replay.routing import ReplayRouting, add_conversation, empty_totals, totals_dict
from gateway.schema import Request, TextPart, Usage, UserMessage

PRICES = {
    "mini": {"input": 1.0, "output": 4.0, "cache_read": 0.1, "cache_write": 1.25},
    "big": {"input": 10.0, "output": 40.0, "cache_read": 1.0},  # no write price: input price
}


def _routing() -> ReplayRouting:
    cfg = parse_config(
        {
            "deployments": [
                {"name": n, "api": "openai_chat", "model": n, "price": p} for n, p in PRICES.items()
            ],
            "models": [
                {
                    "name": "openai_chat",
                    "deployments": ["mini", "big"],
                    "routing": {
                        "policy": "rules",
                        "tiers": {"cheap": ["mini"], "strong": ["big"]},
                        "default_tier": "cheap",
                        "rules": [{"kind": ["fresh_user"], "text_matches": "hard", "tier": "strong"}],
                    },
                }
            ],
        }
    )
    return ReplayRouting(cfg)


def _req(text: str) -> Request:
    return Request(model="x", messages=[UserMessage(content=[TextPart(text=text)])])


def test_a_switch_pays_the_cached_prefix_at_full_price_and_reports_it() -> None:
    routing = _routing()
    route = routing.start("openai_chat", 3)
    assert route is not None
    usage = Usage(input_tokens=1000, output_tokens=100, cache_read_tokens=9000)
    assert routing.turn(route, 0, _req("easy"), usage, 0.01) == "mini"
    assert routing.turn(route, 1, _req("easy again"), usage, 0.01) == "mini"
    assert route.cache_loss_usd == 0.0  # no switch: the cache stays warm
    assert routing.turn(route, 2, _req("a hard one"), usage, 0.01) == "big"  # escalation: a switch
    warm = (1000 * 10.0 + 9000 * 1.0 + 100 * 40.0) / 1e6
    cold = (1000 * 10.0 + 9000 * 10.0 + 100 * 40.0) / 1e6  # big has no write price: input price
    assert route.switches == 1
    assert route.cache_loss_usd == pytest.approx(cold - warm)
    mini_turn = (1000 * 1.0 + 9000 * 0.1 + 100 * 4.0) / 1e6
    assert route.routed_usd == pytest.approx(2 * mini_turn + cold)
    totals = empty_totals()
    add_conversation(totals, route)
    out = totals_dict(totals)
    assert out["cache_loss_usd"] == pytest.approx(cold - warm, abs=1e-6)
    assert out["routed_usd"] == pytest.approx(2 * mini_turn + cold, abs=1e-6)
