"""What a check finds: a :class:`Finding` per match (which check, what kind, where)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Finding:
    """One match in a text: ``check`` (``secrets``, ``pii``, ``injection``, ``webhook``),
    ``kind`` (e.g. ``openai_key``, ``email``), ``start``/``end`` character offsets (both 0
    for a finding about the whole text, such as a webhook's verdict)."""

    check: str
    kind: str
    start: int = 0
    end: int = 0


def without_overlaps(found: list[Finding]) -> list[Finding]:
    """``found`` sorted by start, each finding that overlaps an earlier (longer-first) one left
    out, so that spans can be replaced from the end without clobbering each other."""
    out: list[Finding] = []
    for f in sorted(found, key=lambda f: (f.start, -(f.end - f.start))):
        if out and f.start < out[-1].end:
            continue
        out.append(f)
    return out
