"""Secret detection on the test set (:mod:`secret_cases`): every real format caught, no
near-miss reported; precision and recall printed (the report's numbers)."""

from __future__ import annotations

import pytest
from secret_cases import NEAR_MISSES, SECRETS

from gateway.guardrails.secrets import find_secrets, is_placeholder


@pytest.mark.parametrize(("name", "text"), SECRETS, ids=[n for n, _ in SECRETS])
def test_a_real_secret_format_is_caught(name: str, text: str) -> None:
    assert find_secrets(text), name


@pytest.mark.parametrize(("name", "text"), NEAR_MISSES, ids=[n for n, _ in NEAR_MISSES])
def test_a_near_miss_is_not_reported(name: str, text: str) -> None:
    assert find_secrets(text) == [], name


def test_precision_and_recall_on_the_whole_set() -> None:
    caught = sum(1 for _, t in SECRETS if find_secrets(t))
    false = sum(1 for _, t in NEAR_MISSES if find_secrets(t))
    precision = caught / (caught + false) if caught + false else 1.0
    recall = caught / len(SECRETS)
    sizes = f"{len(SECRETS)} real, {len(NEAR_MISSES)} near-misses"
    print(f"secrets: {sizes}: precision {precision:.3f}, recall {recall:.3f}")
    assert precision == 1.0 and recall == 1.0


def test_the_match_covers_the_secret_not_its_label() -> None:
    text = next(t for n, t in SECRETS if n == "openai legacy key")
    (f,) = find_secrets(text)
    assert text[f.start : f.end].startswith("sk-") and f.kind == "openai_key" and f.end == len(text)


def test_placeholders_are_not_secrets() -> None:
    assert is_placeholder("AKIAIOSFODNN7EXAMPLE") and is_placeholder("sk-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx")
