"""Reading JSON Lines robustly: objects one per line, but also several objects on one line
(corpus ``pi-mono/compact.jsonl`` line 1013 holds two with no newline between them)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from gateway.replay.records import Issue

_DECODER = json.JSONDecoder()


def iter_objects(text: str, source: str, issues: list[Issue]) -> Iterator[tuple[int, Any]]:
    """Yield ``(line, value)`` for every JSON value in ``text`` (1-based line of the value's
    first character), decoding with a streaming decoder so several values on one line are
    all read. A line that does not decode is reported in ``issues`` with its number and
    skipped; decoding resumes on the next line."""
    pos = 0
    n = len(text)
    line = 1
    while pos < n:
        while pos < n and text[pos] in " \t\r\n":
            if text[pos] == "\n":
                line += 1
            pos += 1
        if pos >= n:
            break
        try:
            value, end = _DECODER.raw_decode(text, pos)
        except json.JSONDecodeError as err:
            issues.append(Issue(source, line, f"not JSON: {err.msg}"))
            nl = text.find("\n", pos)
            if nl < 0:
                break
            pos = nl
            continue
        yield line, value
        line += text.count("\n", pos, end)
        pos = end
