"""Incremental parser of OpenAI Chat Completions streams (``chat.completion.chunk`` events)
into internal stream events.

Part indexes are Turnstile's own, counted over all parts from 0:

* reasoning (``reasoning_content`` / ``reasoning``) and text each open a part that stays open
  while deltas of the same kind follow; a part of another kind closes it;
* each tool call (keyed by the delta's ``index``) gets a fresh part index when its name is
  known; its argument fragments become ``PartDelta(arguments=...)``; tool-call parts stay open
  until ``finish_reason`` (fragments of parallel calls may interleave);
* one delta carrying both text and a tool-call start (handed case C12) yields both.

Tool-call deltas without ``index`` (some OpenAI-compatible servers) continue the latest call
unless they carry a new ``id``; a different ``id`` at an index already used starts a new call.

The ``finish_reason`` is mapped when it arrives (an unknown one raises
:class:`UnknownStopReason` at once); the usage chunk that follows it (``choices: []``) is
recorded, and ``MessageEnd`` is emitted at ``data: [DONE]`` or when the stream closes.
A stream that closes before any ``finish_reason`` raises :class:`UpstreamProtocolError`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from gateway.errors import UpstreamProtocolError
from gateway.providers import wire_common
from gateway.providers.openai_common import (
    content_items,
    map_stop_reason,
    raw_arguments_of,
    reasoning_text,
    thinking_provenance,
    usage_from_wire,
)
from gateway.providers.wire import CallContext
from gateway.schema import (
    MessageEnd,
    MessageStart,
    PartDelta,
    PartEnd,
    PartStart,
    StopReason,
    StreamError,
    StreamEvent,
    Usage,
)

_ERROR_KINDS = {
    400: "invalid_request",
    401: "authentication",
    403: "permission",
    404: "not_found",
    408: "timeout",
    413: "payload_too_large",
    429: "rate_limit",
    503: "overloaded",
    529: "overloaded",
}


_part_delta = PartDelta.__pydantic_validator__.validate_python
"""``PartDelta`` from a dict of its fields, validated exactly as ``PartDelta(**fields)`` (the
same validator) without the Python-level ``__init__`` call: the per-chunk event is made once
per upstream chunk, and this is a third cheaper."""


@dataclass
class _Call:
    id: str | None
    name: str | None
    index: int | None = None  # part index once started
    pending: list[str] = field(default_factory=list)
    ended: bool = False
    custom: bool = False  # a Chat custom tool's call: its input streamed as the argument "input"


_CUSTOM_OPEN = '{"input":"'
"""How a custom tool call's arguments begin: the emulated function's one argument ``input``
(:attr:`gateway.schema.ToolDefinition.freeform`); its input is streamed JSON-escaped, and
``"}`` closes it."""


class OpenAIChatStreamParser:
    """See module docstring. ``feed(event, data)`` takes one SSE event; ``feed_obj(obj)`` one
    decoded chunk object (used by the litellm adapter); ``finish()`` ends the stream."""

    def __init__(self, ctx: CallContext) -> None:
        self.ctx = ctx
        self.msg_id = ""
        self.model = ""
        self.started = False
        self.ended = False
        self.failed = False
        self.next_index = 0
        self.open_part: tuple[str, int] | None = None  # (kind, index) of the open text/thinking
        self.calls: dict[Any, _Call] = {}
        self.call_order: list[_Call] = []
        self.last_key: Any = None
        self.synthetic = 0
        self.finish_raw: str | None = None
        self.stop: StopReason | None = None
        self.usage: Usage | None = None

    # ------------------------------------------------------------------ entry points

    def feed(self, event: str | None, data: bytes) -> list[StreamEvent]:
        """One SSE event. ``data: [DONE]`` ends the message; an ``error`` payload becomes a
        :class:`StreamError`. Raises :class:`UpstreamProtocolError` for non-JSON data."""
        if self.ended or self.failed:
            return []
        payload = data.strip()
        if not payload:
            return []
        if payload == b"[DONE]":
            return self._end()
        try:
            obj = orjson.loads(payload)
        except orjson.JSONDecodeError:  # the protocol error, with its message
            obj = wire_common.loads_json(payload, what="stream chunk", deployment=self.ctx.deployment.name)
        if not isinstance(obj, dict):
            raise UpstreamProtocolError(
                "stream chunk is not a JSON object", deployment=self.ctx.deployment.name
            )
        if event == "error" and "error" not in obj:
            obj = {"error": obj}
        return self.feed_obj(obj)

    def feed_obj(self, obj: dict[str, Any]) -> list[StreamEvent]:
        """One decoded ``chat.completion.chunk`` object."""
        if self.ended or self.failed:
            return []
        out: list[StreamEvent] = []
        get = obj.get
        choices = get("choices")
        if not choices and get("error"):
            return self._error(obj["error"])
        if not self.msg_id:
            msg_id = get("id")
            if msg_id:
                self.msg_id = str(msg_id)
        if not self.model:
            model = get("model")
            if model:
                self.model = str(model)
        if not isinstance(choices, list):
            choices = []
        usage = get("usage")
        if isinstance(usage, dict):
            self.usage = usage_from_wire(usage)
        elif not self.started and not choices:
            return out
        if not self.started:
            self._start(out)
        for choice in choices:
            if not isinstance(choice, dict) or choice.get("index", 0) not in (0, None):
                continue
            delta = choice.get("delta")
            if delta and isinstance(delta, dict):
                content = delta.get("content")
                if len(delta) == 1 and type(content) is str:  # text alone: most chunks
                    open_part = self.open_part
                    if open_part is not None and open_part[0] == "text" and content:
                        out.append(_part_delta({"index": open_part[1], "text": content}))
                    elif content:
                        self._text("text", content, out)
                else:
                    self._delta(delta, out)
            fr = choice.get("finish_reason")
            if fr:
                self.finish_raw = str(fr)
                self.stop = map_stop_reason(self.finish_raw)
                self._close_all(out)
        return out

    def finish(self) -> list[StreamEvent]:
        """The upstream closed the stream: emit ``MessageEnd`` if a finish reason was seen,
        else raise :class:`UpstreamProtocolError` (the stream was cut off)."""
        if self.ended or self.failed:
            return []
        if self.stop is None:
            raise UpstreamProtocolError(
                "OpenAI chat stream ended before a finish_reason (cut off)",
                deployment=self.ctx.deployment.name,
            )
        return self._end()

    # ------------------------------------------------------------------ internals

    def _start(self, out: list[StreamEvent]) -> None:
        self.started = True
        out.append(MessageStart(id=self.msg_id, model=self.model or self.ctx.deployment.model))

    def _end(self) -> list[StreamEvent]:
        if self.stop is None:
            raise UpstreamProtocolError(
                "OpenAI chat stream sent [DONE] before a finish_reason", deployment=self.ctx.deployment.name
            )
        out: list[StreamEvent] = []
        if not self.started:
            self._start(out)
        self._close_all(out)
        stop = self.stop
        if stop == "stop" and self.call_order:
            stop = "tool_use"
        out.append(MessageEnd(stop_reason=stop, usage=self.usage or Usage()))
        self.ended = True
        return out

    def _error(self, err: Any) -> list[StreamEvent]:
        self.failed = True
        if isinstance(err, dict):
            message = str(err.get("message") or err)
            code = err.get("code")
            status = code if isinstance(code, int) and 400 <= code < 600 else 502
            etype = str(err.get("type") or err.get("code") or "")
        else:
            message, status, etype = str(err), 502, ""
        kind = _ERROR_KINDS.get(status, "upstream")
        if "rate_limit" in etype:
            kind, status = "rate_limit", 429
        elif "overloaded" in etype:
            kind = "overloaded"
        return [StreamError(kind=kind, message=message, status=status)]

    def _delta(self, delta: dict[str, Any], out: list[StreamEvent]) -> None:
        get = delta.get
        if "reasoning_content" in delta or "reasoning" in delta:
            reasoning = reasoning_text(delta)
            if reasoning:
                self._text("thinking", reasoning, out)
        content = get("content")
        if isinstance(content, str):
            if content:
                self._text("text", content, out)
        elif content is not None:
            for kind, text in content_items(content):
                self._text(kind, text, out)
        refusal = get("refusal")
        if refusal and isinstance(refusal, str):
            self._text("text", refusal, out)
        calls = get("tool_calls")
        if isinstance(calls, list):
            for tc in calls:
                if isinstance(tc, dict):
                    self._tool_delta(tc, out)
        legacy = get("function_call")
        if isinstance(legacy, dict) and not calls:
            self._tool_delta({"index": "function_call", "function": legacy}, out)

    def _close_open(self, out: list[StreamEvent]) -> None:
        if self.open_part is not None:
            out.append(PartEnd(index=self.open_part[1]))
            self.open_part = None

    def _text(self, kind: str, text: str, out: list[StreamEvent]) -> None:
        open_part = self.open_part
        if open_part is not None and open_part[0] == kind:
            out.append(_part_delta({"index": open_part[1], "text": text}))
            return
        self._close_open(out)
        index = self.next_index
        self.next_index += 1
        if kind == "thinking":
            out.append(
                PartStart(index=index, kind="thinking", provenance=thinking_provenance(self.ctx.deployment))
            )
        else:
            out.append(PartStart(index=index, kind="text"))
        out.append(PartDelta(index=index, text=text))
        self.open_part = (kind, index)

    def _new_key(self) -> Any:
        self.synthetic += 1
        return ("synthetic", self.synthetic)

    def _tool_delta(self, tc: dict[str, Any], out: list[StreamEvent]) -> None:
        custom = tc.get("custom")
        if type(custom) is dict:  # a custom tool's call: {"name", "input"} pieces
            fn = custom
            text = custom.get("input")
            args = orjson.dumps(text).decode()[1:-1] if isinstance(text, str) else ""
        else:
            fn = wire_common.as_dict(tc.get("function"))
            args = raw_arguments_of(fn.get("arguments")) if fn.get("arguments") is not None else ""
        tid = tc.get("id") or None
        name = fn.get("name") or None
        key = tc.get("index")
        if key is None:
            last = self.calls.get(self.last_key)
            key = self._new_key() if last is None or (tid and last.id and tid != last.id) else self.last_key
        call = self.calls.get(key)
        if call is not None and tid and call.id and tid != call.id:
            key = self._new_key()
            call = None
        if call is None:
            call = _Call(id=str(tid) if tid else None, name=str(name) if name else None)
            if type(custom) is dict:
                call.custom = True
                call.pending.append(_CUSTOM_OPEN)
            self.calls[key] = call
        else:
            call.id = call.id or (str(tid) if tid else None)
            call.name = call.name or (str(name) if name else None)
        self.last_key = key
        if call.index is None:
            if args:
                call.pending.append(args)
            if call.name:
                self._start_call(call, out)
        elif args and not call.ended:
            out.append(_part_delta({"index": call.index, "arguments": args}))

    def _start_call(self, call: _Call, out: list[StreamEvent]) -> None:
        self._close_open(out)
        call.index = self.next_index
        self.next_index += 1
        self.call_order.append(call)
        if not call.id:
            call.id = wire_common.synth_id("call", self.msg_id, len(self.call_order) - 1)
        names = self.ctx.names
        out.append(
            PartStart(
                index=call.index,
                kind="tool_call",
                id=names.from_upstream_id(call.id),
                name=names.from_upstream_name(call.name or ""),
            )
        )
        if call.pending:
            out.append(PartDelta(index=call.index, arguments="".join(call.pending)))
            call.pending = []

    def _close_all(self, out: list[StreamEvent]) -> None:
        self._close_open(out)
        for call in self.calls.values():
            if call.index is None:
                self._start_call(call, out)
        for call in sorted(self.call_order, key=lambda c: c.index or 0):
            if not call.ended and call.index is not None:
                if call.custom:
                    out.append(PartDelta(index=call.index, arguments='"}'))
                out.append(PartEnd(index=call.index))
                call.ended = True
