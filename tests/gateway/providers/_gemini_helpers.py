"""Helpers for the Gemini wire tests: fixture paths, recorded-body loaders, a replay that
feeds a recorded stream through the parser, and small request builders."""

from __future__ import annotations

import gzip
import os
from pathlib import Path
from typing import Any

import orjson
import yaml

from gateway.config import Deployment
from gateway.providers import gemini
from gateway.providers.gemini_stream import assemble
from gateway.providers.wire import CallContext
from gateway.schema import Request, Response, StreamEvent, TextPart, UserMessage

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
VERCEL_GOOGLE = FIXTURES / "vercel-ai/packages/google/src/__fixtures__"
FANTASY_GOOGLE = FIXTURES / "fantasy/providertests/testdata"
LLM_GEMINI = FIXTURES / "simonw-llm/llm-gemini/tests/cassettes/test_gemini"
PYDANTIC_GOOGLE = FIXTURES / "pydantic-ai/tests/models/cassettes/test_google"


def corpus_dir() -> Path:
    """``$TURNSTILE_CORPUS`` or ``../shared/corpus`` next to the repository."""
    env = os.environ.get("TURNSTILE_CORPUS")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[3].parent / "shared" / "corpus"


def deployment(model: str = "gemini-2.5-pro", **kw: Any) -> Deployment:
    return Deployment(name="gem", api="gemini", model=model, **kw)


def user_request(text: str = "hi", **kw: Any) -> Request:
    return Request(model="m", messages=[UserMessage(content=[TextPart(text=text)])], **kw)


def context(dep: Deployment | None = None, request: Request | None = None) -> CallContext:
    """The context ``build_request`` makes (so name rewrites are registered)."""
    _, ctx = gemini.build_request(request or user_request(), dep or deployment(), "key")
    return ctx


def chunks_file(path: Path) -> list[bytes]:
    """A vercel-ai ``*.chunks.txt`` file: one chunk's JSON per line, as SSE data payloads."""
    return [line.encode() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def replay(ctx: CallContext, payloads: list[bytes]) -> list[StreamEvent]:
    parser = gemini.new_stream_parser(ctx)
    events: list[StreamEvent] = []
    for data in payloads:
        events.extend(parser.feed(None, data))
    events.extend(parser.finish())
    return events


def replay_response(ctx: CallContext, payloads: list[bytes]) -> Response:
    return assemble(replay(ctx, payloads))


def sse_payloads(body: str | bytes) -> list[bytes]:
    """The ``data:`` payloads of a recorded SSE body."""
    text = body.decode() if isinstance(body, bytes) else body
    out = []
    for line in text.splitlines():
        if line.startswith("data:"):
            out.append(line[5:].strip().encode())
    return out


def govcr(path: Path) -> list[dict[str, Any]]:
    """go-vcr (fantasy) interactions as ``{"request": dict, "url", "body": str}``."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    return [
        {
            "request": orjson.loads(it["request"]["body"]),
            "url": it["request"]["url"],
            "body": it["response"]["body"],
        }
        for it in data["interactions"]
    ]


def vcrpy(path: Path) -> list[dict[str, Any]]:
    """vcrpy interactions as ``{"request": dict, "url", "body": bytes}`` (gzip undone)."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    out = []
    for it in data["interactions"]:
        req = it["request"]
        request = req.get("parsed_body") or orjson.loads(req["body"])
        raw = it["response"]["body"]["string"]
        body = raw if isinstance(raw, bytes) else str(raw).encode()
        if body[:2] == b"\x1f\x8b":
            body = gzip.decompress(body)
        out.append({"request": request, "url": req["uri"], "body": body})
    return out
