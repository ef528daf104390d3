"""Scripted upstream answers that call tools, in each wire API's own shape, whole or streamed.

The recordings under ``tests/fixtures`` cover real traffic; these build the hostile or unusual
variants the wire-fault tests need (ids with control characters, one id reused across steps,
usage at the output budget, a chosen stop reason) from the same shapes:

* ``openai_chat``: ``chat.completion`` / ``chat.completion.chunk`` objects (``tool_calls`` with
  ``index``/``id``/``function``, ``finish_reason``, ``usage``), streams closed by ``[DONE]``;
* ``anthropic_messages``: a ``message`` with ``tool_use`` blocks, or the event sequence
  ``message_start`` / ``content_block_*`` (``input_json_delta``) / ``message_delta`` /
  ``message_stop``;
* ``gemini``: ``candidates[0].content.parts[].functionCall`` (``name``, ``args``, ``id``) with
  ``finishReason`` and ``usageMetadata``;
* ``openai_responses``: a ``response`` with ``function_call`` output items, or its event
  sequence (:mod:`standins.responses_answers`); the "stop" values are the response ``status``
  (``completed``, or ``incomplete`` for ``max_output_tokens``).

A :class:`Call` is ``(id, name, raw arguments)``; raw arguments that are not complete JSON are
sent as is where the wire carries a string (OpenAI, Anthropic streams) and as ``{}`` where it
carries an object (Anthropic whole bodies, Gemini).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .recordings import Exchange, json_exchange, stream_exchange

MODELS = {
    "openai_chat": "gpt-4o-mini",
    "anthropic_messages": "claude-sonnet-4-20250514",
    "gemini": "gemini-3-pro-preview",
    "openai_responses": "gpt-4o-mini",
}

NORMAL_STOP = {
    "openai_chat": "tool_calls",
    "anthropic_messages": "tool_use",
    "gemini": "STOP",
    "openai_responses": "completed",
}
LENGTH_STOP = {
    "openai_chat": "length",
    "anthropic_messages": "max_tokens",
    "gemini": "MAX_TOKENS",
    "openai_responses": "incomplete",
}


@dataclass(frozen=True)
class Call:
    """One tool call as the upstream sends it."""

    id: str
    name: str
    raw: str = "{}"

    def args(self) -> dict[str, Any]:
        """The arguments as an object (``{}`` when the raw text is not a complete object)."""
        try:
            value = json.loads(self.raw)
        except ValueError:
            return {}
        return value if isinstance(value, dict) else {}


def tool_call_answer(
    api: str,
    calls: list[Call],
    *,
    stream: bool,
    stop: str | None = None,
    input_tokens: int = 20,
    output_tokens: int = 10,
    text: str = "",
) -> Exchange:
    """An answer of ``api`` holding ``text`` (optional) then ``calls``, ending with the raw
    stop value ``stop`` (default: the API's "called tools" value) and the usage given."""
    stop = stop or NORMAL_STOP[api]
    if api == "openai_responses":
        from .responses_answers import answer

        return answer(
            calls,
            stream=stream,
            text=text,
            incomplete=stop == "incomplete",
            model=MODELS[api],
            input_tokens=input_tokens,
            output_tokens=output_tokens,
        )
    if api == "openai_chat":
        return _openai(calls, stream, stop, input_tokens, output_tokens, text)
    if api == "anthropic_messages":
        return _anthropic(calls, stream, stop, input_tokens, output_tokens, text)
    return _gemini(calls, stream, stop, input_tokens, output_tokens, text)


def text_answer(api: str, text: str, *, stream: bool) -> Exchange:
    """A plain final answer of ``api``."""
    stop = {
        "openai_chat": "stop",
        "anthropic_messages": "end_turn",
        "gemini": "STOP",
        "openai_responses": "completed",
    }[api]
    return tool_call_answer(api, [], stream=stream, stop=stop, text=text)


def _openai(calls: list[Call], stream: bool, stop: str, inp: int, out: int, text: str) -> Exchange:
    model = MODELS["openai_chat"]
    usage = {"prompt_tokens": inp, "completion_tokens": out, "total_tokens": inp + out}
    if not stream:
        message: dict[str, Any] = {"role": "assistant", "content": text or None}
        if calls:
            message["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.raw}}
                for c in calls
            ]
        return json_exchange(
            {
                "id": "chatcmpl-tools",
                "object": "chat.completion",
                "created": 1,
                "model": model,
                "choices": [{"index": 0, "message": message, "finish_reason": stop}],
                "usage": usage,
            }
        )

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": "chatcmpl-tools",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    events: list[Any] = [chunk({"role": "assistant", "content": text or None})]
    for i, c in enumerate(calls):
        events.append(
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": i,
                            "id": c.id,
                            "type": "function",
                            "function": {"name": c.name, "arguments": c.raw},
                        }
                    ]
                }
            )
        )
    events.append(chunk({}, stop))
    events.append(
        {
            "id": "chatcmpl-tools",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": model,
            "choices": [],
        }
        | {"usage": usage}
    )
    return stream_exchange("openai_chat", events)


def _anthropic(calls: list[Call], stream: bool, stop: str, inp: int, out: int, text: str) -> Exchange:
    model = MODELS["anthropic_messages"]
    if not stream:
        content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
        content += [{"type": "tool_use", "id": c.id, "name": c.name, "input": c.args()} for c in calls]
        return json_exchange(
            {
                "id": "msg_tools",
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": content,
                "stop_reason": stop,
                "stop_sequence": None,
                "usage": {"input_tokens": inp, "output_tokens": out},
            }
        )
    events: list[dict[str, Any]] = [
        {
            "event": "message_start",
            "data": {
                "type": "message_start",
                "message": {
                    "id": "msg_tools",
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {"input_tokens": inp, "output_tokens": 1},
                },
            },
        }
    ]
    index = 0
    if text:
        events += [
            {
                "event": "content_block_start",
                "data": {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "text", "text": ""},
                },
            },
            {
                "event": "content_block_delta",
                "data": {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": text},
                },
            },
            {"event": "content_block_stop", "data": {"type": "content_block_stop", "index": 0}},
        ]
        index = 1
    for c in calls:
        events += [
            {
                "event": "content_block_start",
                "data": {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {"type": "tool_use", "id": c.id, "name": c.name, "input": {}},
                },
            },
            {
                "event": "content_block_delta",
                "data": {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": c.raw},
                },
            },
            {"event": "content_block_stop", "data": {"type": "content_block_stop", "index": index}},
        ]
        index += 1
    events += [
        {
            "event": "message_delta",
            "data": {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": out},
            },
        },
        {"event": "message_stop", "data": {"type": "message_stop"}},
    ]
    return stream_exchange("anthropic_messages", events)


def _gemini(calls: list[Call], stream: bool, stop: str, inp: int, out: int, text: str) -> Exchange:
    parts: list[dict[str, Any]] = [{"text": text}] if text else []
    for c in calls:
        fc: dict[str, Any] = {"name": c.name, "args": c.args()}
        if c.id:
            fc["id"] = c.id
        parts.append({"functionCall": fc})
    body = {
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": stop, "index": 0}],
        "usageMetadata": {"promptTokenCount": inp, "candidatesTokenCount": out, "totalTokenCount": inp + out},
        "modelVersion": MODELS["gemini"],
        "responseId": "gemini-tools",
    }
    if not stream:
        return json_exchange(body)
    return stream_exchange("gemini", [body])
