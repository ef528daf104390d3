"""The vocabulary of the fidelity tables (:mod:`gateway.edges.fidelity`): the field classes and
one table row (:class:`Rule`), shared by the per-dialect table modules
(:mod:`gateway.edges.fidelity_responses`, :mod:`gateway.edges.fidelity_gemini`)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "CARRIED",
    "CLASSES",
    "DROPPED",
    "HEADER",
    "PASSED",
    "REFUSED",
    "REFUSED_ELSEWHERE",
    "SERVING",
    "TRANSLATED",
    "Rule",
]

CARRIED = "carried"
TRANSLATED = "translated"
PASSED = "passed through"
SERVING = "serving"
REFUSED = "refused"
HEADER = "header"
CLASSES = (CARRIED, TRANSLATED, PASSED, SERVING, REFUSED, HEADER)


@dataclass(frozen=True)
class Rule:
    """One field's class, what an upstream of the client's own wire API gets (``same``) and
    what an upstream of another wire API gets (``other``)."""

    cls: str
    same: str
    other: str


DROPPED = "dropped: `x-turnstile-dropped` + transcript note"
"""What a serving field (or a schema field without a slot) becomes toward an API without it."""
REFUSED_ELSEWHERE = "400 naming the field and the model"
"""What a passed-through field makes of a request toward another wire API."""
