"""PII by pattern on the test set: each kind found, each near-miss left alone."""

from __future__ import annotations

import pytest
from secret_cases import PII, PII_NEAR_MISSES

from gateway.guardrails.pii import find_pii, iban_ok, luhn_ok


@pytest.mark.parametrize(("name", "kind", "text"), PII, ids=[n for n, _, _ in PII])
def test_pii_of_each_kind_is_found(name: str, kind: str, text: str) -> None:
    assert [f.kind for f in find_pii(text)] == [kind], name


@pytest.mark.parametrize(("name", "text"), PII_NEAR_MISSES, ids=[n for n, _ in PII_NEAR_MISSES])
def test_a_pii_near_miss_is_not_reported(name: str, text: str) -> None:
    assert find_pii(text) == [], name


def test_precision_and_recall_on_the_pii_set() -> None:
    caught = sum(1 for _, k, t in PII if [f.kind for f in find_pii(t)] == [k])
    false = sum(1 for _, t in PII_NEAR_MISSES if find_pii(t))
    print(f"pii: precision {caught / (caught + false):.3f}, recall {caught / len(PII):.3f}")


def test_only_the_configured_kinds_are_looked_for() -> None:
    assert find_pii("ann@example.com 123-45-6789", frozenset({"us_ssn"}))[0].kind == "us_ssn"


def test_the_checksums() -> None:
    assert luhn_ok("4111111111111111") and not luhn_ok("4111111111111112")
    assert iban_ok("GB82 WEST 1234 5698 7654 32") and not iban_ok("GB00 WEST 1234 5698 7654 32")
