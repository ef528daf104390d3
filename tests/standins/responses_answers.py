"""Scripted OpenAI Responses answers, whole or streamed, in the API's own shapes
(https://platform.openai.com/docs/api-reference/responses/object and
https://platform.openai.com/docs/api-reference/responses-streaming), for what the recordings do
not hold: an answer cut by ``max_output_tokens`` in the middle of a function call
(``status: incomplete``), and failed responses (``response.failed`` / ``error`` events with the
codes clients act on).

Event sequence of a streamed answer, as OpenAI sends it (compare the fantasy recordings under
``tests/fixtures/fantasy/.../TestOpenAIResponsesCommon``): ``response.created``,
``response.in_progress``, per item ``response.output_item.added`` then its deltas
(``response.output_text.delta`` inside ``content_part.added/done``,
``response.function_call_arguments.delta/done``) and ``response.output_item.done``, then
``response.completed`` or ``response.incomplete``; every event has a ``sequence_number``.
"""

from __future__ import annotations

from typing import Any

from .recordings import Exchange, json_exchange, stream_exchange
from .tool_answers import Call

RESP_ID = "resp_standin_0001"


def _response(status: str, output: list[dict[str, Any]], model: str, inp: int, out: int) -> dict[str, Any]:
    return {
        "id": RESP_ID,
        "object": "response",
        "created_at": 1782321680,
        "status": status,
        "error": None,
        "incomplete_details": {"reason": "max_output_tokens"} if status == "incomplete" else None,
        "model": model,
        "output": output,
        "parallel_tool_calls": True,
        "store": False,
        "usage": {
            "input_tokens": inp,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": out,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": inp + out,
        },
    }


def answer(
    calls: list[Call],
    *,
    stream: bool,
    text: str = "",
    incomplete: bool = False,
    model: str = "gpt-4o-mini",
    input_tokens: int = 20,
    output_tokens: int = 10,
    phase: str | None = None,
) -> Exchange:
    """``text`` (optional) then ``calls`` (raw arguments sent as they are, complete JSON or
    not); ``incomplete`` ends it with ``status: incomplete`` for ``max_output_tokens`` (the last
    call's item then stays ``in_progress``, as a cut call does); ``phase``: the text's message
    item's ``phase`` (gpt-5.x: ``commentary`` / ``final_answer``)."""
    status = "incomplete" if incomplete else "completed"
    items: list[dict[str, Any]] = []
    if text:
        items.append(
            {
                "id": "msg_standin_0",
                "type": "message",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "annotations": [], "text": text}],
            }
        )
        if phase is not None:
            items[-1]["phase"] = phase
    for i, c in enumerate(calls):
        cut = incomplete and i == len(calls) - 1
        items.append(
            {
                "id": f"fc_standin_{i}",
                "type": "function_call",
                "status": "in_progress" if cut else "completed",
                "arguments": c.raw,
                "call_id": c.id,
                "name": c.name,
            }
        )
    final = _response(status, items, model, input_tokens, output_tokens)
    if not stream:
        return json_exchange(final)
    events: list[dict[str, Any]] = []
    started = _response("in_progress", [], model, input_tokens, 0) | {"usage": None}
    events += [
        {"type": "response.created", "response": started},
        {"type": "response.in_progress", "response": started},
    ]
    for n, item in enumerate(items):
        cut = incomplete and n == len(items) - 1 and item["type"] == "function_call"
        if item["type"] == "message":
            events += _message_events(item, n)
            continue
        added = item | {"status": "in_progress", "arguments": ""}
        events.append({"type": "response.output_item.added", "output_index": n, "item": added})
        events.append(
            {
                "type": "response.function_call_arguments.delta",
                "item_id": item["id"],
                "output_index": n,
                "delta": item["arguments"],
            }
        )
        if not cut:
            events.append(
                {
                    "type": "response.function_call_arguments.done",
                    "item_id": item["id"],
                    "output_index": n,
                    "arguments": item["arguments"],
                }
            )
            events.append({"type": "response.output_item.done", "output_index": n, "item": item})
    events.append({"type": "response.incomplete" if incomplete else "response.completed", "response": final})
    return stream_exchange("openai_responses", _numbered(events))


def _message_events(item: dict[str, Any], n: int) -> list[dict[str, Any]]:
    text = item["content"][0]["text"]
    empty = {"type": "output_text", "annotations": [], "text": ""}
    common = {"item_id": item["id"], "output_index": n, "content_index": 0}
    return [
        {
            "type": "response.output_item.added",
            "output_index": n,
            "item": item | {"content": [], "status": "in_progress"},
        },
        {"type": "response.content_part.added", **common, "part": empty},
        {"type": "response.output_text.delta", **common, "delta": text},
        {"type": "response.output_text.done", **common, "text": text},
        {"type": "response.content_part.done", **common, "part": item["content"][0]},
        {"type": "response.output_item.done", "output_index": n, "item": item},
    ]


def _numbered(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [ev | {"sequence_number": i} for i, ev in enumerate(events)]


def failed_stream(code: str, message: str, *, model: str = "gpt-4o-mini", after_text: str = "") -> Exchange:
    """A stream that fails with ``response.failed`` (``error.code`` ``code``): right after
    ``response.created`` / ``in_progress``, or after some text when ``after_text`` is given."""
    started = _response("in_progress", [], model, 0, 0) | {"usage": None}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": started},
        {"type": "response.in_progress", "response": started},
    ]
    if after_text:
        item = {
            "id": "msg_standin_0",
            "type": "message",
            "status": "in_progress",
            "role": "assistant",
            "content": [{"type": "output_text", "annotations": [], "text": after_text}],
        }
        events += _message_events(item, 0)[:3]
    failed = started | {"status": "failed", "error": {"code": code, "message": message}}
    events.append({"type": "response.failed", "response": failed})
    return stream_exchange("openai_responses", _numbered(events))


def failed_body(code: str, message: str, *, model: str = "gpt-4o-mini") -> Exchange:
    """A whole answer whose ``status`` is ``failed`` with ``error.code`` ``code``."""
    body = _response("failed", [], model, 0, 0) | {"error": {"code": code, "message": message}, "usage": None}
    return json_exchange(body)
