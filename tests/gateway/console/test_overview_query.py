"""The overview's numbers (gateway/console/overview_query.py) on SQLite and PostgreSQL: turns,
errors and spend per bucket of the window, tool-loop steps and older turns left out, and the
routing saving priced at the alias's strongest tier."""

from __future__ import annotations

from typing import Any

import pytest
from console_support import Transcript

from gateway.config import Price, parse_config
from gateway.console.overview_query import WINDOWS, overview, strongest_prices
from gateway.transcript import TurnRecord

CONFIG = parse_config(
    {
        "deployments": [
            {"name": "cheap", "api": "demo", "model": "m1"},
            {"name": "strong", "api": "demo", "model": "m2"},
            {"name": "loose", "api": "demo", "model": "m3"},
            {"name": "unpriced", "api": "demo", "model": "m4"},
        ],
        "models": [
            {
                "name": "auto",
                "deployments": ["cheap", "strong"],
                "routing": {"policy": "rules", "tiers": {"cheap": ["cheap"], "strong": ["strong"]}},
            },
            {  # "loose" is in no tier: it joins the strongest, after the tier's own deployments
                "name": "wide",
                "deployments": ["cheap", "unpriced", "loose"],
                "routing": {"policy": "rules", "tiers": {"cheap": ["cheap"], "strong": ["unpriced"]}},
            },
            {"name": "plain", "deployments": ["cheap"]},
        ],
    }
)
PRICES = {
    "cheap": Price(input=1, output=2),
    "strong": Price(input=10, output=20),
    "loose": Price(input=5, output=5),
}
NOW = 600_030.0  # 30 s into a minute


def _routed(tier: str) -> list[dict[str, Any]]:
    return [{"kind": "route", "route": "cheap", "reason": "rules", "policy": "rules", "tier": tier}]


def _row(rid: str, ago: float, **kw: Any) -> TurnRecord:
    fields: dict[str, Any] = {
        "client_dialect": "openai_chat",
        "stream": False,
        "status": 200,
        "deployment": "cheap",
    }
    fields.update(kw)
    return TurnRecord(request_id=rid, ts=NOW - ago, **fields)


def test_the_strongest_tier_is_priced_by_its_first_deployment_with_a_price() -> None:
    got = strongest_prices(CONFIG, PRICES)
    assert got == {"auto": PRICES["strong"], "wide": PRICES["loose"]}  # "plain" has no tiers


async def test_buckets_count_turns_errors_spend_and_what_routing_saved(transcript: Transcript) -> None:
    usage = {"input_tokens": 1000, "output_tokens": 100}
    await transcript.load(
        [
            _row(
                "routed", 10, requested_model="auto", usage=usage, cost_usd=0.0012, attempts=_routed("cheap")
            ),
            _row("failed", 12, requested_model="auto", status=502, deployment="strong", error="no"),
            _row("earlier", 70, requested_model="plain", cost_usd=0.5, usage=usage),
            _row("loop.step1", 11, requested_model="plain", cost_usd=9.0),  # in its turn's row already
            _row("old", 4000, requested_model="plain", cost_usd=7.0),  # outside the hour
            _row("wide", 20, requested_model="wide", usage=usage, cost_usd=0.001, attempts=_routed("cheap")),
            _row("nocost", 25, requested_model="auto", usage=usage, cost_usd=None, attempts=_routed("cheap")),
        ]
    )
    ov = await overview(transcript.reader, WINDOWS["1h"], strongest_prices(CONFIG, PRICES), now=NOW)
    assert len(ov.buckets) == 60 and ov.buckets[-1].start == 600_000.0
    last, before = ov.buckets[-1], ov.buckets[-2]
    assert (last.turns, last.errors) == (4, 1)
    assert last.spend_usd == pytest.approx(0.0022)
    assert (before.turns, before.spend_usd) == (1, pytest.approx(0.5))
    assert (ov.turns, ov.errors, ov.spend_usd) == (5, 1, pytest.approx(0.5022))
    # auto: 1000 in + 100 out at the strong tier's price is $0.012, it cost $0.0012;
    # wide: at "loose" (the strongest tier's only priced deployment) $0.0055, it cost $0.001
    assert last.saving_usd == pytest.approx(0.0108 + 0.0045)
    assert before.saving_usd is None
    assert ov.routed_turns == 2 and ov.unpriced_turns == 0
    assert (ov.strong_usd, ov.routed_usd) == (pytest.approx(0.0175), pytest.approx(0.0022))
    assert ov.labels()[-1] == "22:40"  # 600000 s after the epoch, UTC
    by_dep = {d["deployment"]: d for d in ov.deployments}
    assert by_dep["cheap"]["turns"] == 4 and by_dep["strong"]["errors"] == 1


async def test_routed_turns_of_an_alias_without_a_strong_price_are_counted_as_unpriced(
    transcript: Transcript,
) -> None:
    await transcript.load(
        [
            _row(
                "r",
                5,
                requested_model="auto",
                usage={"input_tokens": 10},
                cost_usd=0.1,
                attempts=_routed("cheap"),
            )
        ]
    )
    ov = await overview(transcript.reader, WINDOWS["24h"], {}, now=NOW)
    assert ov.saving_usd == 0 and ov.routed_turns == 0
    ov = await overview(transcript.reader, WINDOWS["24h"], {"other": PRICES["strong"]}, now=NOW)
    assert ov.unpriced_turns == 1 and ov.routed_turns == 0
    assert len(ov.buckets) == 48 and ov.turns == 1


async def test_a_window_with_no_turns_has_every_bucket_empty(transcript: Transcript) -> None:
    await transcript.load([])
    ov = await overview(transcript.reader, WINDOWS["7d"], {}, now=NOW)
    assert len(ov.buckets) == 28 and ov.turns == 0 and ov.deployments == []
