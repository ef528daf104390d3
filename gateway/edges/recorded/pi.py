"""Pi coding-agent session logs (``*.jsonl``; corpus ``pi-mono/``, badlogic/pi-mono) ->
Anthropic Messages conversations.

Format (corpus README A1): one entry per line, ``type`` ``session`` | ``message`` |
``model_change`` | ``thinking_level_change`` | ``compaction``. Messages: ``user`` (text and
image blocks), ``assistant`` (``text``, ``thinking`` + ``thinkingSignature``, ``toolCall`` with
``arguments`` as an object; ``stopReason`` ``toolUse|stop|aborted|error``; ``usage`` with
``input/output/cacheRead/cacheWrite`` and ``cost.total`` in USD), ``toolResult``
(``toolCallId``, ``content[]``, ``isError``) and ``bashExecution`` (a command the user ran,
sent to the model as user text). Entries form an append-only log; a ``compaction`` entry
(``summary``, ``firstKeptEntryIndex``) makes every later context a rebuilt view: the summary as
a user message, then the entries from ``firstKeptEntryIndex`` on. A line may hold two entries
(``compact.jsonl``), so entries are read with a streaming decoder.

Mapping: ``toolCall`` -> ``tool_use``; ``toolResult`` -> a user message with one
``tool_result`` block; images -> base64 ``image`` blocks. Every assistant message is an
assistant turn (aborted and errored ones included: their unanswered calls are what the
guards must catch). Pi records no tool definitions and no ``max_tokens``; the request uses
``max_tokens`` 32000 (Claude 4.5's default output limit in Pi).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gateway.edges.recorded.jsonstream import iter_objects
from gateway.replay.records import Conversation, Issue, RecordedTurn

MAX_TOKENS = 32000
SUMMARY_PREFIX = (
    "The conversation history before this point was compacted into the following summary:\n\n<summary>\n"
)
SUMMARY_SUFFIX = "\n</summary>"
_STOPS = {"toolUse": "tool_use", "stop": "stop", "aborted": "aborted", "error": "error", "length": "length"}


def looks_like(first: Any) -> bool:
    """True when the first JSON value of a file is a Pi ``session`` header."""
    return isinstance(first, dict) and first.get("type") == "session" and "cwd" in first


def _blocks(content: Any, source: str, line: int, issues: list[Issue]) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    out: list[dict[str, Any]] = []
    for b in content or []:
        kind = b.get("type") if isinstance(b, dict) else None
        if kind == "text":
            if b.get("text"):
                out.append({"type": "text", "text": b["text"]})
        elif kind == "image":
            out.append(
                {
                    "type": "image",
                    "source": {
                        "type": "base64",
                        "media_type": b.get("mimeType", ""),
                        "data": b.get("data", ""),
                    },
                }
            )
        else:
            issues.append(Issue(source, line, f"unknown Pi content block {kind!r}; skipped"))
    return out


def _assistant(msg: dict[str, Any], source: str, line: int, issues: list[Issue]) -> dict[str, Any]:
    blocks: list[dict[str, Any]] = []
    for b in msg.get("content") or []:
        kind = b.get("type")
        if kind == "text":
            blocks.append({"type": "text", "text": b.get("text", "")})
        elif kind == "thinking":
            block = {"type": "thinking", "thinking": b.get("thinking", "")}
            if b.get("thinkingSignature"):
                block["signature"] = b["thinkingSignature"]
            blocks.append(block)
        elif kind == "toolCall":
            blocks.append(
                {
                    "type": "tool_use",
                    "id": b.get("id", ""),
                    "name": b.get("name", ""),
                    "input": b.get("arguments") or {},
                }
            )
        else:
            issues.append(Issue(source, line, f"unknown Pi assistant block {kind!r}; skipped"))
    return {"role": "assistant", "content": blocks}


def _usage(msg: dict[str, Any]) -> tuple[dict[str, int] | None, float | None]:
    u = msg.get("usage")
    if not isinstance(u, dict):
        return None, None
    usage = {
        "input_tokens": int(u.get("input") or 0),
        "output_tokens": int(u.get("output") or 0),
        "cache_read_tokens": int(u.get("cacheRead") or 0),
        "cache_write_tokens": int(u.get("cacheWrite") or 0),
    }
    cost = u.get("cost")
    total = cost.get("total") if isinstance(cost, dict) else None
    return usage, (float(total) if isinstance(total, int | float) else None)


def read(path: Path, source: str) -> tuple[list[Conversation], list[Issue]]:
    """Read one Pi session file. Returns one conversation (``name`` = the session id) and the
    issues found (unknown entries and blocks, undecodable lines)."""
    issues: list[Issue] = []
    text = path.read_text(encoding="utf-8")
    entries = list(iter_objects(text, source, issues))
    session_id = path.stem
    messages: list[dict[str, Any]] = []
    entry_of: list[int] = []  # entry position of each dialect message
    turns: list[RecordedTurn] = []
    views: dict[int, list[dict[str, Any]]] = {}
    view: list[dict[str, Any]] | None = None  # the rebuilt context after the last compaction
    for pos, (line, entry) in enumerate(entries):
        if not isinstance(entry, dict):
            issues.append(Issue(source, line, "entry is not a JSON object; skipped"))
            continue
        kind = entry.get("type")
        if kind == "session":
            session_id = str(entry.get("id") or session_id)
            continue
        if kind in ("model_change", "thinking_level_change"):
            continue
        if kind == "compaction":
            first = entry.get("firstKeptEntryIndex")
            summary = {
                "role": "user",
                "content": [
                    {"type": "text", "text": SUMMARY_PREFIX + str(entry.get("summary", "")) + SUMMARY_SUFFIX}
                ],
            }
            kept = [
                m for m, e in zip(messages, entry_of, strict=True) if isinstance(first, int) and e >= first
            ]
            view = [summary, *kept]
            continue
        if kind != "message":
            issues.append(Issue(source, line, f"unknown Pi entry type {kind!r}; skipped"))
            continue
        msg = entry.get("message") or {}
        role = msg.get("role")
        out: dict[str, Any] | None
        if role == "user":
            out = {"role": "user", "content": _blocks(msg.get("content"), source, line, issues)}
        elif role == "assistant":
            out = _assistant(msg, source, line, issues)
            usage, cost = _usage(msg)
            turns.append(
                RecordedTurn(
                    index=len(messages),
                    model=msg.get("model"),
                    usage=usage,
                    cost_usd=cost,
                    stop=_STOPS.get(str(msg.get("stopReason"))),
                )
            )
            if view is not None:
                views[len(turns) - 1] = list(view)
        elif role == "toolResult":
            out = {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": msg.get("toolCallId", ""),
                        "content": _blocks(msg.get("content"), source, line, issues),
                        "is_error": bool(msg.get("isError")),
                    }
                ],
            }
        elif role == "bashExecution":
            body = f"Ran `{msg.get('command', '')}`\n```\n{msg.get('output', '')}\n```"
            if msg.get("exitCode") not in (0, None):
                body += f"\n\nCommand exited with code {msg.get('exitCode')}"
            out = {"role": "user", "content": [{"type": "text", "text": body}]}
        else:
            issues.append(Issue(source, line, f"unknown Pi message role {role!r}; skipped"))
            out = None
        if out is not None:
            messages.append(out)
            entry_of.append(pos)
            if view is not None:
                view.append(out)
    head = {"model": "claude-sonnet-4-5", "max_tokens": MAX_TOKENS}
    conv = Conversation(
        source=source,
        name=session_id,
        dialect="anthropic_messages",
        head=head,
        messages=messages,
        turns=turns,
        views=views,
    )
    return [conv], issues
