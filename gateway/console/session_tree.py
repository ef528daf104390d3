"""A session's entries as a tree to show: a straight run of entries is one list, and an entry
with several children (the client edited history, or two turns raced: :mod:`gateway.sessions`)
starts one nested branch per child.

Entries of a fork's source (before the fork point) are not the session's own: the tree holds the
session's own entries, and an entry whose parent is in another session (the fork point) is a
root, marked with where it continues from. Deep runs never nest deeper: only branch points do,
at most :data:`MAX_DEPTH` levels (a deeper branch is shown flat at that level, with a note).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gateway.console.messages import message_view
from gateway.sessions.model import Entry

MAX_DEPTH = 24
"""Branch levels nested at most."""

MAX_ENTRIES = 5_000
"""Entries of one session shown at most (the oldest first)."""

PREVIEW_CHARS = 240
"""Characters of an entry's text shown in its line."""


@dataclass
class Node:
    """One entry to show: the entry, its one-line ``summary``, whether it is on the session's
    current path (``on_path``), the leaf, a label another entry put on it, the sessions forked
    from it, and the branches that start after it (each a list of nodes)."""

    entry: Entry
    summary: str
    detail: dict[str, Any]
    on_path: bool = False
    leaf: bool = False
    labels: list[str] = field(default_factory=list)
    forks: list[str] = field(default_factory=list)
    branches: list[list[Node]] = field(default_factory=list)
    flattened: bool = False


def summarize(entry: Entry) -> tuple[str, dict[str, Any]]:
    """``(one line, details)`` for ``entry``: a message's role and text (tool calls by name),
    a compaction's token counts, a label, a model change, a thread's system prompt size.
    ``details`` has the keys ``message`` (a message view), ``compaction`` (its payload) and
    ``summary`` (a branch summary's text), each None unless the entry is of that kind."""
    line, detail = _summarize(entry)
    return line, {"message": None, "compaction": None, "summary": None, **detail}


def _summarize(entry: Entry) -> tuple[str, dict[str, Any]]:
    payload = entry.payload
    if entry.type == "message":
        view = message_view(payload.get("message"))
        texts = []
        for p in view["parts"]:
            if p["kind"] == "text":
                texts.append(p["text"])
            elif p["kind"] == "tool_call":
                texts.append(f"→ {p['name']}()")
            elif p.get("note"):
                texts.append(f"[{p['kind']}: {p['note']}]")
        line = " ".join(" ".join(texts).split())
        if len(line) > PREVIEW_CHARS:
            line = line[: PREVIEW_CHARS - 1] + "…"
        who = view["role"] + (f" ({view['name']})" if view.get("name") else "")
        return f"{who}: {line}", {"message": view}
    if entry.type == "compaction":
        return (
            f"compaction ({payload.get('reason', 'request')}): {payload.get('tokens_before', 0):,} → "
            f"{payload.get('tokens_after', 0):,} tokens",
            {"compaction": payload},
        )
    if entry.type == "label":
        return f"label {payload.get('label')!r} on entry {str(payload.get('target_id'))[:8]}", {}
    if entry.type == "model_change":
        return f"model change: {payload.get('deployment') or payload.get('model')}", {}
    if entry.type == "branch_summary":
        return f"branch summary of {payload.get('from_entry_id')}", {"summary": payload.get("summary")}
    if entry.type == "thread":
        system, tools = len(payload.get("system", [])), len(payload.get("tools", []))
        return f"thread: {system} system messages, {tools} tools", {}
    return entry.type, {}


def build(
    entries: list[Entry], path_ids: set[str], leaf_id: str | None, forks: dict[str, list[str]]
) -> tuple[list[list[Node]], bool]:
    """The tree of ``entries`` (a session's own, in append order): ``(roots, cut)`` where
    ``roots`` is one run of nodes per root (an entry whose parent is not among ``entries``) and
    ``cut`` says whether entries past :data:`MAX_ENTRIES` were left out. ``path_ids``: the ids
    on the session's current path; ``forks``: entry id -> ids of sessions forked there."""
    cut = len(entries) > MAX_ENTRIES
    entries = entries[:MAX_ENTRIES]
    own = {e.id for e in entries}
    labels: dict[str, list[str]] = {}
    for e in entries:
        if e.type == "label" and e.payload.get("label"):
            labels.setdefault(str(e.payload.get("target_id")), []).append(str(e.payload["label"]))
    children: dict[str | None, list[Entry]] = {}
    for e in entries:
        parent = e.parent_id if e.parent_id in own else None
        children.setdefault(parent, []).append(e)

    def node(e: Entry) -> Node:
        summary, detail = summarize(e)
        return Node(
            e,
            summary,
            detail,
            on_path=e.id in path_ids,
            leaf=e.id == leaf_id,
            labels=labels.get(e.id, []),
            forks=forks.get(e.id, []),
        )

    roots: list[list[Node]] = []
    # (first entry of a run, the list the run goes in, nesting depth); iterative, not recursive
    work: list[tuple[Entry, list[list[Node]], int]] = [
        (e, roots, 0) for e in reversed(children.get(None, []))
    ]
    while work:
        start, into, depth = work.pop()
        run: list[Node] = []
        into.append(run)
        current: Entry | None = start
        while current is not None:
            n = node(current)
            run.append(n)
            kids = children.get(current.id, [])
            if len(kids) == 1:
                current = kids[0]
                continue
            current = None
            if kids:
                target = n.branches if depth < MAX_DEPTH else into
                n.flattened = depth >= MAX_DEPTH
                # the branch on the current path first, then in append order
                ordered = sorted(kids, key=lambda k: (k.id not in path_ids, k.seq))
                for kid in reversed(ordered):
                    work.append((kid, target, depth + 1))
    return roots, cut
