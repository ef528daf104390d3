"""Readers of recorded provider exchanges -> :class:`gateway.replay.records.Exchange`.

Formats (corpus README part B):

* vcrpy cassettes (``simonw-llm/``, ``pydantic-ai/``): ``interactions[]`` with
  ``request{uri, body | parsed_body}`` and ``response{status{code}, headers,
  body{string} | parsed_body}``; a body may be ``!!binary`` and gzip-compressed (the Gemini
  cassettes of simonw/llm-gemini: decode base64, then gunzip);
* go-vcr v2 cassettes (``envoy-ai-gateway/``, ``fantasy/``): ``request{url, body}``,
  ``response{code, headers, body}`` with raw string bodies;
* anthropic-sdk-python inline snapshots: a JSON array of ``{request{url, body},
  response{status_code, headers, body}}``, SSE text as the body when streamed;
* raw SSE files (anthropic-sdk-python ``tests/lib/streaming/fixtures/*.txt``);
* vercel-ai fixtures: ``*.chunks.txt`` (one stream event's JSON per line, no SSE framing) and
  the matching ``*.json`` bodies; the wire API comes from the content (no URL is recorded).
"""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import orjson
import yaml

from gateway.replay.records import Exchange, Issue

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _header(headers: Any, name: str) -> str:
    for k, v in (headers or {}).items():
        if str(k).lower() == name:
            return str(v[0] if isinstance(v, list) and v else v)
    return ""


def _bytes(value: Any) -> bytes:
    if value is None:
        return b""
    if isinstance(value, bytes):
        return gzip.decompress(value) if value[:2] == b"\x1f\x8b" else value
    if isinstance(value, dict | list):
        return orjson.dumps(value)
    return str(value).encode("utf-8")


def _json_or_none(raw: Any) -> Any:
    if raw is None or isinstance(raw, dict | list):
        return raw
    try:
        return orjson.loads(_bytes(raw))
    except orjson.JSONDecodeError:
        return None


def read_cassette(path: Path, source: str) -> tuple[list[Exchange], list[Issue]]:
    """A vcrpy or go-vcr YAML cassette. Raises nothing: YAML errors become an issue."""
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=_Loader)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        return [], [Issue(source, mark.line + 1 if mark else None, f"not YAML: {err}")]
    if not isinstance(data, dict) or not isinstance(data.get("interactions"), list):
        return [], [Issue(source, None, "not a cassette (no interactions list)")]
    out: list[Exchange] = []
    for i, it in enumerate(data["interactions"]):
        req, resp = it.get("request") or {}, it.get("response") or {}
        request = req["parsed_body"] if "parsed_body" in req else _json_or_none(req.get("body"))
        if "parsed_body" in resp:
            body = orjson.dumps(resp["parsed_body"])
        else:
            raw = resp.get("body")
            body = _bytes(raw.get("string") if isinstance(raw, dict) else raw)
        status = resp.get("status")
        code = resp.get("code") or (status.get("code") if isinstance(status, dict) else status) or 200
        ctype = _header(resp.get("headers"), "content-type")
        stream = "event-stream" in ctype or (not ctype and body.lstrip()[:5] in (b"data:", b"event"))
        out.append(
            Exchange(
                source=source,
                name=f"interactions[{i}]",
                url=str(req.get("uri") or req.get("url") or ""),
                request=request,
                status=int(code),
                body=body,
                stream=stream,
            )
        )
    return out, []


def read_inline_snapshot(data: list[Any], source: str) -> tuple[list[Exchange], list[Issue]]:
    """An anthropic-sdk-python ``__inline_snapshot__`` exchange array."""
    out: list[Exchange] = []
    for i, ex in enumerate(data):
        req, resp = ex.get("request") or {}, ex.get("response") or {}
        ctype = _header(resp.get("headers"), "content-type")
        out.append(
            Exchange(
                source=source,
                name=f"[{i}]",
                url=str(req.get("url") or ""),
                request=_json_or_none(req.get("body")),
                status=int(resp.get("status_code") or 200),
                body=_bytes(resp.get("body")),
                stream="event-stream" in ctype,
            )
        )
    return out, []


def looks_like_inline_snapshot(data: Any) -> bool:
    """An array of ``{request, response}`` objects."""
    return (
        isinstance(data, list)
        and bool(data)
        and all(isinstance(x, dict) and "request" in x and "response" in x for x in data)
    )


def read_raw_sse(path: Path, source: str) -> tuple[list[Exchange], list[Issue]]:
    """A raw SSE body file; the API is told by its events (see :func:`sniff_stream_api`)."""
    body = path.read_bytes()
    return [
        Exchange(source=source, name="stream", url="", request=None, status=200, body=body, stream=True)
    ], []


def read_vercel_chunks(path: Path, source: str) -> tuple[list[Exchange], list[Issue]]:
    """A vercel-ai ``*.chunks.txt``: each non-empty line one event's JSON, framed here as
    ``data: <line>`` (``event: <type>`` too when the object has a ``type``, as Anthropic
    sends it). A line that is not JSON is reported with its number and left out. A file of
    several OpenAI Responses streams (one per step of a tool loop, each opened by its own
    ``response.created``) is one exchange per stream (``stream 1``, ``stream 2`` ...)."""
    issues: list[Issue] = []
    streams: list[list[bytes]] = [[]]
    for n, line in enumerate(path.read_bytes().splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError as err:
            issues.append(Issue(source, n, f"stream line is not JSON: {err}; skipped"))
            continue
        frames = streams[-1]
        if isinstance(obj, dict) and isinstance(obj.get("type"), str):
            if obj["type"] == "response.created" and frames:
                frames = []
                streams.append(frames)
            frames.append(b"event: " + obj["type"].encode() + b"\n")
        frames.append(b"data: " + line.strip() + b"\n\n")
    return [
        Exchange(
            source=source,
            name="stream" if len(streams) == 1 else f"stream {i}",
            url="",
            request=None,
            status=200,
            body=b"".join(frames),
            stream=True,
        )
        for i, frames in enumerate(streams, 1)
    ], issues


def read_json_body(data: Any, source: str) -> list[Exchange]:
    """A recorded non-streaming response body (vercel-ai ``*.json``)."""
    return [
        Exchange(
            source=source,
            name="body",
            url="",
            request=None,
            status=200,
            body=orjson.dumps(data),
            stream=False,
        )
    ]


def sniff_body_api(obj: Any) -> str | None:
    """The wire API of a non-streaming response body, from its shape: ``chat.completion``
    (or ``choices`` with ``message``) -> ``openai_chat``; ``type: message`` -> ``anthropic_messages``;
    ``candidates``/``usageMetadata`` -> ``gemini``; ``object: response`` ->
    ``openai_responses``; anything else None."""
    if not isinstance(obj, dict):
        return None
    if obj.get("object") == "response":
        return "openai_responses"
    if obj.get("object") == "chat.completion" or (
        isinstance(obj.get("choices"), list)
        and obj["choices"]
        and isinstance(obj["choices"][0], dict)
        and "message" in obj["choices"][0]
    ):
        return "openai_chat"
    if obj.get("type") == "message" and "content" in obj and "role" in obj:
        return "anthropic_messages"
    if "candidates" in obj or ("usageMetadata" in obj and "modelVersion" in obj):
        return "gemini"
    return None


def sniff_stream_api(first: Any) -> str | None:
    """The wire API of a stream from its first JSON event: ``chat.completion.chunk`` (or
    ``choices`` with ``delta``) -> ``openai_chat``; ``message_start`` -> ``anthropic_messages``;
    ``candidates`` -> ``gemini``; a ``response.*`` event -> ``openai_responses``; else None."""
    if not isinstance(first, dict):
        return None
    if str(first.get("type") or "").startswith("response."):
        return "openai_responses"
    if first.get("object") == "chat.completion.chunk" or (
        isinstance(first.get("choices"), list)
        and (not first["choices"] or "delta" in (first["choices"][0] or {}))
    ):
        return "openai_chat"
    if first.get("type") in ("message_start", "ping") and ("message" in first or first["type"] == "ping"):
        return "anthropic_messages"
    if "candidates" in first or "usageMetadata" in first:
        return "gemini"
    return None


def api_of_url(url: str) -> tuple[str | None, str]:
    """The wire API a recorded URL speaks, and for a non-chat API why it is not replayed:
    ``/chat/completions`` -> ``openai_chat``; ``/messages`` (Anthropic, also Vertex
    ``:rawPredict`` / ``:streamRawPredict`` of Anthropic models) -> ``anthropic_messages``;
    ``:generateContent`` / ``:streamGenerateContent`` -> ``gemini``; ``/responses`` (not its
    ``/input_tokens``, ``/{id}`` or ``/{id}/input_items``) -> ``openai_responses``."""
    u = url.split("?", 1)[0]
    if u.endswith("/chat/completions"):
        return "openai_chat", ""
    if u.endswith("/messages") or (("rawPredict" in u or "streamRawPredict" in u) and "anthropic" in u):
        return "anthropic_messages", ""
    if u.endswith(":generateContent") or u.endswith(":streamGenerateContent"):
        return "gemini", ""
    if u.endswith("/responses"):
        return "openai_responses", ""
    for marker, what in (
        ("/responses", "OpenAI Responses API (stored responses and token counting)"),
        ("/interactions", "Gemini interactions API"),
        ("bedrock", "Bedrock Converse API"),
        ("/embeddings", "embeddings"),
        ("/completions", "legacy OpenAI completions"),
        ("/v2/chat", "Cohere chat API"),
        ("count_tokens", "token counting"),
        ("/models", "model listing"),
    ):
        if marker in u:
            return None, what
    return None, f"unrecognised endpoint {u or '(no URL)'}"


def describe_body(data: object) -> str:
    """Name the non-chat API of a recognised but unsupported body."""
    if isinstance(data, dict):
        kind = data.get("object")
        names = {
            "interaction": "Gemini interactions API body",
            "text_completion": "legacy OpenAI completions body",
        }
        if kind in names:
            return str(names[kind])
        if "finish_reason" in data and "message" in data:
            return "Cohere chat API body"
    return "unrecognised JSON document"
