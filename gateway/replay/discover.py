"""Finding recorded files and choosing their reader.

A path may be a file or a directory (walked recursively, in sorted order). ``*.md``,
``*.tsv`` and files under an excluded directory name (default ``routing``: the routing data
set beside the corpus, which is not traffic) are skipped. The reader is chosen by name first
(``*.traj``, ``*.chunks.txt``, ``*.yaml``/``*.yml``, ``*.jsonl``) and then by content.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from gateway.edges.recorded import openai_logs, openhands, pi
from gateway.edges.recorded.jsonstream import iter_objects
from gateway.providers.recorded import readers
from gateway.replay.records import Conversation, Exchange, Issue

SKIP_SUFFIXES = (".md", ".tsv", ".py", ".pyc")
DEFAULT_EXCLUDE = ("routing",)


@dataclass
class Loaded:
    """What the readers made of one file."""

    conversations: list[Conversation] = field(default_factory=list)
    exchanges: list[Exchange] = field(default_factory=list)
    issues: list[Issue] = field(default_factory=list)
    unsupported: str | None = None


def iter_files(paths: list[Path], exclude: tuple[str, ...] = DEFAULT_EXCLUDE) -> Iterator[Path]:
    """Every file under ``paths`` (sorted), minus skipped suffixes and excluded directories."""
    for p in paths:
        if p.is_file():
            yield p
            continue
        found: list[Path] = []
        for root, dirs, files in os.walk(p):
            dirs[:] = sorted(d for d in dirs if d not in exclude and not d.startswith("."))
            found.extend(
                Path(root) / f for f in files if not f.endswith(SKIP_SUFFIXES) and not f.startswith(".")
            )
        yield from sorted(found)


def _json_file(data: object, source: str) -> Loaded:
    if pi.looks_like(data):
        return Loaded(
            issues=[Issue(source, 1, "Pi session stored as one JSON document; expected JSON Lines")]
        )
    if openai_logs.looks_like_toolbench(data):
        c, i = openai_logs.read_toolbench(data, source)  # type: ignore[arg-type]
        return Loaded(conversations=c, issues=i)
    if openai_logs.looks_like_tau_bench(data):
        c, i = openai_logs.read_tau_bench(data, source)  # type: ignore[arg-type]
        return Loaded(conversations=c, issues=i)
    if openai_logs.looks_like_swe_agent(data):
        c, i = openai_logs.read_swe_agent(data, source)  # type: ignore[arg-type]
        return Loaded(conversations=c, issues=i)
    if openhands.looks_like(data):
        conv, i = openhands.read_history(data, source, "history", openhands.model_of(data))  # type: ignore[arg-type]
        return Loaded(conversations=[conv], issues=i)
    if readers.looks_like_inline_snapshot(data):
        ex, i = readers.read_inline_snapshot(data, source)  # type: ignore[arg-type]
        return Loaded(exchanges=ex, issues=i)
    if openai_logs.looks_like_chat_body(data):
        c, i = openai_logs.read_chat_body(data, source)  # type: ignore[arg-type]
        return Loaded(conversations=c, issues=i)
    if readers.sniff_body_api(data) is not None:
        return Loaded(exchanges=readers.read_json_body(data, source))
    return Loaded(unsupported=readers.describe_body(data))


def _jsonl(path: Path, source: str) -> Loaded:
    issues: list[Issue] = []
    objs = list(iter_objects(path.read_text(encoding="utf-8"), source, issues))
    if not objs:
        return Loaded(issues=issues or [Issue(source, None, "empty file")])
    if pi.looks_like(objs[0][1]):
        c, i = pi.read(path, source)
        return Loaded(conversations=c, issues=i)
    out = Loaded(issues=issues)
    for line, obj in objs:
        if openhands.looks_like_output_line(obj):
            conv, i = openhands.read_history(
                obj["history"],
                source,
                f"line {line} ({obj.get('instance_id')})",
                openhands.model_of(obj["history"]),
                obj.get("metrics"),
            )
            out.conversations.append(conv)
            out.issues.extend(i)
        elif openai_logs.looks_like_chat_body(obj):
            c, i = openai_logs.read_chat_body(obj, source)
            for conv in c:
                conv.name = f"line {line}"
            out.conversations.extend(c)
            out.issues.extend(i)
        else:
            out.issues.append(Issue(source, line, "unrecognised JSON Lines record; skipped"))
    return out


def load(path: Path, source: str) -> Loaded:
    """Read one file with the reader its name and content call for. Never raises for bad
    input: unreadable content becomes an :class:`Issue` with the file (and line)."""
    name = path.name
    try:
        if name.endswith(".chunks.txt"):
            ex, i = readers.read_vercel_chunks(path, source)
            return Loaded(exchanges=ex, issues=i)
        if name.endswith((".yaml", ".yml")):
            ex, i = readers.read_cassette(path, source)
            return Loaded(exchanges=ex, issues=i)
        if name.endswith(".jsonl"):
            return _jsonl(path, source)
        raw = path.read_bytes()
        if name.endswith(".txt") and raw.lstrip()[:6] in (b"event:", b"data: ", b"data:{"):
            ex, i = readers.read_raw_sse(path, source)
            return Loaded(exchanges=ex, issues=i)
        try:
            data = orjson.loads(raw)
        except orjson.JSONDecodeError as err:
            pos = getattr(err, "pos", 0) or 0
            return Loaded(issues=[Issue(source, raw.count(b"\n", 0, pos) + 1, f"not JSON: {err}")])
        return _json_file(data, source)
    except (OSError, UnicodeDecodeError) as err:
        return Loaded(issues=[Issue(source, None, f"cannot read: {err}")])
