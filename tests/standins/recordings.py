"""Loaders for the recorded provider traffic copied from ``../shared/corpus`` into
``tests/fixtures/`` (see each folder's ``ORIGIN.md``).

Every loader returns :class:`Exchange` objects: the request the recording client sent (parsed
JSON when it was JSON) and the response the real provider gave (status, content type, body
bytes exactly as recorded). Formats (corpus README sections B1-B6):

* go-vcr v2 cassettes (``fantasy/``, ``envoy-ai-gateway/``): ``interactions[].request.body``
  and ``.response.body`` are raw strings, ``.response.code`` the status;
* vcrpy cassettes (``pydantic-ai/``, ``simonw-llm/``): ``request.parsed_body|body``,
  ``response.parsed_body|body.string``, ``response.status.code``;
* anthropic-sdk-python inline snapshots: a JSON array of ``{request, response}`` with
  ``response.status_code`` and the body as JSON or SSE text;
* raw SSE files (anthropic-sdk-python ``tests/lib/streaming/fixtures/*.txt``): the body as is;
* vercel-ai ``*.chunks.txt``: one stream event's JSON per line, framed here as SSE
  (``event: <type>`` added for Anthropic, ``data: [DONE]`` appended for OpenAI chat).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any

import yaml

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


@dataclass(frozen=True)
class Exchange:
    """One recorded HTTP exchange. ``body`` is the response body bytes as recorded;
    ``stream`` is True for ``text/event-stream`` bodies; ``request`` the parsed JSON request
    body (or None); ``source`` the fixture path it came from (for failure messages)."""

    status: int
    content_type: str
    body: bytes
    stream: bool
    request: Any = None
    url: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    source: str = ""

    def json(self) -> Any:
        """The response body parsed as JSON (non-stream bodies only)."""
        return json.loads(self.body)

    def sse_frames(self) -> list[bytes]:
        """The stream body split into SSE frames, each with its terminating blank line
        (the last one as recorded, possibly without it)."""
        return split_sse(self.body)

    def sse_data(self) -> list[Any]:
        """The parsed JSON payload of every ``data:`` frame (``[DONE]`` skipped)."""
        out = []
        for frame in self.sse_frames():
            for line in frame.decode().splitlines():
                if line.startswith("data:"):
                    payload = line[5:].strip()
                    if payload and payload != "[DONE]":
                        out.append(json.loads(payload))
        return out

    def with_body(self, body: bytes) -> Exchange:
        """A copy with another body (for faults derived from a recording)."""
        return replace(self, body=body)


_FRAME_END = re.compile(rb"\r\n\r\n|\n\n|\r\r")


def split_sse(body: bytes) -> list[bytes]:
    """Split an SSE body into frames at blank lines, keeping each frame's terminator."""
    frames: list[bytes] = []
    pos = 0
    for m in _FRAME_END.finditer(body):
        frames.append(body[pos : m.end()])
        pos = m.end()
    if body[pos:].strip():
        frames.append(body[pos:])
    return frames


def _maybe_json(text: Any) -> Any:
    if isinstance(text, dict | list) or text is None:
        return text
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return text


def _first(headers: dict[str, Any], name: str) -> str:
    for k, v in (headers or {}).items():
        if k.lower() == name:
            return v[0] if isinstance(v, list) else str(v)
    return ""


def _fixture(rel: str) -> Path:
    path = FIXTURES / rel
    if not path.exists():
        raise FileNotFoundError(f"wire-test fixture {rel} is missing under {FIXTURES}")
    return path


@cache
def govcr(rel: str) -> tuple[Exchange, ...]:
    """Exchanges of a go-vcr v2 cassette (fantasy, envoy-ai-gateway) at ``tests/fixtures/<rel>``."""
    data = yaml.safe_load(_fixture(rel).read_text(encoding="utf-8"))
    out = []
    for it in data["interactions"]:
        req, resp = it["request"], it["response"]
        ctype = _first(resp.get("headers") or {}, "content-type") or "application/json"
        body = resp.get("body") or ""
        out.append(
            Exchange(
                status=int(resp.get("code") or 200),
                content_type=ctype,
                body=body.encode("utf-8"),
                stream="event-stream" in ctype,
                request=_maybe_json(req.get("body")),
                url=req.get("url", ""),
                source=rel,
            )
        )
    return tuple(out)


@cache
def vcrpy(rel: str) -> tuple[Exchange, ...]:
    """Exchanges of a vcrpy cassette (pydantic-ai, simonw-llm) at ``tests/fixtures/<rel>``."""
    data = yaml.safe_load(_fixture(rel).read_text(encoding="utf-8"))
    out = []
    for it in data["interactions"]:
        req, resp = it["request"], it["response"]
        headers = resp.get("headers") or {}
        ctype = _first(headers, "content-type") or "application/json"
        if "parsed_body" in resp:
            body = json.dumps(resp["parsed_body"]).encode()
        else:
            raw = (resp.get("body") or {}).get("string", "")
            body = raw if isinstance(raw, bytes) else str(raw).encode()
        status = resp.get("status") or {}
        out.append(
            Exchange(
                status=int(status.get("code", 200)) if isinstance(status, dict) else int(status),
                content_type=ctype,
                body=body,
                stream="event-stream" in ctype,
                request=req.get("parsed_body") if "parsed_body" in req else _maybe_json(req.get("body")),
                url=req.get("uri", ""),
                source=rel,
            )
        )
    return tuple(out)


@cache
def inline_snapshot(rel: str) -> tuple[Exchange, ...]:
    """Exchanges of an anthropic-sdk-python ``__inline_snapshot__`` JSON file."""
    data = json.loads(_fixture(rel).read_text(encoding="utf-8"))
    out = []
    for ex in data:
        req, resp = ex["request"], ex["response"]
        headers = {k.lower(): str(v) for k, v in (resp.get("headers") or {}).items()}
        ctype = headers.get("content-type", "application/json")
        body = resp["body"]
        raw = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        out.append(
            Exchange(
                status=int(resp["status_code"]),
                content_type=ctype,
                body=raw,
                stream="event-stream" in ctype,
                request=_maybe_json(req.get("body")),
                url=req.get("url", ""),
                headers={k: v for k, v in headers.items() if k in ("x-should-retry", "request-id")},
                source=rel,
            )
        )
    return tuple(out)


@cache
def raw_sse(rel: str) -> Exchange:
    """A raw SSE body file (anthropic-sdk-python streaming fixtures), byte-exact."""
    return Exchange(
        status=200,
        content_type="text/event-stream; charset=utf-8",
        body=_fixture(rel).read_bytes(),
        stream=True,
        source=rel,
    )


@cache
def vercel_chunks(rel: str, api: str) -> Exchange:
    """A vercel-ai ``*.chunks.txt`` file framed as the SSE stream ``api`` sends
    (``openai_chat``, ``anthropic_messages`` or ``gemini``)."""
    frames = []
    for line in _fixture(rel).read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        if api == "anthropic_messages":
            frames.append(f"event: {json.loads(line)['type']}\ndata: {line}\n\n")
        else:
            frames.append(f"data: {line}\n\n")
    if api == "openai_chat":
        frames.append("data: [DONE]\n\n")
    return Exchange(
        status=200, content_type="text/event-stream", body="".join(frames).encode(), stream=True, source=rel
    )


@cache
def vercel_json(rel: str) -> Exchange:
    """A vercel-ai non-streaming ``*.json`` body."""
    return Exchange(
        status=200, content_type="application/json", body=_fixture(rel).read_bytes(), stream=False, source=rel
    )


# ------------------------------------------------------------------------------------ catalogue

FANTASY = "fantasy/providertests/testdata"
_COMMON = {
    "openai_chat": f"{FANTASY}/TestOpenAICommon/openai-gpt-4o-mini",
    "anthropic_messages": f"{FANTASY}/TestAnthropicCommon/claude-sonnet-4",
    "gemini": f"{FANTASY}/TestGoogleCommon/gemini-3-pro-preview",
    "openai_responses": f"{FANTASY}/TestOpenAIResponsesCommon/openai-gpt-4o-mini",
}
RESPONSES_THINKING = f"{FANTASY}/TestOpenAIResponsesWithSummaryThinking/openai-gpt-5"
ANTHROPIC_SSE = "anthropic-sdk-python/tests/lib/streaming/fixtures"
ANTHROPIC_429 = (
    "anthropic-sdk-python/tests/lib/_parse/__inline_snapshot__/test_messages/TestAsyncParse/"
    "d743d628-16aa-4c9f-ae78-51deb578f746.json"
)
OPENROUTER_ERRORS = "pydantic-ai/tests/models/cassettes/test_openrouter/test_openrouter_errors_raised.yaml"
ANTHROPIC_THINKING = f"{FANTASY}/TestAnthropicThinking/claude-sonnet-4"


def common(api: str, test: str, stream: bool) -> tuple[Exchange, ...]:
    """A fantasy ``TestXCommon`` recording: ``test`` is ``simple`` (one text answer) or
    ``multi_tool`` (parallel add+multiply calls, then the answer to their results)."""
    name = f"{test}_streaming" if stream else test
    return govcr(f"{_COMMON[api]}/{name}.yaml")


def anthropic_thinking(stream: bool) -> tuple[Exchange, ...]:
    """fantasy TestAnthropicThinking: thinking + signature + tool_use, then the answer."""
    return govcr(f"{ANTHROPIC_THINKING}/{'thinking-streaming' if stream else 'thinking'}.yaml")


def responses_thinking(stream: bool) -> tuple[Exchange, ...]:
    """fantasy TestOpenAIResponsesWithSummaryThinking (gpt-5, ``include:
    ["reasoning.encrypted_content"]``, ``store: false``): a reasoning item with summary and
    ``encrypted_content`` + a ``weather`` function call, then reasoning + the answer."""
    return govcr(f"{RESPONSES_THINKING}/{'thinking-streaming' if stream else 'thinking'}.yaml")


def truncated_tool_call_sse() -> Exchange:
    """anthropic-sdk-python ``incomplete_partial_json_response.txt``: stop_reason
    ``max_tokens`` in the middle of a ``make_file`` tool_use."""
    return raw_sse(f"{ANTHROPIC_SSE}/incomplete_partial_json_response.txt")


def anthropic_basic_sse() -> Exchange:
    """anthropic-sdk-python ``basic_response.txt``: "Hello there!" end_turn."""
    return raw_sse(f"{ANTHROPIC_SSE}/basic_response.txt")


def anthropic_rate_limited() -> Exchange:
    """A real Anthropic 429 ``rate_limit_error`` body (anthropic-sdk-python snapshot)."""
    return inline_snapshot(ANTHROPIC_429)[0]


def openrouter_rate_limited() -> Exchange:
    """A real OpenAI-compatible (OpenRouter) 429 error body (pydantic-ai cassette)."""
    return vcrpy(OPENROUTER_ERRORS)[0]


# ------------------------------------------------------------------------------------ handed cases

HANDED_CASES = FIXTURES / "cases" / "handed.jsonl"


def handed_case(case_id: str) -> dict[str, Any]:
    """One handed case (``id``, ``category``, ``input``, ``expected``) from
    ``tests/fixtures/cases/handed.jsonl`` (a copy of ``../shared/cases/handed.jsonl``)."""
    for line in HANDED_CASES.read_text(encoding="utf-8").splitlines():
        if line.strip():
            case = json.loads(line)
            if case["id"] == case_id:
                return dict(case)
    raise KeyError(case_id)


def stream_exchange(api: str, events: list[Any]) -> Exchange:
    """A stream answer in ``api``'s framing from a list of events: Anthropic items are
    ``{"event", "data"}`` (framed ``event:``/``data:``), OpenAI Responses items are the event
    objects (framed ``event: <type>``/``data:``), OpenAI chat and Gemini items are the chunk
    objects (framed ``data:``; OpenAI gets its closing ``data: [DONE]``, Gemini's frames end in
    CRLF CRLF as Gemini sends them)."""
    frames = []
    for ev in events:
        if api == "anthropic_messages":
            frames.append(f"event: {ev['event']}\ndata: {json.dumps(ev['data'])}\n\n")
        elif api == "openai_responses":
            frames.append(f"event: {ev['type']}\ndata: {json.dumps(ev)}\n\n")
        elif api == "gemini":
            frames.append(f"data: {json.dumps(ev)}\r\n\r\n")
        else:
            frames.append(f"data: {json.dumps(ev)}\n\n")
    if api == "openai_chat":
        frames.append("data: [DONE]\n\n")
    return Exchange(
        status=200,
        content_type="text/event-stream",
        body="".join(frames).encode(),
        stream=True,
        source="handed case",
    )


def json_exchange(body: Any) -> Exchange:
    """A non-streamed JSON answer."""
    return Exchange(
        status=200,
        content_type="application/json",
        body=json.dumps(body).encode(),
        stream=False,
        source="handed case",
    )
