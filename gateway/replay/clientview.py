"""What a client sees: an internal answer rendered in each client dialect (non-streaming and
streaming), read back with the independent reader of :mod:`gateway.providers.recorded.meaning`
and compared with what the recording says.

Differences are returned as ``(facet, recorded, client-visible, limit)``; ``limit`` explains a
difference the client dialect cannot avoid (empty: information was lost).
"""

from __future__ import annotations

from typing import Any

import orjson

from gateway.edges import get_dialect
from gateway.edges.signatures import unwrap_signature, unwrap_tool_call_id
from gateway.providers.recorded import meaning as mn
from gateway.providers.recorded import meaning_responses as mr
from gateway.providers.sse import decode_all
from gateway.replay.upstream import response_events
from gateway.schema import Request, Response

CLIENT_DIALECTS = ("openai_chat", "anthropic_messages", "openai_responses")
DIALECT_LIMITS = {
    ("openai_chat", "thinking_signatures"): "Chat Completions has no slot for reasoning signatures",
    ("openai_chat", "redacted_thinking"): "Chat Completions has no slot for encrypted reasoning",
    ("anthropic_messages", "usage.reasoning"): "Anthropic usage has no reasoning-token count",
}

Difference = tuple[str, str, str, str]


def _short(v: Any) -> str:
    s = v if isinstance(v, str) else orjson.dumps(v, default=str).decode()
    return s if len(s) <= 160 else s[:157] + "..."


def read_body(dialect: str, body: dict[str, Any]) -> mn.Meaning:
    """The meaning of a rendered non-streaming body of ``dialect``."""
    if dialect == "openai_chat":
        return mn.openai_body(body)
    return mr.responses_body(body) if dialect == "openai_responses" else mn.anthropic_body(body)


def read_stream(dialect: str, frames: list[bytes]) -> mn.Meaning:
    """The meaning of rendered SSE frames of ``dialect``."""
    objs = [orjson.loads(data) for _, data in decode_all(b"".join(frames)) if data.strip() != b"[DONE]"]
    if dialect == "openai_chat":
        return mn.openai_chunks(objs)
    return mr.responses_events(objs) if dialect == "openai_responses" else mn.anthropic_events(objs)


def render(dialect: str, resp: Response, request: Request) -> tuple[mn.Meaning, mn.Meaning]:
    """``resp`` rendered to a ``dialect`` client, non-streaming and streaming, read back."""
    edge = get_dialect(dialect)
    req = request.model_copy(update={"include_usage": True, "stream": True})
    if dialect == "openai_responses":  # a client that asked for its reasoning's encrypted content
        fields = dict(req)
        echo = {"custom_tools": set(), **fields.pop("echo", {}), "include_encrypted": True}
        req = edge.ResponsesRequest.model_construct(**fields, echo=echo)
    body = orjson.loads(orjson.dumps(edge.render_response(resp, req)))
    renderer = edge.StreamRenderer(req)
    frames: list[bytes] = []
    for ev in response_events(resp):
        frames.extend(renderer.render(ev))
    frames.extend(renderer.finish())
    return _unwrap(read_body(dialect, body)), _unwrap(read_stream(dialect, frames))


def _unwrap(m: mn.Meaning) -> mn.Meaning:
    m.thinking = [(t, unwrap_signature(s)[0] if s else s) for t, s in m.thinking]
    m.redacted = [unwrap_signature(r)[0] for r in m.redacted]
    for c in m.calls:
        if c.id:
            cid, sig, _ = unwrap_tool_call_id(c.id)
            c.id = cid
            c.signature = c.signature or sig
    return m


_NO_ARGUMENTS = ("", "null", "{}")


def _json_equal(a: str, b: str) -> bool:
    if a in _NO_ARGUMENTS and b in _NO_ARGUMENTS:
        return True  # "no arguments", spelled as the dialect must (Anthropic input is an object)
    try:
        return bool(orjson.loads(a) == orjson.loads(b))
    except orjson.JSONDecodeError:
        return False


def compare(
    expected: mn.Meaning,
    got: mn.Meaning,
    dialect: str,
    *,
    exact_args: bool,
    usage: bool,
    ids: bool = True,
    withheld: tuple[str, ...] = (),
) -> list[Difference]:
    """Facet-by-facet differences between a recorded meaning and a client-visible one.
    ``exact_args``: tool-call arguments must be byte-identical (both sides carry strings);
    ``usage``: compare usage too; ``ids``: compare tool-call ids (recordings without ids
    get ids from the adapter)."""
    out: list[Difference] = []

    def add(facet: str, a: Any, b: Any) -> None:
        out.append((facet, _short(a), _short(b), DIALECT_LIMITS.get((dialect, facet), "")))

    if expected.text != got.text:
        add("text", expected.text, got.text)
    held = set(got.withheld) | set(withheld)
    exp_calls = [c for c in expected.calls if not (c.id and c.id in held)]
    if len(exp_calls) != len(got.calls) and len(held) == len(expected.calls) - len(got.calls):
        exp_calls = exp_calls[: len(got.calls)]  # withheld calls of a format without ids
    if len(exp_calls) != len(got.calls):
        add("calls", [c.name for c in exp_calls], [c.name for c in got.calls])
    for e, g in zip(exp_calls, got.calls, strict=False):
        if e.name != g.name:
            add("tool_call.name", e.name, g.name)
        if ids and e.id and e.id != g.id:
            add("tool_call.id", e.id, g.id)
        if e.arguments == mn.STREAMED:
            pass  # assembled from Vertex partialArgs by the adapter only; see meaning.STREAMED
        elif e.arguments == "" and g.arguments == "{}":
            pass  # arguments sent as null: the adapter gives the empty object
        elif e.arguments != g.arguments and (exact_args or not _json_equal(e.arguments, g.arguments)):
            add("tool_call.arguments", e.arguments, g.arguments)
        if e.signature and e.signature != g.signature:
            add("tool_call.signature", e.signature, g.signature)
    exp_think = "".join(t for t, _ in expected.thinking)
    got_think = "".join(t for t, _ in got.thinking)
    if exp_think != got_think:
        add("thinking", exp_think, got_think)
    if dialect == "openai_responses" and expected.redacted and not got.redacted:
        # Responses has one kind of reasoning item: redacted thinking is one with only its
        # encrypted content, read back as a thinking part without text
        folded = [*expected.thinking, *(("", r) for r in expected.redacted)]
        expected = mn.Meaning(**{**vars(expected), "redacted": [], "thinking": folded})
    exp_sigs = "".join(s or "" for _, s in expected.thinking)
    got_sigs = "".join(s or "" for _, s in got.thinking)
    if exp_sigs != got_sigs:
        add("thinking_signatures", exp_sigs, got_sigs)
    if expected.redacted != got.redacted:
        add("redacted_thinking", expected.redacted, got.redacted)
    if expected.stop is not None and expected.stop != got.stop:
        add("stop", expected.stop, got.stop)
    if usage:
        for k in ("input", "output", "cache_read", "cache_write", "reasoning"):
            if expected.usage.get(k, 0) != got.usage.get(k, 0):
                add(f"usage.{k}", expected.usage.get(k, 0), got.usage.get(k, 0))
    return out


def recorded_answer_meaning(dialect: str, msg: dict[str, Any], stop: str | None) -> mn.Meaning:
    """The meaning of a recorded assistant message in a conversation (a dialect message)."""
    if dialect == "openai_chat":
        m = mn.openai_body({"choices": [{"message": msg}]})
        if msg.get("function_call"):
            fc = msg["function_call"]
            m.calls.append(mn.Call(None, str(fc.get("name")), str(fc.get("arguments"))))
    else:
        content = msg.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        m = mn.anthropic_body({"content": blocks})
    m.stop = stop
    return m


def check_conversation_answer(
    dialect: str, resp: Response, request: Request, msg: dict[str, Any], stop: str
) -> list[Difference]:
    """Differences between a recorded conversation answer and what a client of the same
    dialect receives from the pipeline, streamed and not (limits excluded: within its own
    dialect nothing may be lost)."""
    expected = recorded_answer_meaning(dialect, msg, stop)
    out: list[Difference] = []
    for got in render(dialect, resp, request):
        out.extend(
            d
            for d in compare(
                expected,
                got,
                dialect,
                exact_args=dialect == "openai_chat",
                usage=False,
                ids=not msg.get("function_call"),
                withheld=tuple(w.id for w in resp.withheld_tool_calls),
            )
            if not d[3]
        )
    return out
