"""Shared helpers for the wire-module tests: fixture loading, SSE replay and a strict
collector that turns internal stream events back into a Response."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson
import yaml

from gateway.guards.collect import native_part
from gateway.providers.sse import SseDecoder
from gateway.providers.wire_common import parse_arguments
from gateway.schema import (
    AssistantMessage,
    MessageEnd,
    MessageStart,
    PartDelta,
    PartEnd,
    PartStart,
    RedactedThinkingPart,
    Response,
    StreamError,
    StreamEvent,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    Usage,
)

REPO = Path(__file__).resolve().parents[3]
FIXTURES = REPO / "tests" / "fixtures"


def corpus_dir() -> Path:
    """``$TURNSTILE_CORPUS`` or ``../shared/corpus`` next to the repository."""
    return Path(os.environ.get("TURNSTILE_CORPUS", str(REPO.parent / "shared" / "corpus")))


def fixture(rel: str) -> Path:
    return FIXTURES / rel


def chunks_to_sse(text: str) -> bytes:
    """vercel-ai ``*.chunks.txt`` (one JSON event per line) -> SSE bytes."""
    return b"".join(b"data: " + line.encode() + b"\n\n" for line in text.splitlines() if line.strip())


def cassette(rel: str) -> list[dict[str, Any]]:
    """The ``interactions`` of a go-vcr / vcrpy YAML cassette under tests/fixtures."""
    return list(yaml.safe_load(fixture(rel).read_text(encoding="utf-8"))["interactions"])


def response_body(interaction: dict[str, Any]) -> bytes:
    body = interaction["response"]["body"]
    if isinstance(body, dict):
        body = body.get("string", "")
    return body.encode() if isinstance(body, str) else bytes(body)


def request_body(interaction: dict[str, Any]) -> dict[str, Any]:
    return dict(orjson.loads(interaction["request"]["body"]))


def replay(parser: Any, raw: bytes, chunk: int | None = None) -> list[StreamEvent]:
    """Feed ``raw`` SSE bytes through :class:`SseDecoder` (split every ``chunk`` bytes, or
    whole) into ``parser``, then ``finish()``."""
    dec = SseDecoder()
    events: list[StreamEvent] = []
    pieces = [raw] if chunk is None else [raw[i : i + chunk] for i in range(0, len(raw), chunk)]
    for piece in pieces:
        for name, data in dec.feed(piece):
            events.extend(parser.feed(name, data))
    for name, data in dec.close():
        events.extend(parser.feed(name, data))
    events.extend(parser.finish())
    return events


def collect(events: list[StreamEvent]) -> Response:
    """Rebuild a :class:`Response` from stream events, asserting the event grammar:
    MessageStart first, MessageEnd last, part indexes contiguous from 0, every delta inside
    its part's start/end, every part ended before MessageEnd."""
    assert events, "no events"
    assert isinstance(events[0], MessageStart), events[0]
    start = events[0]
    parts: dict[int, dict[str, Any]] = {}
    ended: set[int] = set()
    end: MessageEnd | None = None
    for ev in events[1:]:
        assert end is None, f"event after MessageEnd: {ev}"
        if isinstance(ev, PartStart):
            assert ev.index == len(parts), f"part index {ev.index} not contiguous ({len(parts)} parts)"
            parts[ev.index] = {"start": ev, "text": "", "args": "", "sig": ev.signature or ""}
        elif isinstance(ev, PartDelta):
            assert ev.index in parts and ev.index not in ended, f"delta outside its part: {ev}"
            p = parts[ev.index]
            p["text"] += ev.text or ""
            p["args"] += ev.arguments or ""
            p["sig"] += ev.signature or ""
        elif isinstance(ev, PartEnd):
            assert ev.index in parts and ev.index not in ended, f"bad PartEnd: {ev}"
            ended.add(ev.index)
        elif isinstance(ev, MessageEnd):
            assert ended == set(parts), f"parts not ended: {set(parts) - ended}"
            end = ev
        elif isinstance(ev, StreamError):
            raise AssertionError(f"stream error: {ev}")
        else:
            raise AssertionError(f"unexpected event {ev}")
    assert end is not None, "no MessageEnd"
    content: list[Any] = []
    for i in range(len(parts)):
        p = parts[i]
        st: PartStart = p["start"]
        if st.kind == "text":
            content.append(TextPart(text=p["text"]))
        elif st.kind == "thinking":
            content.append(ThinkingPart(text=p["text"], signature=p["sig"] or None, provenance=st.provenance))
        elif st.kind == "redacted_thinking":
            content.append(RedactedThinkingPart(data=st.data or "", provenance=st.provenance))
        elif st.kind == "native":
            content.append(native_part(st, p["args"]))
        else:
            content.append(
                ToolCallPart(
                    id=st.id or "",
                    name=st.name or "",
                    arguments=parse_arguments(p["args"]),
                    raw_arguments=p["args"],
                )
            )
    return Response(
        id=start.id,
        model=start.model,
        message=AssistantMessage(content=content),
        stop_reason=end.stop_reason,
        usage=end.usage,
    )


def summary(resp: Response) -> list[tuple[Any, ...]]:
    """Comparable content of a response: (kind, text/name, id, arguments object)."""
    out: list[tuple[Any, ...]] = []
    for p in resp.message.content:
        if isinstance(p, TextPart):
            out.append(("text", p.text))
        elif isinstance(p, ThinkingPart):
            out.append(("thinking", p.text, p.signature))
        elif isinstance(p, ToolCallPart):
            out.append(("tool_call", p.name, p.arguments))
        else:
            out.append((p.type,))
    return out


def usage_tuple(u: Usage) -> tuple[int, int, int, int, int]:
    return (u.input_tokens, u.output_tokens, u.cache_read_tokens, u.cache_write_tokens, u.reasoning_tokens)
