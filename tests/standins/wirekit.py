"""Helpers the wire tests share: what a recording says the client must see (text, tool calls,
usage), stream collectors for both SDKs, transcript look-ups and JSON searches."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .recordings import Exchange
from .topology import PRICE

PNG_B64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="

# ------------------------------------------------------------------------------------ recordings


@dataclass
class RecordedCall:
    """A tool call as the provider sent it: ``raw`` is the arguments string exactly as it went
    over the wire when the wire has a string (OpenAI arguments, Anthropic ``partial_json``
    concatenation), else None; ``args`` the parsed object; ``signature`` a Gemini
    ``thoughtSignature`` on the part."""

    id: str | None
    name: str
    args: dict[str, Any]
    raw: str | None = None
    signature: str | None = None


def responses_output(ex: Exchange) -> list[dict[str, Any]]:
    """The ``output`` items of a recorded OpenAI Responses answer: a whole body's ``output``,
    or a stream's ``response.output_item.done`` items in order."""
    if not ex.stream:
        return list(ex.json().get("output") or [])
    return [ev["item"] for ev in ex.sse_data() if ev.get("type") == "response.output_item.done"]


def _responses_final(ex: Exchange) -> dict[str, Any]:
    if not ex.stream:
        return dict(ex.json())
    ends = ("response.completed", "response.incomplete", "response.failed")
    return next(ev["response"] for ev in ex.sse_data() if ev.get("type") in ends)


def recorded_calls(ex: Exchange, api: str) -> list[RecordedCall]:
    """Tool calls in a recorded response (stream or not), in issue order."""
    calls: list[RecordedCall] = []
    if api == "openai_responses":
        for item in responses_output(ex):
            if item.get("type") == "function_call":
                raw = item["arguments"]
                calls.append(RecordedCall(item["call_id"], item["name"], json.loads(raw), raw))
        return calls
    if api == "openai_chat":
        if not ex.stream:
            for tc in ex.json()["choices"][0]["message"].get("tool_calls") or []:
                f = tc["function"]
                calls.append(RecordedCall(tc["id"], f["name"], json.loads(f["arguments"]), f["arguments"]))
            return calls
        by_index: dict[int, dict[str, Any]] = {}
        for chunk in ex.sse_data():
            for choice in chunk.get("choices") or []:
                for tc in (choice.get("delta") or {}).get("tool_calls") or []:
                    slot = by_index.setdefault(tc["index"], {"id": None, "name": "", "raw": ""})
                    slot["id"] = slot["id"] or tc.get("id")
                    fn = tc.get("function") or {}
                    slot["name"] += fn.get("name") or ""
                    slot["raw"] += fn.get("arguments") or ""
        for _, s in sorted(by_index.items()):
            calls.append(RecordedCall(s["id"], s["name"], json.loads(s["raw"]), s["raw"]))
        return calls
    if api == "anthropic_messages":
        if not ex.stream:
            for block in ex.json()["content"]:
                if block["type"] == "tool_use":
                    calls.append(RecordedCall(block["id"], block["name"], block["input"]))
            return calls
        blocks: dict[int, dict[str, Any]] = {}
        for ev in ex.sse_data():
            if ev["type"] == "content_block_start" and ev["content_block"]["type"] == "tool_use":
                cb = ev["content_block"]
                blocks[ev["index"]] = {"id": cb["id"], "name": cb["name"], "raw": ""}
            elif ev["type"] == "content_block_delta" and ev["delta"]["type"] == "input_json_delta":
                blocks[ev["index"]]["raw"] += ev["delta"]["partial_json"]
        for _, b in sorted(blocks.items()):
            calls.append(RecordedCall(b["id"], b["name"], json.loads(b["raw"] or "{}"), b["raw"]))
        return calls
    chunks = ex.sse_data() if ex.stream else [ex.json()]
    for chunk in chunks:
        for cand in chunk.get("candidates") or []:
            for part in (cand.get("content") or {}).get("parts") or []:
                if "functionCall" in part:
                    fc = part["functionCall"]
                    calls.append(
                        RecordedCall(
                            fc.get("id"),
                            fc["name"],
                            fc.get("args") or {},
                            signature=part.get("thoughtSignature"),
                        )
                    )
    return calls


def recorded_text(ex: Exchange, api: str) -> str:
    """The visible answer text of a recorded response (thinking/thought parts excluded)."""
    out: list[str] = []
    if api == "openai_responses":
        for item in responses_output(ex):
            if item.get("type") == "message":
                out += [
                    p.get("text") or "" for p in item.get("content") or [] if p.get("type") == "output_text"
                ]
        return "".join(out)
    if api == "openai_chat":
        if not ex.stream:
            return ex.json()["choices"][0]["message"].get("content") or ""
        for chunk in ex.sse_data():
            for choice in chunk.get("choices") or []:
                out.append((choice.get("delta") or {}).get("content") or "")
        return "".join(out)
    if api == "anthropic_messages":
        if not ex.stream:
            return "".join(b["text"] for b in ex.json()["content"] if b["type"] == "text")
        for ev in ex.sse_data():
            if ev["type"] == "content_block_delta" and ev["delta"]["type"] == "text_delta":
                out.append(ev["delta"]["text"])
        return "".join(out)
    chunks = ex.sse_data() if ex.stream else [ex.json()]
    for chunk in chunks:
        for cand in chunk.get("candidates") or []:
            for part in (cand.get("content") or {}).get("parts") or []:
                if "text" in part and not part.get("thought"):
                    out.append(part["text"])
    return "".join(out)


@dataclass
class RecordedUsage:
    """Usage in the internal convention: ``input`` excludes cache reads/writes; ``output``
    includes reasoning."""

    input: int
    output: int
    cache_read: int = 0
    cache_write: int = 0
    reasoning: int = 0

    @property
    def total_input(self) -> int:
        return self.input + self.cache_read + self.cache_write

    @property
    def cost_usd(self) -> float:
        """Cost at the wire-test price (USD per million tokens), each token class once."""
        p = PRICE
        assert p.input is not None and p.output is not None and p.cache_read is not None
        assert p.cache_write is not None
        return (
            self.input * p.input
            + self.cache_read * p.cache_read
            + self.cache_write * p.cache_write
            + self.output * p.output
        ) / 1e6


def recorded_usage(ex: Exchange, api: str) -> RecordedUsage:
    """The usage a recorded response reports, converted to the internal convention: OpenAI
    ``prompt_tokens`` includes ``cached_tokens`` (split out); Anthropic ``input_tokens``
    already excludes cache tokens; Gemini ``candidatesTokenCount`` excludes
    ``thoughtsTokenCount`` (added: reasoning is output); Responses ``input_tokens`` includes
    ``cached_tokens`` (split out), ``output_tokens`` includes reasoning."""
    if api == "openai_responses":
        u = _responses_final(ex)["usage"]
        cached = (u.get("input_tokens_details") or {}).get("cached_tokens") or 0
        reasoning = (u.get("output_tokens_details") or {}).get("reasoning_tokens") or 0
        return RecordedUsage(u["input_tokens"] - cached, u["output_tokens"], cached, 0, reasoning)
    if api == "openai_chat":
        usage = (
            next((c["usage"] for c in ex.sse_data() if c.get("usage")), None)
            if ex.stream
            else ex.json()["usage"]
        )
        assert usage is not None, f"{ex.source}: no usage"
        cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
        reasoning = (usage.get("completion_tokens_details") or {}).get("reasoning_tokens") or 0
        return RecordedUsage(
            usage["prompt_tokens"] - cached, usage["completion_tokens"], cached, 0, reasoning
        )
    if api == "anthropic_messages":
        if ex.stream:
            merged: dict[str, int] = {}
            for ev in ex.sse_data():
                if ev["type"] == "message_start":
                    merged.update({k: v for k, v in ev["message"]["usage"].items() if isinstance(v, int)})
                elif ev["type"] == "message_delta":
                    merged.update({k: v for k, v in (ev.get("usage") or {}).items() if isinstance(v, int)})
            u: dict[str, Any] = merged
        else:
            u = ex.json()["usage"]
        return RecordedUsage(
            u["input_tokens"],
            u["output_tokens"],
            u.get("cache_read_input_tokens") or 0,
            u.get("cache_creation_input_tokens") or 0,
        )
    chunks = ex.sse_data() if ex.stream else [ex.json()]
    meta = [c["usageMetadata"] for c in chunks if c.get("usageMetadata")][-1]
    cached = meta.get("cachedContentTokenCount") or 0
    thoughts = meta.get("thoughtsTokenCount") or 0
    return RecordedUsage(
        meta["promptTokenCount"] - cached,
        (meta.get("candidatesTokenCount") or 0) + thoughts,
        cached,
        0,
        thoughts,
    )


# ------------------------------------------------------------------------------------ streams


@dataclass
class OpenAIStreamResult:
    """What an OpenAI client accumulated from a stream (by tool-call ``index``)."""

    chunks: list[Any] = field(default_factory=list)
    text: str = ""
    tool_calls: dict[int, dict[str, Any]] = field(default_factory=dict)
    finish_reasons: list[str] = field(default_factory=list)
    usage_chunks: list[Any] = field(default_factory=list)
    error: Exception | None = None


def collect_openai(stream: Any, on_chunk: Callable[[Any], None] | None = None) -> OpenAIStreamResult:
    """Iterate an ``openai`` SDK stream to its end (or its error), accumulating like a client;
    ``on_chunk`` is called after each chunk."""
    out = OpenAIStreamResult()
    try:
        for chunk in stream:
            out.chunks.append(chunk)
            if on_chunk is not None:
                on_chunk(chunk)
            if chunk.usage is not None:
                out.usage_chunks.append(chunk)
            for choice in chunk.choices:
                d = choice.delta
                if d.content:
                    out.text += d.content
                for tc in d.tool_calls or []:
                    slot = out.tool_calls.setdefault(
                        tc.index, {"id": None, "name": "", "arguments": "", "ids": []}
                    )
                    if tc.id:
                        slot["ids"].append(tc.id)
                        slot["id"] = slot["id"] or tc.id
                    if tc.function is not None:
                        slot["name"] += tc.function.name or ""
                        slot["arguments"] += tc.function.arguments or ""
                if choice.finish_reason:
                    out.finish_reasons.append(choice.finish_reason)
    except Exception as err:  # the SDK raises on an error event; tests assert on it
        out.error = err
    return out


@dataclass
class AnthropicStreamResult:
    """What an Anthropic client saw: raw events, text, tool_use blocks by index with the
    concatenated ``partial_json``, thinking/signature, stop reason and usage."""

    events: list[Any] = field(default_factory=list)
    text: str = ""
    blocks: dict[int, dict[str, Any]] = field(default_factory=dict)
    stop_reason: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    error: Exception | None = None

    @property
    def tool_uses(self) -> list[dict[str, Any]]:
        return [b for _, b in sorted(self.blocks.items()) if b["type"] == "tool_use"]


def collect_anthropic(stream: Any, on_chunk: Callable[[Any], None] | None = None) -> AnthropicStreamResult:
    """Iterate an ``anthropic`` SDK raw event stream to its end (or its error); ``on_chunk``
    is called after each event."""
    out = AnthropicStreamResult()
    try:
        for ev in stream:
            out.events.append(ev)
            if on_chunk is not None:
                on_chunk(ev)
            if ev.type == "message_start":
                out.input_tokens = ev.message.usage.input_tokens
            elif ev.type == "content_block_start":
                cb = ev.content_block.model_dump()
                cb.setdefault("partial_json", "")
                cb.setdefault("thinking", cb.get("thinking", ""))
                out.blocks[ev.index] = cb
            elif ev.type == "content_block_delta":
                b = out.blocks[ev.index]
                d = ev.delta
                if d.type == "text_delta":
                    b["text"] = b.get("text", "") + d.text
                    out.text += d.text
                elif d.type == "input_json_delta":
                    b["partial_json"] += d.partial_json
                elif d.type == "thinking_delta":
                    b["thinking"] = (b.get("thinking") or "") + d.thinking
                elif d.type == "signature_delta":
                    b["signature"] = (b.get("signature") or "") + d.signature
            elif ev.type == "message_delta":
                out.stop_reason = ev.delta.stop_reason
                out.output_tokens = ev.usage.output_tokens
                if getattr(ev.usage, "input_tokens", None):
                    out.input_tokens = ev.usage.input_tokens
    except Exception as err:
        out.error = err
    return out


# ------------------------------------------------------------------------------------ transcript


def transcript_row(db_path: Path, request_id: str, timeout_s: float = 5.0) -> dict[str, Any]:
    """The transcript row of ``request_id``, waiting (bounded) for the batched writer."""
    deadline = time.monotonic() + timeout_s
    while True:
        conn = sqlite3.connect(str(db_path))
        conn.row_factory = sqlite3.Row
        try:
            row = conn.execute("SELECT * FROM turns WHERE request_id = ?", (request_id,)).fetchone()
        except sqlite3.OperationalError:
            row = None
        finally:
            conn.close()
        if row is not None:
            return dict(row)
        if time.monotonic() > deadline:
            raise AssertionError(f"no transcript row for request {request_id} within {timeout_s}s")
        time.sleep(0.02)


def transcript_count(db_path: Path, request_id: str) -> int:
    """How many rows carry ``request_id``."""
    conn = sqlite3.connect(str(db_path))
    try:
        return int(
            conn.execute("SELECT COUNT(*) FROM turns WHERE request_id = ?", (request_id,)).fetchone()[0]
        )
    finally:
        conn.close()


# ------------------------------------------------------------------------------------ JSON search


def walk(obj: Any, path: str = "$") -> Any:
    """Yield ``(path, value)`` for every node of a JSON value."""
    yield path, obj
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from walk(v, f"{path}.{k}")
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from walk(v, f"{path}[{i}]")


def keys_in(obj: Any) -> set[str]:
    """Every object key anywhere in ``obj``."""
    out: set[str] = set()
    for _, v in walk(obj):
        if isinstance(v, dict):
            out.update(v)
    return out


def image_sites(body: Any, b64: str = PNG_B64) -> tuple[list[str], list[str]]:
    """Where the base64 image appears in an upstream body: ``(as_image, as_text)`` paths.
    As an image: a string equal to the base64 or to its ``data:`` URL. As text: any other
    string that contains it (inlined base64 or serialised parts)."""
    as_image: list[str] = []
    as_text: list[str] = []
    for path, v in walk(body):
        if isinstance(v, str) and b64 in v:
            if v == b64 or (
                v.startswith("data:image/png;base64,") and v.endswith(b64) and len(v) < len(b64) + 40
            ):
                as_image.append(path)
            else:
                as_text.append(path)
    return as_image, as_text


def header(resp: Any, name: str) -> str | None:
    """A response header from an SDK raw response / exception response."""
    return resp.headers.get(name)
