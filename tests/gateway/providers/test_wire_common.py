"""Shared wire helpers: the OpenAI reasoning effort a thinking request of another dialect maps to."""

from __future__ import annotations

import pytest

from gateway.providers.wire_common import openai_effort
from gateway.schema import ThinkingConfig


@pytest.mark.parametrize(
    ("model", "effort"),
    [
        ("gpt-5.1", "none"),
        ("gpt-5.2-codex", "none"),
        ("gpt-5", "minimal"),
        ("gpt-5-mini", "minimal"),
        ("openai/gpt-5-nano", "minimal"),
        ("o3", "low"),
        ("o4-mini", "low"),
    ],
)
def test_thinking_off_is_the_least_effort_the_model_takes(model: str, effort: str) -> None:
    assert openai_effort(ThinkingConfig(enabled=False), model) == effort


def test_a_budget_alone_becomes_an_effort_by_its_size() -> None:
    budgets = {1024: "low", 5000: "medium", 20000: "high"}
    for budget, effort in budgets.items():
        assert openai_effort(ThinkingConfig(enabled=True, budget_tokens=budget), "gpt-5.1") == effort
    assert openai_effort(ThinkingConfig(enabled=True), "gpt-5.1") == "medium"
