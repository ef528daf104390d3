"""The context sent upstream: a view rebuilt from a session's entries under a token budget.

Invariant 5. Steps, all pure and deterministic:

1. :func:`history_from_path` — walk the path root→leaf; the latest compaction on it wins: its
   summary, then the entries it kept (from ``first_kept_entry_id``), then everything after it.
   A ``first_kept_entry_id`` that points inside an interaction group is moved back to the
   group's start (a group is never split). Defects of the recorded history are normalised in
   the view only (the log is untouched): a tool call that never got a result (aborted turn)
   gets an error result right after its batch, a result whose call is not in the view is left
   out, an assistant message with no content is left out. Each is listed in ``repairs``.
2. :func:`interaction_groups` — a group is a user message and everything it caused (assistant
   turns, tool calls and their results) up to the next user message; messages before the first
   user message form a group of their own. Groups are atomic.
3. :func:`build_context` — keep the longest contiguous suffix of groups that fits the budget
   (never a skip); what falls out is reported in ``dropped`` for compaction to summarise.

The same path and budget always give byte-identical context (:meth:`Context.to_bytes`): token
estimates are a pure function of each message's sorted-key JSON.

Budget (tokens) = target window − system prompt − tool definitions − reserved output − safety
margin (:func:`budget_for`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from gateway.schema import (
    AssistantMessage,
    Message,
    Request,
    SystemMessage,
    TextPart,
    ToolResultMessage,
    UserMessage,
)
from gateway.sessions.model import Entry

SUMMARY_PREFIX = (
    "The earlier part of this conversation was compacted to fit the context window. "
    "Summary of it:\n\n<summary>\n"
)
SUMMARY_SUFFIX = "\n</summary>"
BRANCH_PREFIX = "Summary of a branch of this conversation that was left:\n\n<summary>\n"
MISSING_RESULT = "no result was recorded for this tool call (the turn was interrupted before it finished)"

TokenCounter = Callable[[Message], int]


def message_bytes(msg: Message) -> bytes:
    """Canonical bytes of a message: internal-schema JSON, ``None`` fields dropped, keys sorted."""
    return orjson.dumps(msg.model_dump(mode="json", exclude_none=True), option=orjson.OPT_SORT_KEYS)


def estimate_tokens(msg: Message) -> int:
    """Deterministic token estimate of one message: ceil(bytes of :func:`message_bytes` / 4) + 4
    per-message overhead. Coarse on purpose: stable across runs and machines, and conservative
    for JSON-heavy tool traffic (real tokenizers give ~3.5-4.5 bytes per token on English)."""
    return math.ceil(len(message_bytes(msg)) / 4) + 4


def _text_tokens(text: str) -> int:
    return math.ceil(len(text.encode()) / 4)


@dataclass(frozen=True)
class Budget:
    """Token budget of a context (tokens). ``available`` is what history may use."""

    window: int
    system: int = 0
    tools: int = 0
    reserved_output: int = 0
    margin: int = 0

    @property
    def available(self) -> int:
        """window − system − tools − reserved output − margin, floored at 0."""
        return max(0, self.window - self.system - self.tools - self.reserved_output - self.margin)


def budget_for(
    request: Request,
    window: int,
    *,
    reserved_output: int | None = None,
    margin_ratio: float = 0.05,
    min_margin: int = 256,
    counter: TokenCounter = estimate_tokens,
) -> Budget:
    """The budget for ``request``'s history in a ``window``-token model.

    System messages of the request and its tool definitions are counted with ``counter`` /
    the same bytes/4 rule; ``reserved_output`` defaults to ``request.max_output_tokens`` or
    4096; the margin is ``max(min_margin, window * margin_ratio)``.
    """
    system = sum(counter(m) for m in request.messages if isinstance(m, SystemMessage))
    tools = sum(
        _text_tokens(
            orjson.dumps(t.model_dump(mode="json", exclude_none=True), option=orjson.OPT_SORT_KEYS).decode()
        )
        for t in request.tools
    )
    out = reserved_output if reserved_output is not None else (request.max_output_tokens or 4096)
    return Budget(
        window=window,
        system=system,
        tools=tools,
        reserved_output=out,
        margin=max(min_margin, int(window * margin_ratio)),
    )


@dataclass(frozen=True)
class Item:
    """One message of the view and the entry it came from (``entry_id`` None: synthetic)."""

    entry_id: str | None
    message: Message


@dataclass(frozen=True)
class Group:
    """An interaction group: atomic unit of the kept suffix. ``tokens`` is its estimate."""

    items: tuple[Item, ...]
    tokens: int

    @property
    def first_entry_id(self) -> str | None:
        """Id of the first entry of the group that is a real entry."""
        return next((i.entry_id for i in self.items if i.entry_id is not None), None)


@dataclass
class History:
    """The path as a message view, after the latest compaction: ``summary`` (or None), the
    ``compaction_id`` it came from, the items and the view-only repairs applied."""

    summary: str | None
    compaction_id: str | None
    items: list[Item]
    repairs: list[dict[str, Any]] = field(default_factory=list)


def summary_message(summary: str) -> UserMessage:
    """The user message that carries a compaction summary at the head of the context."""
    return UserMessage(content=[TextPart(text=SUMMARY_PREFIX + summary + SUMMARY_SUFFIX)])


def _starts_group(msg: Message) -> bool:
    return isinstance(msg, UserMessage)


def _group_start(items: Sequence[Item], i: int) -> int:
    while i > 0 and not _starts_group(items[i].message):
        i -= 1
    return i


def _entry_items(entries: Sequence[Entry]) -> list[Item]:
    out: list[Item] = []
    for e in entries:
        if e.type == "message":
            msg = e.message()
            assert msg is not None
            out.append(Item(e.id, msg))
        elif e.type == "branch_summary":
            text = BRANCH_PREFIX + str(e.payload.get("summary", "")) + SUMMARY_SUFFIX
            out.append(Item(e.id, UserMessage(content=[TextPart(text=text)])))
    return out


def _normalise(items: list[Item], repairs: list[dict[str, Any]]) -> list[Item]:
    """View-only repairs of recorded defects, O(n): each assistant message is followed by the
    results of its calls in call order (a result recorded elsewhere is moved there; a call with
    no result gets an error result); results whose call is not in the view, second results for
    one call and assistant messages with no content are left out."""
    first_result: dict[str, Item] = {}
    for it in items:
        if isinstance(it.message, ToolResultMessage):
            first_result.setdefault(it.message.tool_call_id, it)
    calls = {c.id for it in items if isinstance(it.message, AssistantMessage) for c in it.message.tool_calls}
    out: list[Item] = []
    emitted: set[str] = set()
    for it in items:
        msg = it.message
        if isinstance(msg, ToolResultMessage):
            tid = msg.tool_call_id
            if tid not in calls:
                repairs.append(
                    {"kind": "orphan_result_left_out", "tool_call_id": tid, "entry_id": it.entry_id}
                )
            elif first_result[tid] is not it:
                repairs.append(
                    {"kind": "duplicate_result_left_out", "tool_call_id": tid, "entry_id": it.entry_id}
                )
            continue
        if isinstance(msg, AssistantMessage) and not msg.content:
            repairs.append({"kind": "empty_assistant_left_out", "entry_id": it.entry_id})
            continue
        out.append(it)
        if not isinstance(msg, AssistantMessage):
            continue
        for call in msg.tool_calls:
            if call.id in emitted:
                continue  # a repeated call id: its result already follows the first one
            emitted.add(call.id)
            found = first_result.get(call.id)
            if found is not None:
                out.append(found)
                continue
            out.append(
                Item(
                    None,
                    ToolResultMessage(
                        tool_call_id=call.id,
                        name=call.name,
                        is_error=True,
                        content=[TextPart(text=MISSING_RESULT)],
                    ),
                )
            )
            repairs.append({"kind": "missing_result", "tool_call_id": call.id})
    return out


def history_from_path(path: Sequence[Entry]) -> History:
    """The message view of a root→leaf ``path`` (see module doc, step 1)."""
    repairs: list[dict[str, Any]] = []
    last_c = max((i for i, e in enumerate(path) if e.type == "compaction"), default=None)
    if last_c is None:
        return History(None, None, _normalise(_entry_items(path), repairs), repairs)
    comp = path[last_c].compaction()
    assert comp is not None
    before = _entry_items(path[:last_c])
    kept: list[Item] = []
    if comp.first_kept_entry_id is not None:
        idx = next((i for i, it in enumerate(before) if it.entry_id == comp.first_kept_entry_id), None)
        if idx is None:
            repairs.append({"kind": "first_kept_not_on_path", "entry_id": comp.first_kept_entry_id})
        else:
            start = _group_start(before, idx)
            if start != idx:
                repairs.append(
                    {
                        "kind": "first_kept_moved_to_group_start",
                        "entry_id": comp.first_kept_entry_id,
                        "moved_to": before[start].entry_id,
                    }
                )
            kept = before[start:]
    items = kept + _entry_items(path[last_c + 1 :])
    return History(comp.summary, path[last_c].id, _normalise(items, repairs), repairs)


Grouper = Callable[[Sequence[Item]], list[list[Item]]]


def interaction_groups(items: Sequence[Item]) -> list[list[Item]]:
    """Cut ``items`` at each user message (see module doc, step 2)."""
    groups: list[list[Item]] = []
    for it in items:
        if not groups or _starts_group(it.message):
            groups.append([])
        groups[-1].append(it)
    return groups


@dataclass
class Context:
    """A rebuilt context.

    ``messages``: summary message (if any) then the kept suffix, in order; ``kept``/``dropped``:
    the groups kept and the ones that fell out (a prefix); ``tokens``: estimate of
    ``messages``; ``fits``: whether they fit ``budget.available`` (False only when even the
    last group alone does not fit); ``repairs``: view-only repairs of the history.
    """

    messages: list[Message]
    kept: list[Group]
    dropped: list[Group]
    tokens: int
    tokens_all: int
    budget: Budget
    fits: bool
    summary: str | None
    compaction_id: str | None
    repairs: list[dict[str, Any]]

    @property
    def first_kept_entry_id(self) -> str | None:
        """First real entry of the kept suffix (None when nothing is kept)."""
        return next((g.first_entry_id for g in self.kept if g.first_entry_id is not None), None)

    def to_bytes(self) -> bytes:
        """Canonical bytes of the messages (sorted keys): equal for equal history + budget."""
        return b"[" + b",".join(message_bytes(m) for m in self.messages) + b"]"


def build_context(
    path: Sequence[Entry],
    budget: Budget | int,
    *,
    counter: TokenCounter = estimate_tokens,
    grouper: Grouper = interaction_groups,
) -> Context:
    """Rebuild the context of a root→leaf ``path`` under ``budget`` (a :class:`Budget` or the
    tokens available for history). Pure; O(messages). ``grouper`` is replaceable for tests
    only (fault injection)."""
    if isinstance(budget, int):
        budget = Budget(window=budget)
    hist = history_from_path(path)
    groups = [Group(tuple(g), sum(counter(i.message) for i in g)) for g in grouper(hist.items)]
    head: list[Message] = [summary_message(hist.summary)] if hist.summary is not None else []
    head_tokens = sum(counter(m) for m in head)
    available = budget.available
    used = head_tokens
    start = len(groups)
    while start > 0 and used + groups[start - 1].tokens <= available:
        start -= 1
        used += groups[start].tokens
    fits = True
    if start == len(groups) and groups:
        # not even the last group fits: keep it anyway and say so (the caller decides)
        start -= 1
        used += groups[start].tokens
        fits = False
    elif head_tokens > available:
        fits = False
    kept = groups[start:]
    messages = head + [i.message for g in kept for i in g.items]
    return Context(
        messages=messages,
        kept=kept,
        dropped=groups[:start],
        tokens=used,
        tokens_all=head_tokens + sum(g.tokens for g in groups),
        budget=budget,
        fits=fits,
        summary=hist.summary,
        compaction_id=hist.compaction_id,
        repairs=hist.repairs,
    )


__all__ = [
    "MISSING_RESULT",
    "SUMMARY_PREFIX",
    "Budget",
    "Context",
    "Group",
    "History",
    "Item",
    "budget_for",
    "build_context",
    "estimate_tokens",
    "history_from_path",
    "interaction_groups",
    "message_bytes",
    "summary_message",
]
