"""PII found by pattern, each with a check that keeps near-misses out:

* ``email``: ``local@domain.tld``;
* ``phone``: international ``+<country> ...`` numbers (8–15 digits) and North American
  ``(555) 123-4567`` / ``555-123-4567`` / ``555.123.4567``;
* ``credit_card``: 13–19 digits (spaces or dashes between groups) that pass the Luhn check;
* ``iban``: a country code, two check digits and 11–30 letters/digits that pass ISO 7064
  mod 97-10;
* ``us_ssn``: ``AAA-GG-SSSS`` without the never-issued area numbers 000, 666 and 900–999,
  group 00 or serial 0000.
"""

from __future__ import annotations

import re

from gateway.guardrails.findings import Finding

_EMAIL = re.compile(
    r"(?<![\w.+-])[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,24}(?![\w-])"
)
_PHONE_INTL = re.compile(r"(?<![\w+])\+\d{1,3}(?:[ .-]?\(?\d{1,4}\)?){2,5}(?![\w-])")
_PHONE_NA = re.compile(r"(?<![\w.-])(?:\(\d{3}\) ?|\d{3}[.-])\d{3}[.-]\d{4}(?![\w-]|\.\d)")
_CARD = re.compile(r"(?<![\w-])\d(?:[ -]?\d){12,18}(?![\w-])")
_IBAN = re.compile(r"(?<![A-Za-z0-9])[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,4})?(?![A-Za-z0-9])")
_SSN = re.compile(r"(?<![\w-])(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}(?![\w-])")

KINDS = ("email", "phone", "credit_card", "iban", "us_ssn")


def luhn_ok(digits: str) -> bool:
    """Whether ``digits`` (only digits) passes the Luhn check."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2 == 1:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def iban_ok(value: str) -> bool:
    """Whether ``value`` (spaces allowed) is 15–34 characters passing ISO 7064 mod 97-10."""
    compact = value.replace(" ", "")
    if not 15 <= len(compact) <= 34:
        return False
    moved = compact[4:] + compact[:4]
    number = "".join(str(int(c, 36)) for c in moved)
    return int(number) % 97 == 1


def find_pii(text: str, kinds: frozenset[str] | tuple[str, ...] = KINDS) -> list[Finding]:
    """The PII of ``kinds`` in ``text``."""
    found: list[Finding] = []
    if "email" in kinds:
        found += [Finding("pii", "email", m.start(), m.end()) for m in _EMAIL.finditer(text)]
    if "credit_card" in kinds:
        for m in _CARD.finditer(text):
            digits = re.sub(r"\D", "", m.group(0))
            if 13 <= len(digits) <= 19 and len(set(digits)) > 1 and luhn_ok(digits):
                found.append(Finding("pii", "credit_card", m.start(), m.end()))
    if "iban" in kinds:
        found += [
            Finding("pii", "iban", m.start(), m.end()) for m in _IBAN.finditer(text) if iban_ok(m.group(0))
        ]
    if "us_ssn" in kinds:
        found += [Finding("pii", "us_ssn", m.start(), m.end()) for m in _SSN.finditer(text)]
    if "phone" in kinds:
        for m in _PHONE_INTL.finditer(text):
            if 8 <= sum(c.isdigit() for c in m.group(0)) <= 15:
                found.append(Finding("pii", "phone", m.start(), m.end()))
        found += [Finding("pii", "phone", m.start(), m.end()) for m in _PHONE_NA.finditer(text)]
    return found
