"""Compaction: what falls out of the context is summarised into an appended entry.

A configured (cheap) deployment writes a structured summary — goal, constraints, progress,
decisions, next steps, files and resources touched — updated from the previous summary on the
path, one chunk of the dropped history at a time (so a summariser with a small window can fold
a long history). The result is appended as a ``compaction`` entry (``summary``,
``first_kept_entry_id``, ``tokens_before``, ``tokens_after``); nothing is deleted, and the next
:func:`gateway.context.build_context` starts from it.

What is kept is a contiguous suffix of whole interaction groups (tool results never leave their
calls) sized to ``keep_ratio`` of the budget, so the session has room to grow before the next
compaction. Triggers (wired in the pipeline and API): the target window cannot hold the
request (``window``), ``POST /v1/sessions/{id}/compact`` (``request``), an upstream
context-overflow error (``overflow``; compact, retry once).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING

from gateway.context import Budget, Group, TokenCounter, build_context, estimate_tokens
from gateway.schema import (
    AssistantMessage,
    ImagePart,
    Request,
    SystemMessage,
    TextPart,
    ThinkingPart,
    ToolResultMessage,
    UserMessage,
)
from gateway.sessions.model import CompactionPayload, Entry
from gateway.sessions.store import LEAF, SessionStore

if TYPE_CHECKING:
    from gateway.config import Deployment
    from gateway.providers.base import Provider

SECTIONS = ("Goal", "Constraints", "Progress", "Decisions", "Next steps", "Files and resources touched")

SYSTEM_PROMPT = (
    "You maintain the running summary of a long conversation between a user and an AI agent that "
    "uses tools. The summary replaces the conversation's older messages, so it must let the agent "
    "continue the work without them. Write Markdown with exactly these sections, in this order:\n"
    + "\n".join(f"## {s}" for s in SECTIONS)
    + "\nBe specific: exact file paths, commands, identifiers, numbers, error messages and user "
    "preferences. When a previous summary is given, update it with the new messages: keep what "
    "is still true, revise what changed, drop nothing the agent still needs. Answer with the "
    "summary only."
)

Summarizer = Callable[[Request], Awaitable[str]]
"""Turns a summary request (internal schema) into the summary text."""

RESULT_CHARS = 2000
"""Characters of each tool result / thinking block shown to the summariser (the rest is cut)."""


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"\n[... {len(text) - limit} more characters]"


def render_transcript(groups: Sequence[Group], result_chars: int = RESULT_CHARS) -> str:
    """The dropped history as plain text for the summariser: one block per message, tool
    calls with their arguments, tool results cut to ``result_chars`` characters."""
    lines: list[str] = []
    for g in groups:
        for item in g.items:
            m = item.message
            if isinstance(m, UserMessage):
                body = "\n".join(p.text if isinstance(p, TextPart) else f"[{p.type}]" for p in m.content)
                lines.append(f"[user]\n{body}")
            elif isinstance(m, AssistantMessage):
                for p in m.content:
                    if isinstance(p, TextPart):
                        lines.append(f"[assistant]\n{p.text}")
                    elif isinstance(p, ThinkingPart):
                        lines.append(f"[assistant thinking]\n{_cut(p.text, result_chars)}")
                    elif p.type == "tool_call":
                        lines.append(f"[tool call {p.id}] {p.name}({_cut(p.raw_arguments, result_chars)})")
            elif isinstance(m, ToolResultMessage):
                body = "\n".join(
                    p.text if isinstance(p, TextPart) else "[image]"
                    for p in m.content
                    if isinstance(p, TextPart | ImagePart)
                )
                flag = " (error)" if m.is_error else ""
                lines.append(f"[tool result {m.tool_call_id}{flag}]\n{_cut(body, result_chars)}")
    return "\n\n".join(lines)


def summary_request(
    previous: str | None, transcript: str, model: str, max_output_tokens: int = 4096
) -> Request:
    """The request that asks the summariser for an updated summary."""
    prev = previous if previous else "(none: this is the first summary)"
    text = (
        f"<previous-summary>\n{prev}\n</previous-summary>\n\n"
        f"<new-messages>\n{transcript}\n</new-messages>\n\n"
        "Write the updated summary now."
    )
    return Request(
        model=model,
        max_output_tokens=max_output_tokens,
        temperature=0.0,
        messages=[
            SystemMessage(content=[TextPart(text=SYSTEM_PROMPT)]),
            UserMessage(content=[TextPart(text=text)]),
        ],
    )


def chunk_groups(groups: Sequence[Group], chunk_tokens: int) -> list[list[Group]]:
    """Consecutive runs of whole groups of at most ``chunk_tokens`` tokens each (a larger single
    group is a chunk of its own; its results are cut by :func:`render_transcript`)."""
    chunks: list[list[Group]] = []
    size = 0
    for g in groups:
        if not chunks or size + g.tokens > chunk_tokens:
            chunks.append([])
            size = 0
        chunks[-1].append(g)
        size += g.tokens
    return chunks


async def compact(
    store: SessionStore,
    session_id: str,
    *,
    summarizer: Summarizer,
    budget: Budget | int,
    summarizer_model: str = "summarizer",
    deployment: str | None = None,
    reason: str = "request",
    keep_ratio: float = 0.5,
    chunk_tokens: int = 24_000,
    counter: TokenCounter = estimate_tokens,
    leaf_id: str | None = LEAF,
) -> Entry | None:
    """Compact session ``session_id`` for ``budget`` and append the compaction entry.

    Keeps the longest suffix of whole groups within ``keep_ratio`` × the available budget (at
    least the last group); summarises the rest, chunk by chunk of ``chunk_tokens`` tokens,
    starting from the previous summary. Returns the appended entry, or None when there is
    nothing to summarise (a single group). Raises whatever ``summarizer`` raises (nothing is
    appended then) and :class:`~gateway.sessions.store.SessionNotFound`.

    ``leaf_id`` is the leaf to compact (a turn's own leaf; None: an empty history; default
    :data:`~gateway.sessions.store.LEAF`: the session's leaf, read once). The entry goes under
    that leaf and moves the session leaf only if it is still there (compare-and-set), so a
    summary written while other turns appended never lands under entries it did not read.
    """
    if isinstance(budget, int):
        budget = Budget(window=budget)
    if leaf_id == LEAF:
        path = await store.path(session_id)
    else:
        await store.get_session(session_id)
        path = await store.path(session_id, leaf_id) if leaf_id is not None else []
    before = build_context(path, budget, counter=counter)
    target = build_context(path, Budget(window=max(1, int(budget.available * keep_ratio))), counter=counter)
    dropped, kept = target.dropped, target.kept
    if not dropped:
        if len(kept) < 2:
            return None
        dropped, kept = kept[:-1], kept[-1:]
    summary = target.summary
    for chunk in chunk_groups(dropped, chunk_tokens):
        summary = (
            await summarizer(summary_request(summary, render_transcript(chunk), summarizer_model))
        ).strip()
    assert summary is not None
    first_kept = next((g.first_entry_id for g in kept if g.first_entry_id is not None), None)
    draft = CompactionPayload(
        summary=summary,
        first_kept_entry_id=first_kept,
        tokens_before=before.tokens_all,
        deployment=deployment,
        reason=reason,
    )
    pending = Entry(
        id="pending",
        session_id=session_id,
        parent_id=path[-1].id if path else None,
        type="compaction",
        created_at=0.0,
        payload=draft.model_dump(mode="json"),
    )
    after = build_context([*path, pending], budget, counter=counter)
    payload = draft.model_copy(update={"tokens_after": after.tokens_all})
    read = path[-1].id if path else None
    return await store.append(
        session_id, "compaction", payload, parent_id=read, expect_leaf=read, create=False
    )


def deployment_summarizer(provider: Provider, deployment: Deployment, api_key: str | None) -> Summarizer:
    """A :data:`Summarizer` that asks ``deployment`` through its wire ``provider``; the answer's
    text is the summary. Raises :class:`gateway.errors.UpstreamError` as the provider does."""

    async def summarize(request: Request) -> str:
        req = request.model_copy(update={"model": deployment.model})
        resp = await provider.complete(req, deployment, api_key)
        return resp.message.text

    return summarize


__all__ = [
    "SECTIONS",
    "SYSTEM_PROMPT",
    "Summarizer",
    "chunk_groups",
    "compact",
    "deployment_summarizer",
    "render_transcript",
    "summary_request",
]
