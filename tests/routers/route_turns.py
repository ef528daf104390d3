"""Real agent turns for routing tests: prefixes of a τ-bench airline conversation
(tests/fixtures/tau-bench, see ORIGIN.md) parsed through the OpenAI Chat edge."""

from __future__ import annotations

import json
from pathlib import Path

import orjson

from gateway.edges.openai_chat import parse_request
from gateway.schema import Request

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "tau-bench" / "airline-task0-trial0.json"


def traj() -> list[dict[str, object]]:
    """The 32 OpenAI-style messages of the conversation."""
    return list(json.loads(FIXTURE.read_text())["traj"])


def tools() -> list[dict[str, object]]:
    """A tool definition for every function the conversation calls (schemas are not recorded;
    an open object schema stands in)."""
    names = sorted({c["function"]["name"] for m in traj() for c in (m.get("tool_calls") or [])})  # type: ignore[index, union-attr]
    return [{"type": "function", "function": {"name": n, "parameters": {"type": "object"}}} for n in names]


def turn(upto: int, *, model: str = "auto", with_tools: bool = True, **extra: object) -> Request:
    """The request asking for the assistant message at index ``upto`` (messages ``[:upto]``)."""
    msgs = []
    for m in traj()[:upto]:
        m = dict(m)
        if m.get("role") == "assistant" and m.get("content") is None:
            m["content"] = None
        msgs.append(m)
    body: dict[str, object] = {"model": model, "messages": msgs, **extra}
    if with_tools:
        body["tools"] = tools()
    return parse_request(orjson.dumps(body))
