"""The replay report: totals, findings in the input, conversion limits and losses, cost.

A :class:`Report` is plain data (JSON-ready) so that reports of parallel workers merge by
:meth:`Report.merge`. Findings are facts about the *input* (an unanswered tool call in a
recorded session); losses and crashes are facts about *Turnstile* and make the run fail.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from gateway.replay import routing as replay_routing

COUNTERS = (
    "files",
    "conversations",
    "turns",
    "calls",
    "requests",
    "exchanges",
    "streams",
    "pipeline_turns",
    "transcript_rows",
    "rendered",
    "round_trips",
    "error_responses",
)


@dataclass
class Report:
    """Everything one replay found. ``counts`` holds the totals of :data:`COUNTERS`;
    ``findings`` / ``losses`` / ``limits`` / ``unsupported`` / ``issues`` / ``crashes`` are
    lists of dicts with at least ``file``; ``cost`` sums recorded and estimated USD over turns
    where both are known."""

    counts: Counter[str] = field(default_factory=Counter)
    findings: list[dict[str, Any]] = field(default_factory=list)
    losses: list[dict[str, Any]] = field(default_factory=list)
    limits: Counter[str] = field(default_factory=Counter)
    limit_examples: dict[str, dict[str, Any]] = field(default_factory=dict)
    unsupported: list[dict[str, Any]] = field(default_factory=list)
    issues: list[dict[str, Any]] = field(default_factory=list)
    crashes: list[dict[str, Any]] = field(default_factory=list)
    cost: dict[str, Any] = field(
        default_factory=lambda: {
            "turns_compared": 0,
            "recorded_usd": 0.0,
            "estimated_usd": 0.0,
            "unpriced_turns": 0,
            "turns_estimated_tokens": 0,
            "conversations_compared": 0,
            "conversation_recorded_usd": 0.0,
            "conversation_estimated_usd": 0.0,
            "by_model": {},
        }
    )
    guard_outcomes: Counter[str] = field(default_factory=Counter)
    routing: dict[str, Any] = field(default_factory=replay_routing.empty_totals)
    routing_conversations: list[dict[str, Any]] = field(default_factory=list)

    def route_conversation(self, file: str, name: str, route: replay_routing.ConversationRoute) -> None:
        """Record what routing chose on one conversation (:mod:`gateway.replay.routing`)."""
        replay_routing.add_conversation(self.routing, route)
        self.routing_conversations.append(replay_routing.conversation_entry(file, name, route))

    def finding(self, kind: str, file: str, where: str, id: str | None, message: str) -> None:
        """Record a problem in the input (not a failure)."""
        self.findings.append({"kind": kind, "file": file, "where": where, "id": id, "message": message})

    def loss(self, file: str, where: str, target: str, facet: str, before: str, after: str) -> None:
        """Record information Turnstile lost (a failure)."""
        self.losses.append(
            {"file": file, "where": where, "target": target, "facet": facet, "before": before, "after": after}
        )

    def limit(self, target: str, facet: str, why: str, example: dict[str, Any]) -> None:
        """Count a difference explained by what ``target`` can carry."""
        key = f"{target}:{facet}"
        self.limits[key] += 1
        self.limit_examples.setdefault(key, {"why": why, **example})

    def crash(self, file: str, where: str, err: BaseException) -> None:
        """Record an exception Turnstile raised where it should not have (a failure)."""
        self.crashes.append({"file": file, "where": where, "error": f"{type(err).__name__}: {err}"[:500]})

    def add_cost(self, model: str, recorded: float, estimated: float) -> None:
        """Add one turn where both the recorded and Turnstile's estimated cost are known (USD)."""
        c = self.cost
        c["turns_compared"] += 1
        c["recorded_usd"] += recorded
        c["estimated_usd"] += estimated
        m = c["by_model"].setdefault(model, {"turns": 0, "recorded_usd": 0.0, "estimated_usd": 0.0})
        m["turns"] += 1
        m["recorded_usd"] += recorded
        m["estimated_usd"] += estimated

    def merge(self, other: Report) -> None:
        """Add ``other`` into this report."""
        self.counts.update(other.counts)
        self.findings.extend(other.findings)
        self.losses.extend(other.losses)
        self.limits.update(other.limits)
        for k, v in other.limit_examples.items():
            self.limit_examples.setdefault(k, v)
        self.unsupported.extend(other.unsupported)
        self.issues.extend(other.issues)
        self.crashes.extend(other.crashes)
        self.guard_outcomes.update(other.guard_outcomes)
        replay_routing.merge_totals(self.routing, other.routing)
        self.routing_conversations.extend(other.routing_conversations)
        for k, v in other.cost.items():
            if k == "by_model":
                for model, m in v.items():
                    mine = self.cost["by_model"].setdefault(
                        model, {"turns": 0, "recorded_usd": 0.0, "estimated_usd": 0.0}
                    )
                    for kk in mine:
                        mine[kk] += m[kk]
            else:
                self.cost[k] += v

    def findings_by_kind(self) -> dict[str, int]:
        """Number of findings of each kind, sorted by kind."""
        return dict(sorted(Counter(f["kind"] for f in self.findings).items()))

    @property
    def failed(self) -> bool:
        """True when Turnstile crashed or lost information (the exit status is non-zero)."""
        return bool(self.losses or self.crashes)

    def as_dict(self) -> dict[str, Any]:
        """The whole report as JSON-ready data, lists sorted for stable output."""

        def key(d: dict[str, Any]) -> tuple[str, ...]:
            return tuple(str(d.get(k, "")) for k in ("file", "where", "kind", "id", "target", "facet"))

        cost = dict(self.cost)
        for k in ("recorded_usd", "estimated_usd", "conversation_recorded_usd", "conversation_estimated_usd"):
            cost[k] = round(cost[k], 6)
        cost["by_model"] = {
            m: {k: (round(v, 6) if isinstance(v, float) else v) for k, v in d.items()}
            for m, d in sorted(cost["by_model"].items())
        }
        return {
            "ok": not self.failed,
            "totals": {k: self.counts.get(k, 0) for k in COUNTERS},
            "findings_by_kind": self.findings_by_kind(),
            "guard_outcomes": dict(sorted(self.guard_outcomes.items())),
            "limits": {
                k: {"count": n, **self.limit_examples.get(k, {})} for k, n in sorted(self.limits.items())
            },
            "losses": sorted(self.losses, key=key),
            "crashes": sorted(self.crashes, key=key),
            "unsupported": sorted(self.unsupported, key=key),
            "issues": sorted(self.issues, key=key),
            "findings": sorted(self.findings, key=key),
            "cost": cost,
            "routing": {
                "totals": replay_routing.totals_dict(self.routing),
                "conversations": sorted(
                    self.routing_conversations, key=lambda d: (d["file"], d["conversation"])
                ),
            },
        }
