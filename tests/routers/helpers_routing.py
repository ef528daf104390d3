"""Candidates and routing configs for router tests."""

from __future__ import annotations

from gateway.config import Deployment, Price, RoutingConfig
from routers.base import Candidate

CHEAP_PRICE = Price(input=0.15, output=0.6, cache_read=0.015)
STRONG_PRICE = Price(input=3.0, output=15.0, cache_read=0.3)


def cand(
    name: str,
    tier: str,
    rank: int,
    price: Price,
    *,
    order: int = 0,
    window: int | None = 128_000,
    api: str = "anthropic_messages",
    model: str | None = None,
    **caps: bool,
) -> Candidate:
    """A candidate deployment ``name`` of ``tier``."""
    dep = Deployment(name=name, api=api, model=model or name, **caps)  # type: ignore[arg-type]
    return Candidate(deployment=dep, price=price, window=window, tier=tier, rank=rank, order=order)


def two_tiers(**kw: object) -> tuple[RoutingConfig, list[Candidate]]:
    """A cheap tier (``mini``) and a strong tier (``big``), alias order big, mini."""
    cfg = RoutingConfig.model_validate(
        {"policy": "rules", "tiers": {"cheap": ["mini"], "strong": ["big"]}, **kw}
    )
    return cfg, [
        cand("big", "strong", 1, STRONG_PRICE, order=0),
        cand("mini", "cheap", 0, CHEAP_PRICE, order=1),
    ]
