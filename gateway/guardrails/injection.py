"""Prompt-injection markers in tool output: phrases that address the model rather than
report data. Tool output is already marked untrusted (``io.turnstile/origin``); this check
finds the markers (``guardrails.injection_markers``, case-insensitive regular expressions; the
built-in :data:`MARKERS` by default) so the configured action (``flag`` or ``block``) applies.
"""

from __future__ import annotations

import functools
import re
from re import Pattern

from gateway.guardrails.findings import Finding

MARKERS: tuple[str, ...] = (
    r"\b(?:ignore|disregard|forget|override)\s+(?:all\s+|any\s+)?(?:of\s+)?(?:the\s+|your\s+)?"
    r"(?:previous|prior|above|earlier|preceding|system)\s+(?:instructions|prompts?|messages|rules|directions)",
    r"\byou\s+are\s+now\s+(?:in\s+)?(?:developer|dan|jailbreak|unrestricted|god)\b",
    r"\b(?:reveal|print|show|output|repeat|leak)\s+(?:me\s+)?(?:your|the)\s+(?:system\s+prompt|hidden\s+instructions)",
    r"\bnew\s+(?:system\s+)?instructions\s*:",
    r"\bdo\s+not\s+(?:tell|inform|alert)\s+the\s+user\b",
    r"<\|im_start\|>|<\|system\|>|\[/?INST\]|<</?SYS>>",
    r"\bBEGIN\s+(?:SYSTEM|ADMIN)\s+(?:PROMPT|INSTRUCTIONS|OVERRIDE)\b",
)


@functools.cache
def compiled(markers: tuple[str, ...]) -> tuple[Pattern[str], ...]:
    """``markers`` compiled, case-insensitive (cached per list)."""
    return tuple(re.compile(m, re.IGNORECASE) for m in markers)


def find_injection(text: str, markers: tuple[str, ...] = MARKERS) -> list[Finding]:
    """Each marker match in ``text`` (kind ``marker<i>``, ``i`` its index in ``markers``)."""
    return [
        Finding("injection", f"marker{i}", m.start(), m.end())
        for i, pattern in enumerate(compiled(markers))
        for m in pattern.finditer(text)
    ]
