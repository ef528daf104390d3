"""Shared helpers for the edge tests: the corpus location, an iterator over recorded client
request bodies, SSE frame parsing and small event builders."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import yaml

REPO = Path(__file__).resolve().parents[3]
CORPUS = Path(os.environ.get("TURNSTILE_CORPUS") or (REPO.parent / "shared" / "corpus"))
FIXTURES = REPO / "tests" / "fixtures"

CLIENT_SOURCES = ("pydantic-ai", "fantasy", "simonw-llm", "envoy-ai-gateway", "anthropic-sdk-python")


class _Loader(yaml.SafeLoader):
    pass


_Loader.add_constructor(
    "tag:yaml.org,2002:binary",
    lambda loader, node: loader.construct_scalar(node),  # type: ignore[arg-type]
)


def dialect_of(url: str) -> str | None:
    """``openai_chat`` for a ``.../chat/completions`` URL, ``anthropic_messages`` for
    ``.../v1/messages``, else None."""
    path = url.split("?", 1)[0]
    if path.endswith("/chat/completions"):
        return "openai_chat"
    if path.endswith("/v1/messages"):
        return "anthropic_messages"
    return None


def _body_bytes(rq: dict[str, Any]) -> bytes | None:
    if "parsed_body" in rq:
        return None if rq["parsed_body"] is None else orjson.dumps(rq["parsed_body"])
    body = rq.get("body")
    if isinstance(body, dict) and "string" in body:
        body = body["string"]
    if isinstance(body, str):
        return body.encode()
    if isinstance(body, list | dict):
        return orjson.dumps(body)
    return body


def _status(it: dict[str, Any]) -> int:
    resp = it.get("response") or {}
    status = resp.get("status")
    if isinstance(status, dict):
        return int(status.get("code") or 0)
    return int(resp.get("code") or resp.get("status_code") or 0)


def iter_recorded_requests(root: Path = CORPUS) -> Iterator[tuple[str, int, str, bytes, int]]:
    """``(relative file, interaction index, url, body, recorded response status)`` for every
    recorded HTTP request of the client-library cassettes (vcrpy, go-vcr, inline snapshots)."""
    for src in CLIENT_SOURCES:
        for path in sorted((root / src).rglob("*")):
            if not path.is_file():
                continue
            rel = str(path.relative_to(root))
            if path.suffix in (".yaml", ".yml"):
                doc = yaml.load(path.read_text(), Loader=_Loader)
                items = (doc or {}).get("interactions") or [] if isinstance(doc, dict) else []
                for i, it in enumerate(items):
                    rq = it.get("request") or {}
                    body = _body_bytes(rq)
                    if body is not None:
                        yield rel, i, rq.get("uri") or rq.get("url") or "", body, _status(it)
            elif path.suffix == ".json" and src == "anthropic-sdk-python":
                doc = orjson.loads(path.read_bytes())
                if isinstance(doc, list):
                    for i, it in enumerate(doc):
                        if isinstance(it, dict) and isinstance(it.get("request"), dict):
                            body = _body_bytes(it["request"])
                            if body is not None:
                                yield rel, i, it["request"].get("url", ""), body, _status(it)


def sse_events(frames: list[bytes]) -> list[tuple[str | None, Any]]:
    """Split rendered SSE frames into ``(event name, decoded data)``; ``[DONE]`` stays a str."""
    out: list[tuple[str | None, Any]] = []
    for frame in frames:
        assert frame.endswith(b"\n\n"), frame
        event = None
        data = None
        for line in frame[:-2].split(b"\n"):
            if line.startswith(b"event: "):
                event = line[7:].decode()
            elif line.startswith(b"data: "):
                raw = line[6:]
                data = raw.decode() if raw == b"[DONE]" else orjson.loads(raw)
        out.append((event, data))
    return out


def c10_events() -> list[Any]:
    """Internal events an Anthropic upstream stream produces for handed case C10: text at part
    index 0, tool calls toolu_s1 / toolu_s2 at part indexes 1 and 2."""
    from gateway.schema import MessageEnd, MessageStart, PartDelta, PartEnd, PartStart, Usage

    return [
        MessageStart(id="msg_1", model="claude-sonnet-4-5", usage=Usage(input_tokens=50, output_tokens=1)),
        PartStart(index=0, kind="text"),
        PartDelta(index=0, text="Checking both hosts."),
        PartEnd(index=0),
        PartStart(index=1, kind="tool_call", id="toolu_s1", name="ping"),
        PartDelta(index=1, arguments='{"host":'),
        PartDelta(index=1, arguments='"a.example"}'),
        PartEnd(index=1),
        PartStart(index=2, kind="tool_call", id="toolu_s2", name="ping"),
        PartDelta(index=2, arguments='{"host":"b.example"}'),
        PartEnd(index=2),
        MessageEnd(stop_reason="tool_use", usage=Usage(input_tokens=50, output_tokens=60)),
    ]


def c12_events() -> list[Any]:
    """Internal events an OpenAI-compatible upstream produces for handed case C12: one delta
    carrying text and the start of tool call call_m1 (text part 0, tool call part 1)."""
    from gateway.schema import MessageEnd, MessageStart, PartDelta, PartEnd, PartStart

    return [
        MessageStart(id="c1", model="some-oai-model"),
        PartStart(index=0, kind="text"),
        PartDelta(index=0, text="Initialising the project: "),
        PartStart(index=1, kind="tool_call", id="call_m1", name="run"),
        PartDelta(index=1, arguments=""),
        PartDelta(index=1, arguments='{"cmd":"make init"}'),
        PartEnd(index=0),
        PartEnd(index=1),
        MessageEnd(stop_reason="tool_use"),
    ]


def c13_events() -> list[Any]:
    """Internal events a Gemini upstream produces for handed case C13: a whole functionCall
    in one chunk."""
    from gateway.schema import MessageEnd, MessageStart, PartDelta, PartEnd, PartStart, Usage

    return [
        MessageStart(id="gem-1", model="gemini-2.5-pro"),
        PartStart(index=0, kind="tool_call", id="call_add", name="add_numbers"),
        PartDelta(index=0, arguments='{"a":17,"b":25}'),
        PartEnd(index=0),
        MessageEnd(stop_reason="tool_use", usage=Usage(input_tokens=30, output_tokens=8)),
    ]


def c30b_events() -> list[Any]:
    """Handed case C30 B: cache read 2000, uncached input 4, output 20, cost $0.000912."""
    from gateway.schema import MessageEnd, MessageStart, PartDelta, PartEnd, PartStart, Usage

    start_usage = Usage(input_tokens=4, cache_read_tokens=2000, output_tokens=1)
    end_usage = Usage(input_tokens=4, cache_read_tokens=2000, output_tokens=20, cost_usd=0.000912)
    return [
        MessageStart(id="msg_4", model="claude-sonnet-4-5", usage=start_usage),
        PartStart(index=0, kind="text"),
        PartDelta(index=0, text="Hi."),
        PartEnd(index=0),
        MessageEnd(stop_reason="stop", usage=end_usage),
    ]


def render_all(renderer: Any, events: list[Any]) -> list[bytes]:
    """All frames of a stream renderer for ``events`` plus its ``finish()``."""
    frames: list[bytes] = []
    for ev in events:
        frames.extend(renderer.render(ev))
    frames.extend(renderer.finish())
    return frames
