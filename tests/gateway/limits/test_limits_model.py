"""Budgets, rate limits and scopes: validated, adapted from any object with the access
layer's field names, and money in exact nano-dollars."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from gateway.limits.model import BudgetLimit, RateLimit, Scope, nano_to_usd, usd_to_nano


@dataclass
class Budget:  # the access layer's pydantic model has these fields
    period: str
    usd: float
    hard: bool


@dataclass
class RateLimits:
    rpm: int | None
    tpm: int | None
    concurrent: int | None


def test_scopes_adapt_from_objects_and_mappings_with_the_access_layers_field_names() -> None:
    scope = Scope.of(
        "team", "t1", [Budget("month", 50.0, False), {"period": "day", "usd": 5}], RateLimits(60, None, 4)
    )
    assert scope.budgets == (BudgetLimit("month", 50.0, hard=False), BudgetLimit("day", 5.0, hard=True))
    assert scope.rates == RateLimit(rpm=60, concurrent=4)
    assert (scope.name, scope.limited) == ("team:t1", True)
    assert not Scope.of("key", "k").limited
    assert not Scope("key", "k", (), RateLimit()).limited


def test_invalid_limits_are_refused_by_name() -> None:
    with pytest.raises(ValueError, match="period 'year'"):
        BudgetLimit("year", 1.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="usd"):
        BudgetLimit("day", -1.0)
    with pytest.raises(ValueError, match="rpm"):
        RateLimit(rpm=-1)
    with pytest.raises(ValueError, match="one budget per period"):
        Scope("key", "k", (BudgetLimit("day", 1.0), BudgetLimit("day", 2.0)))


def test_money_is_exact_nano_dollars_and_reservations_round_up() -> None:
    assert usd_to_nano(0.1) + usd_to_nano(0.2) == usd_to_nano(0.3)
    assert usd_to_nano(1e-10, up=True) == 1 and usd_to_nano(1e-10) == 0
    assert usd_to_nano(0.07, up=True) == 70_000_000  # float noise does not round up a whole nano
    assert usd_to_nano(-5.0) == 0
    assert nano_to_usd(1_500_000_000) == 1.5
