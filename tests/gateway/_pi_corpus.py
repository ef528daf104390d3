"""Reads Pi coding-agent session files (corpus part A1) into session entries.

Test helper only: Pi's JSONL field names stay out of ``gateway/``. A Pi file is linear (each
entry's parent is the previous one); ``compaction.firstKeptEntryIndex`` is an index into the
file's objects, header included. ``compact.jsonl`` has one line holding two objects, so the
file is read with a streaming decoder. Entry ids are ``<session>:<original index>``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import orjson

from gateway.schema import (
    AssistantMessage,
    ImagePart,
    Message,
    Provenance,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultMessage,
    UserMessage,
)
from gateway.sessions.model import CompactionPayload, Entry, MessagePayload, ModelChangePayload

REPO = Path(__file__).resolve().parents[2]
CORPUS = Path(os.environ.get("TURNSTILE_CORPUS", REPO.parent / "shared" / "corpus"))
PI_DIR = CORPUS / "pi-mono"
FIXTURE = REPO / "tests" / "fixtures" / "pi-mono" / "compact-slice.jsonl"
FIXTURE_FIRST_INDEX = 560
"""Original index (in compact.jsonl) of the fixture slice's second object (its first is the header)."""


def read_objects(path: Path) -> list[dict[str, Any]]:
    """Every JSON object in ``path``, in order, however they are split over lines."""
    text = path.read_text(encoding="utf-8")
    dec = json.JSONDecoder()
    out: list[dict[str, Any]] = []
    i = 0
    while i < len(text):
        while i < len(text) and text[i].isspace():
            i += 1
        if i >= len(text):
            break
        obj, i = dec.raw_decode(text, i)
        out.append(obj)
    return out


def _parts(content: Any) -> list[Any]:
    if isinstance(content, str):
        return [TextPart(text=content)]
    out: list[Any] = []
    for c in content or []:
        if c.get("type") == "text":
            out.append(TextPart(text=c["text"]))
        elif c.get("type") == "image":
            out.append(ImagePart(data=c.get("data"), media_type=c.get("mimeType")))
    return out


def to_message(m: dict[str, Any]) -> Message | None:
    """One Pi message as an internal-schema message (None for a role it does not carry)."""
    role = m.get("role")
    if role == "user":
        return UserMessage(content=_parts(m.get("content")) or [TextPart(text="")])
    if role == "bashExecution":
        text = f"Ran `{m.get('command', '')}`\n```\n{m.get('output', '')}\n```"
        return UserMessage(content=[TextPart(text=text)])
    if role == "toolResult":
        return ToolResultMessage(
            tool_call_id=m["toolCallId"],
            name=m.get("toolName"),
            is_error=bool(m.get("isError")),
            content=_parts(m.get("content")),
        )
    if role == "assistant":
        prov = Provenance(
            api="anthropic_messages", provider=m.get("provider", "anthropic"), model=m.get("model", "")
        )
        parts: list[Any] = []
        for c in m.get("content") or []:
            kind = c.get("type")
            if kind == "text":
                parts.append(TextPart(text=c["text"]))
            elif kind == "thinking":
                parts.append(
                    ThinkingPart(
                        text=c.get("thinking", ""), signature=c.get("thinkingSignature"), provenance=prov
                    )
                )
            elif kind == "toolCall":
                args = c.get("arguments") or {}
                parts.append(
                    ToolCallPart(
                        id=c["id"], name=c["name"], arguments=args, raw_arguments=orjson.dumps(args).decode()
                    )
                )
        return AssistantMessage(content=parts)
    return None


def to_entries(objs: list[dict[str, Any]], session_id: str, first_index: int = 1) -> list[Entry]:
    """Pi objects (header first) as a linear chain of entries. ``first_index`` is the original
    index of ``objs[1]`` (1 for a whole file; the slice's offset for a fixture slice)."""
    entries: list[Entry] = []
    parent: str | None = None
    for k, obj in enumerate(objs[1:]):
        idx = first_index + k
        eid = f"{session_id}:{idx}"
        kind = obj.get("type")
        payload: Any
        if kind == "message":
            msg = to_message(obj["message"])
            if msg is None:
                continue
            etype, payload = "message", MessagePayload(message=msg)
        elif kind == "compaction":
            fk = obj.get("firstKeptEntryIndex")
            etype, payload = (
                "compaction",
                CompactionPayload(
                    summary=obj["summary"],
                    first_kept_entry_id=f"{session_id}:{fk}" if fk is not None else None,
                    tokens_before=int(obj.get("tokensBefore") or 0),
                    reason="window",
                ),
            )
        elif kind == "model_change":
            etype, payload = "model_change", ModelChangePayload(model=obj.get("modelId"))
        else:
            continue
        entries.append(
            Entry(
                id=eid,
                session_id=session_id,
                parent_id=parent,
                type=etype,
                created_at=0.0,
                payload=payload.model_dump(mode="json"),
                seq=idx,
            )
        )
        parent = eid
    return entries


def pi_files() -> list[Path]:
    """The Pi session files of the corpus (empty when the corpus is absent)."""
    return sorted(PI_DIR.glob("*.jsonl")) if PI_DIR.is_dir() else []


async def load_into(store: Any, session_id: str, entries: list[Entry]) -> dict[str, str]:
    """Append ``entries`` (a linear chain) to ``store``, in as few transactions as compactions
    allow; compaction ``first_kept_entry_id`` values are mapped to the stored ids. Returns
    old id -> stored id."""
    mapping: dict[str, str] = {}
    batch: list[Entry] = []

    async def flush() -> None:
        if batch:
            stored = await store.append_many(session_id, [(e.type, e.payload) for e in batch])
            mapping.update({e.id: s.id for e, s in zip(batch, stored, strict=True)})
            batch.clear()

    for e in entries:
        if e.type != "compaction":
            batch.append(e)
            continue
        await flush()
        payload = dict(e.payload)
        if payload.get("first_kept_entry_id"):
            payload["first_kept_entry_id"] = mapping.get(payload["first_kept_entry_id"], "not-loaded")
        mapping[e.id] = (await store.append(session_id, "compaction", payload)).id
    await flush()
    return mapping
