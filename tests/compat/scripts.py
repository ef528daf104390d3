"""Scripting the upstream stand-in for a client scenario: answers built when the request arrives
(so the same script serves a client that streams and one that does not), and what the upstream
received, read back in each wire API's terms."""

from __future__ import annotations

import json
from typing import Any

from standins.tool_answers import Call, text_answer, tool_call_answer
from standins.upstream import Received, UpstreamStandin, answering, structured_answer

from .conftest import UPSTREAM_MODEL


def say(upstream: UpstreamStandin, api: str, text: str) -> None:
    """Queue one plain final answer ``text`` of ``api``."""
    upstream.script(
        answering(
            lambda a, _body, stream: text_answer(a, text, stream=stream), api=api, model=UPSTREAM_MODEL[api]
        )
    )


def call_tools(upstream: UpstreamStandin, api: str, *calls: Call, text: str = "") -> None:
    """Queue one answer of ``api`` calling ``calls`` (ids as given)."""
    upstream.script(
        answering(
            lambda a, _body, stream: tool_call_answer(a, list(calls), stream=stream, text=text),
            api=api,
            model=UPSTREAM_MODEL[api],
        )
    )


def answer_schema(upstream: UpstreamStandin, api: str) -> None:
    """Queue one answer holding an instance of the JSON Schema the request asks for, in the
    request's own slot (native output format, response_format or the forced tool)."""
    upstream.script(structured_answer(api=api, model=UPSTREAM_MODEL[api]))


def only(upstream: UpstreamStandin, api: str) -> list[Received]:
    """The requests ``api`` received; asserts every scripted answer was taken and nothing went to
    another API."""
    assert upstream.pending() == [], f"scripted answers not asked for: {upstream.pending()}"
    others = [r.api for r in upstream.received if r.api != api]
    assert others == [], f"requests reached other APIs too: {others}"
    return upstream.requests(api)


def user_texts(rec: Received) -> list[str]:
    """Every text the request carries for the user role, in order, whatever the wire API."""
    body = rec.body or {}
    out: list[str] = []
    if rec.api == "gemini":
        for content in body.get("contents") or []:
            if content.get("role") == "user":
                out += [p["text"] for p in content.get("parts") or [] if "text" in p]
        return out
    items = body.get("input") if rec.api == "openai_responses" else body.get("messages")
    if isinstance(items, str):
        return [items]
    for m in items or []:
        if m.get("role") != "user":
            continue
        content = m.get("content")
        if isinstance(content, str):
            out.append(content)
            continue
        for p in content or []:
            if isinstance(p, dict) and isinstance(p.get("text"), str):
                out.append(p["text"])
    return out


def dump(rec: Received) -> str:
    """The request body as indented JSON (for a failure message)."""
    return json.dumps(rec.body, indent=1)[:4000]


def tool_names(rec: Received) -> list[str]:
    """The tool names the request declares, whatever the wire API."""
    body: dict[str, Any] = rec.body or {}
    if rec.api == "gemini":
        return [d["name"] for t in body.get("tools") or [] for d in t.get("functionDeclarations") or []]
    names = []
    for t in body.get("tools") or []:
        if "function" in t and isinstance(t["function"], dict):
            names.append(t["function"]["name"])
        elif "name" in t:
            names.append(t["name"])
    return names
