"""Tool-call ids from an upstream that no client could send back are replaced on the way out.

A client's tool-call id that no upstream could take (empty, whitespace or invisible characters
only, a control character, over 256 bytes: :func:`gateway.call_id_rule.unusable_call_id`) is
refused at the edge. An upstream may send such an id too (a hostile or broken server:
``"a\\r\\nX-Evil: 1\\x00"``); handed on, the client's correct next turn (the assistant message
with that call and the tool result for it) would be refused by that same rule, and the
conversation could never continue. So every answer's ids are judged by the same function, and
each unusable one is replaced by a safe id (:func:`safe_call_id`: ``call_`` + the first 24 hex
digits of the SHA-256 of the original id) before the answer leaves the guard: in the answer's
tool calls, in its withheld calls, whole or streamed (the truncation guard, which every answer
of every provider goes through, calls :func:`replace_unusable`).

Why no mapping back is needed: the client receives only the safe id, so the next turn carries it
both in the assistant message's tool call and in the tool result; the upstream then sees one id
on both sides and pairs them as it pairs any id of a history (upstreams pair calls and results by
the ids the request carries, not by ids they remember). The replacement is a function of the
original id alone, so the stream and the whole answer agree, the same answer gives the same ids
on every run, and a resent history stays consistent; nothing is stored between turns.

No two ids of one answer meet: ids the rule accepts are kept as they are and reserved first, and
a replacement already taken in the answer (an equal unsafe id on another call, a usable id equal
to ``call_<hash>``, or another replacement) gets ``_2``, ``_3``, ... in answer order (the calls
by position, then the calls already withheld). The result is ASCII letters, digits and ``_``, at
most about 32 characters: within every upstream's rule (OpenAI's 40, Anthropic's pattern,
Bedrock's 64).

Where each id is kept: the answer the client gets, the session log and the transcript row carry
the safe id; the row also lists each replacement (``response.replaced_call_ids``: the safe id,
the upstream's id exactly as sent, the reason), and each is logged once
(``upstream_tool_call_id_replaced``: the upstream id escaped, the new id, the deployment). The
server-side tool loop's renaming of ids repeated across steps (:mod:`gateway.tool_loop_ids`)
works on the ids this gives, so both compose: a replaced id reused in a later step is renamed
``call_<hash>_s<step>``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence

import structlog

from gateway.call_id_rule import plain_call_id, unusable_call_id
from gateway.schema import ReplacedCallId

log = structlog.get_logger("turnstile.guards")

SAFE_PREFIX = "call_"
HASH_HEX_DIGITS = 24
LOGGED_ID_CHARS = 256
"""Characters of an upstream id shown in the log line (the transcript keeps it whole)."""


def safe_call_id(upstream_id: str) -> str:
    """The replacement of ``upstream_id``: ``call_`` + the first 24 hex digits of the SHA-256 of
    its UTF-8 bytes (96 bits), e.g. ``call_3f1c...`` (29 characters). Deterministic."""
    digest = hashlib.sha256(upstream_id.encode("utf-8", "surrogatepass")).hexdigest()
    return SAFE_PREFIX + digest[:HASH_HEX_DIGITS]


def escaped(upstream_id: str) -> str:
    """``upstream_id`` as a JSON string literal of printable ASCII (control and non-ASCII
    characters as ``\\uXXXX``), its first :data:`LOGGED_ID_CHARS` characters followed by
    ``...`` when it is longer: safe in any log line."""
    shown = upstream_id[:LOGGED_ID_CHARS]
    return json.dumps(shown) + ("..." if len(upstream_id) > LOGGED_ID_CHARS else "")


def replace_unusable(
    ids: Sequence[str], deployment: str | None = None
) -> tuple[list[str], list[ReplacedCallId]] | None:
    """The tool-call ids of one answer, in answer order (its calls by position, then its
    withheld calls), with every id the edge would refuse replaced (module docstring), and one
    :class:`ReplacedCallId` per replacement; None when every id is usable (the common case: one
    C call per id). Logs one line per replacement naming ``deployment``. Never raises."""
    if all(plain_call_id(i) is not None for i in ids):
        return None
    reasons = [unusable_call_id(i) for i in ids]
    if all(r is None for r in reasons):
        return None
    taken = {i for i, r in zip(ids, reasons, strict=True) if r is None}
    out: list[str] = []
    notes: list[ReplacedCallId] = []
    for upstream_id, reason in zip(ids, reasons, strict=True):
        if reason is None:
            out.append(upstream_id)
            continue
        new = base = safe_call_id(upstream_id)
        k = 1
        while new in taken:
            k += 1
            new = f"{base}_{k}"
        taken.add(new)
        out.append(new)
        notes.append(ReplacedCallId(id=new, upstream_id=upstream_id, reason=reason))
        log.warning(
            "upstream_tool_call_id_replaced",
            deployment=deployment,
            upstream_id=escaped(upstream_id),
            id=new,
            reason=reason,
        )
    return out, notes


__all__ = ["SAFE_PREFIX", "escaped", "replace_unusable", "safe_call_id"]
