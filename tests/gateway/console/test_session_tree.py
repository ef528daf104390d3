"""A session's entries as a tree (gateway/console/session_tree.py): straight runs stay flat,
each branch point nests one branch per child (the current path first), forks and labels are
put on their entries, compaction entries are summarised, and nesting is bounded."""

from __future__ import annotations

from typing import Any

from gateway.console import session_tree
from gateway.sessions.model import Entry


def _msg(role: str, text: str) -> dict[str, Any]:
    return {"message": {"role": role, "content": [{"type": "text", "text": text}]}}


def _entry(eid: str, parent: str | None, seq: int, kind: str = "message", **payload: Any) -> Entry:
    body = payload or _msg("user" if seq % 2 else "assistant", f"text {eid}")
    return Entry(
        id=eid, session_id="s", parent_id=parent, type=kind, created_at=float(seq), payload=body, seq=seq
    )  # type: ignore[arg-type]


def _count(runs: list[list[session_tree.Node]]) -> int:
    return sum(1 + _count(n.branches) for run in runs for n in run)


def test_a_branch_point_nests_its_branches_with_the_current_path_first() -> None:
    entries = [
        _entry("a", None, 1),
        _entry("b", "a", 2),
        _entry("c1", "b", 3),  # the first answer, later edited away
        _entry("c2", "b", 4),
        _entry("d2", "c2", 5),
        _entry("lbl", "d2", 6, kind="label", target_id="b", label="checkpoint"),
    ]
    roots, cut = session_tree.build(entries, {"a", "b", "c2", "d2", "lbl"}, "lbl", {"b": ["fork-1"]})
    assert not cut and len(roots) == 1
    run = roots[0]
    assert [n.entry.id for n in run] == ["a", "b"]
    b = run[1]
    assert b.labels == ["checkpoint"] and b.forks == ["fork-1"] and b.on_path
    assert [[n.entry.id for n in branch] for branch in b.branches] == [["c2", "d2", "lbl"], ["c1"]]
    assert b.branches[0][-1].leaf and not b.branches[1][0].on_path


def test_a_fork_root_and_a_compaction_entry_are_shown_with_what_they_hold() -> None:
    entries = [
        _entry("x", "in-the-source-session", 1),
        _entry(
            "k",
            "x",
            2,
            kind="compaction",
            summary="they talked about weather",
            first_kept_entry_id="x",
            tokens_before=90_000,
            tokens_after=12_000,
            reason="window",
        ),
    ]
    roots, _ = session_tree.build(entries, set(), None, {})
    (run,) = roots
    assert [n.entry.id for n in run] == ["x", "k"]
    assert run[1].summary == "compaction (window): 90,000 → 12,000 tokens"
    assert run[1].detail["compaction"]["summary"] == "they talked about weather"
    assert run[0].summary.startswith("user: text x") and run[0].detail["message"]["role"] == "user"


def test_nesting_stops_at_the_depth_bound_and_long_sessions_are_cut() -> None:
    entries = [_entry("root", None, 1)]
    parent = "root"
    for i in range(session_tree.MAX_DEPTH + 5):  # every entry a branch point with two children
        entries.append(_entry(f"dead{i}", parent, 2 * i + 2))
        entries.append(_entry(f"live{i}", parent, 2 * i + 3))
        parent = f"live{i}"
    path = {e.id for e in entries if not e.id.startswith("dead")}
    roots, cut = session_tree.build(entries, path, parent, {})
    assert not cut
    depth, node = 0, roots[0][-1]
    while node.branches:
        depth += 1
        node = node.branches[0][-1]
    assert depth == session_tree.MAX_DEPTH and node.flattened
    assert _count(roots) == len(entries)  # the deeper branches are shown too, flat, beside it
    many = [_entry(f"e{i}", f"e{i - 1}" if i else None, i + 1) for i in range(session_tree.MAX_ENTRIES + 3)]
    roots, cut = session_tree.build(many, set(), None, {})
    assert cut and len(roots[0]) == session_tree.MAX_ENTRIES  # one straight run, never nested
