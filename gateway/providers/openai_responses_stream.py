"""Incremental parser of OpenAI Responses streams (``response.*`` events,
https://platform.openai.com/docs/api-reference/responses-streaming) into internal stream events.

* ``response.created`` / ``response.in_progress``: the id and model are noted, nothing is
  emitted. ``MessageStart`` waits for the first output item (``response.output_item.added``,
  which for a reasoning model comes as soon as it starts to reason): a ``response.failed`` (or
  ``error`` event) before it — OpenAI reports rate limits and context overflows of a stream
  this way — is raised as :class:`UpstreamError` with the status OpenAI gives the same error
  over HTTP, so the route layer falls back exactly as for an HTTP error. After output has
  started it becomes a :class:`StreamError`.
* ``response.output_item.added`` of a ``function_call`` opens a tool-call part (``call_id``,
  ``name``); ``response.function_call_arguments.delta`` fragments are its arguments; the
  ``.done`` event (or ``output_item.done``) supplies them whole when no fragment came; the part
  ends at ``output_item.done``. A ``custom_tool_call`` item the same, as the function a custom
  tool is emulated as: its arguments are ``{"input": "<the free-form input>"}``, opened at the
  item, each ``response.custom_tool_call_input.delta`` JSON-escaped into the string, closed at
  ``output_item.done`` (the fragments join to exactly ``{"input": input}`` of the whole form).
* ``response.output_text.delta`` (and ``response.refusal.delta``) open a text part per
  ``(item_id, content_index)`` at the first non-empty text; it ends at ``content_part.done`` /
  ``output_item.done``.
* A ``reasoning`` item becomes one thinking part, opened at its first summary (or raw
  reasoning) text delta; summary parts after the first are preceded by a blank line. At the
  item's ``output_item.done`` its ``encrypted_content`` arrives as the part's signature (a part
  is opened then if no text came), so the client can send it back to the same deployment.
  (``response.completed`` repeats the output with a freshly encrypted copy, a different string
  that is equally valid; the ``output_item.done`` one is kept, as it arrives first.)
* ``response.completed`` / ``response.incomplete``: open parts end, then ``MessageEnd`` with the
  stop reason (``incomplete_details.reason`` ``max_output_tokens`` -> ``length``) and usage.
* Other events (``content_part.added``, ``reasoning_summary_part.*``, ``*.done`` texts, hosted
  tool progress, and event types OpenAI adds later) carry nothing new and are ignored.

A stream that closes before its ``response.completed`` / ``incomplete`` raises
:class:`UpstreamProtocolError` (cut off).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from gateway.errors import UpstreamProtocolError
from gateway.providers import wire_common
from gateway.providers.openai_responses_common import (
    API,
    SUMMARY_SEPARATOR,
    error_status,
    failure,
    map_stop_reason,
    message_texts,
    provenance,
    reasoning_text,
    status_of,
    usage_fields,
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

_part_delta = PartDelta.__pydantic_validator__.validate_python
"""``PartDelta`` from a dict of its fields (see :mod:`gateway.providers.openai_stream`)."""

_ERROR_KINDS = {
    400: "invalid_request",
    404: "not_found",
    429: "rate_limit",
    500: "upstream",
    502: "upstream",
    503: "overloaded",
}


_KINDS = ("function_call", "custom_tool_call", "reasoning", "message")
_CUSTOM_OPEN = '{"input":"'
"""How an emulated custom tool's arguments begin (see ``openai_responses_common.custom_arguments``)."""


def _json_string_body(text: str) -> str:
    """``text`` escaped as the inside of a JSON string (no quotes), so escaped fragments join to
    the escape of the whole."""
    return orjson.dumps(text).decode()[1:-1]


@dataclass
class _Item:
    """One output item being streamed: its kind and, once opened, its part index."""

    kind: str  # function_call | custom_tool_call | reasoning | message | other
    part: int | None = None
    got_args: bool = False
    summary_index: int | None = None
    ended: bool = False
    phase: str | None = None  # a message item's phase (commentary, final_answer)


class OpenAIResponsesStreamParser:
    """See module docstring. ``feed(event, data)`` takes one SSE event (the payload's ``type``
    decides; the SSE ``event:`` name is its fallback); ``finish()`` ends the stream."""

    def __init__(self, ctx: CallContext) -> None:
        self.ctx = ctx
        self.resp_id = ""
        self.model = ""
        self.started = False
        self.ended = False
        self.failed = False
        self.next_part = 0
        self.items: dict[str, _Item] = {}
        self.texts: dict[tuple[Any, Any], int] = {}  # (item id, content index) -> part
        self.has_calls = False
        self.synthetic = 0

    # ------------------------------------------------------------------ entry points

    def feed(self, event: str | None, data: bytes) -> list[StreamEvent]:
        """One SSE event. Raises :class:`UpstreamProtocolError` for data that is not a JSON
        object, :class:`UpstreamError` for a failure before any output (see module docstring)
        and :class:`UnknownStopReason` for an end status it does not know."""
        if self.ended or self.failed:
            return []
        payload = data.strip()
        if not payload or payload == b"[DONE]":
            return []
        try:
            obj = orjson.loads(payload)
        except orjson.JSONDecodeError:
            obj = None
        if not isinstance(obj, dict):
            obj = wire_common.loads_object(payload, what="stream event", deployment=self.ctx.deployment.name)
        kind = obj.get("type") or event
        if kind == "response.output_text.delta":  # most events
            delta = obj.get("delta")
            part = self.texts.get((obj.get("item_id"), obj.get("content_index")))
            if part is not None and type(delta) is str:
                return [_part_delta({"index": part, "text": delta})] if delta else []
        out: list[StreamEvent] = []
        self._event(str(kind or ""), obj, out)
        return out

    def finish(self) -> list[StreamEvent]:
        """The upstream closed the stream: nothing when it already ended, else
        :class:`UpstreamProtocolError` (cut off before ``response.completed``)."""
        if self.ended or self.failed:
            return []
        raise UpstreamProtocolError(
            "OpenAI Responses stream ended before response.completed (cut off)",
            deployment=self.ctx.deployment.name,
        )

    # ------------------------------------------------------------------ internals

    def _event(self, kind: str, obj: dict[str, Any], out: list[StreamEvent]) -> None:
        if kind in ("response.created", "response.in_progress", "response.queued"):
            resp = wire_common.as_dict(obj.get("response"))
            self.resp_id = self.resp_id or str(resp.get("id") or "")
            self.model = self.model or str(resp.get("model") or "")
        elif kind == "response.output_text.delta" or kind == "response.refusal.delta":
            self._text(obj, out)
        elif kind == "response.function_call_arguments.delta":
            item = self.items.get(str(obj.get("item_id")))
            delta = obj.get("delta")
            if (
                item is not None
                and item.part is not None
                and not item.ended
                and isinstance(delta, str)
                and delta
            ):
                item.got_args = True
                out.append(_part_delta({"index": item.part, "arguments": delta}))
        elif kind == "response.custom_tool_call_input.delta":
            item = self.items.get(str(obj.get("item_id")))
            delta = obj.get("delta")
            if (
                item is not None
                and item.part is not None
                and not item.ended
                and isinstance(delta, str)
                and delta
            ):
                item.got_args = True
                out.append(PartDelta(index=item.part, arguments=_json_string_body(delta)))
        elif kind == "response.function_call_arguments.done":
            self._arguments_whole(self.items.get(str(obj.get("item_id"))), obj.get("arguments"), out)
        elif kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            self._reasoning(obj, out)
        elif kind == "response.output_item.added":
            self._item_added(wire_common.as_dict(obj.get("item")), out)
        elif kind == "response.output_item.done":
            self._item_done(wire_common.as_dict(obj.get("item")), out)
        elif kind == "response.content_part.done":
            part = self.texts.pop((obj.get("item_id"), obj.get("content_index")), None)
            if part is not None:
                out.append(PartEnd(index=part))
        elif kind in ("response.completed", "response.incomplete"):
            self._end(wire_common.as_dict(obj.get("response")), out)
        elif kind == "response.failed":
            resp = wire_common.as_dict(obj.get("response"))
            self._fail(resp.get("error") or {}, "response.failed", out)
        elif kind == "error":
            err = obj.get("error") if isinstance(obj.get("error"), dict) else obj
            self._fail(err, "an error event", out)

    def _start(self, out: list[StreamEvent]) -> None:
        if not self.started:
            self.started = True
            out.append(MessageStart(id=self.resp_id, model=self.model or self.ctx.deployment.model))

    def _new_part(self, out: list[StreamEvent], **fields: Any) -> int:
        self._start(out)
        index = self.next_part
        self.next_part += 1
        out.append(PartStart(index=index, **fields))
        return index

    def _item_id(self, item: dict[str, Any]) -> str:
        item_id = item.get("id")
        if item_id:
            return str(item_id)
        self.synthetic += 1
        return f"item_{self.synthetic}"

    def _item_added(self, item: dict[str, Any], out: list[StreamEvent]) -> None:
        kind = str(item.get("type") or "")
        item_id = self._item_id(item)
        entry = _Item(kind if kind in _KINDS else "other")
        phase = item.get("phase")
        if kind == "message" and type(phase) is str:
            entry.phase = phase
        self.items[item_id] = entry
        self._start(out)  # output has begun: the client may have its first bytes
        if entry.kind == "function_call":
            self._open_call(entry, item, out)
            args = item.get("arguments")
            if isinstance(args, str) and args:
                entry.got_args = True
                out.append(PartDelta(index=entry.part or 0, arguments=args))
        elif entry.kind == "custom_tool_call":
            self._open_call(entry, item, out)
            out.append(PartDelta(index=entry.part or 0, arguments=_CUSTOM_OPEN))
            text = item.get("input")
            if isinstance(text, str) and text:
                entry.got_args = True
                out.append(PartDelta(index=entry.part or 0, arguments=_json_string_body(text)))

    def _open_call(self, entry: _Item, item: dict[str, Any], out: list[StreamEvent]) -> None:
        names = self.ctx.names
        call_id = (
            item.get("call_id")
            or item.get("id")
            or wire_common.synth_id("call", self.resp_id, self.next_part)
        )
        self.has_calls = True
        entry.part = self._new_part(
            out,
            kind="tool_call",
            id=names.from_upstream_id(str(call_id)),
            name=names.from_upstream_name(str(item.get("name") or "")),
        )

    def _arguments_whole(self, entry: _Item | None, args: Any, out: list[StreamEvent]) -> None:
        if entry is None or entry.part is None or entry.ended or entry.got_args:
            return
        if isinstance(args, str) and args:
            entry.got_args = True
            out.append(PartDelta(index=entry.part, arguments=args))

    def _text(self, obj: dict[str, Any], out: list[StreamEvent]) -> None:
        delta = obj.get("delta")
        if not isinstance(delta, str) or not delta:
            return
        key = (obj.get("item_id"), obj.get("content_index"))
        part = self.texts.get(key)
        if part is None:
            entry = self.items.get(str(key[0]))
            if entry is not None and entry.phase is not None:
                own = {"phase": entry.phase}
                part = self.texts[key] = self._new_part(out, kind="text", api=API, own_keys=own)
            else:
                part = self.texts[key] = self._new_part(out, kind="text")
            if entry is not None and entry.part is None:
                entry.part = part  # the message has text (it ends at its content part or item)
        out.append(_part_delta({"index": part, "text": delta}))

    def _reasoning(self, obj: dict[str, Any], out: list[StreamEvent]) -> None:
        delta = obj.get("delta")
        if not isinstance(delta, str) or not delta:
            return
        item_id = str(obj.get("item_id"))
        entry = self.items.get(item_id)
        if entry is None:
            entry = self.items[item_id] = _Item("reasoning")
        if entry.ended:
            return
        index = obj.get("summary_index")
        if entry.part is None:
            entry.part = self._new_part(out, kind="thinking", provenance=provenance(self.ctx.deployment))
        elif index is not None and entry.summary_index is not None and index != entry.summary_index:
            delta = SUMMARY_SEPARATOR + delta
        if index is not None:
            entry.summary_index = index
        out.append(_part_delta({"index": entry.part, "text": delta}))

    def _item_done(self, item: dict[str, Any], out: list[StreamEvent]) -> None:
        item_id = str(item.get("id") or "")
        entry = self.items.get(item_id)
        kind = str(item.get("type") or "")
        if entry is None:  # done without added: read it whole
            entry = self.items[item_id or self._item_id(item)] = _Item(kind if kind in _KINDS else "other")
            if entry.kind in ("function_call", "custom_tool_call"):
                self._open_call(entry, item, out)
            if entry.kind == "custom_tool_call":
                out.append(PartDelta(index=entry.part or 0, arguments=_CUSTOM_OPEN))
        if entry.ended:
            return
        if entry.kind == "function_call":
            self._arguments_whole(entry, item.get("arguments"), out)
        elif entry.kind == "custom_tool_call":
            text = item.get("input")
            if not entry.got_args and isinstance(text, str) and text:
                out.append(PartDelta(index=entry.part or 0, arguments=_json_string_body(text)))
            out.append(PartDelta(index=entry.part or 0, arguments='"}'))
        elif entry.kind == "reasoning":
            self._reasoning_done(entry, item, out)
        elif entry.kind == "message":
            for key in [k for k in self.texts if k[0] == item_id]:
                out.append(PartEnd(index=self.texts.pop(key)))
            if entry.part is None:  # no text delta came: the item's own content
                for text in message_texts(item):
                    index = self._new_part(out, kind="text")
                    out += [PartDelta(index=index, text=text), PartEnd(index=index)]
        entry.ended = True
        if entry.part is not None and entry.kind != "message":
            out.append(PartEnd(index=entry.part))

    def _reasoning_done(self, entry: _Item, item: dict[str, Any], out: list[StreamEvent]) -> None:
        sig = item.get("encrypted_content")
        if sig is not None and not isinstance(sig, str):
            raise UpstreamProtocolError(
                "reasoning item encrypted_content is not a string", deployment=self.ctx.deployment.name
            )
        if entry.part is None:
            text = reasoning_text(item)
            if not text and not sig:
                return
            entry.part = self._new_part(out, kind="thinking", provenance=provenance(self.ctx.deployment))
            if text:
                out.append(PartDelta(index=entry.part, text=text))
        if sig:
            out.append(PartDelta(index=entry.part, signature=sig))

    def _close_all(self, out: list[StreamEvent]) -> None:
        for part in self.texts.values():
            out.append(PartEnd(index=part))
        self.texts.clear()
        for entry in self.items.values():
            if not entry.ended:
                entry.ended = True
                if entry.part is not None and entry.kind != "message":
                    out.append(PartEnd(index=entry.part))

    def _end(self, resp: dict[str, Any], out: list[StreamEvent]) -> None:
        self.resp_id = self.resp_id or str(resp.get("id") or "")
        self.model = self.model or str(resp.get("model") or "")
        stop: StopReason = map_stop_reason(status_of(resp), has_tool_calls=self.has_calls)
        self._start(out)
        self._close_all(out)
        usage = resp.get("usage")
        out.append(
            MessageEnd(
                stop_reason=stop,
                usage=Usage.model_validate(usage_fields(usage)) if isinstance(usage, dict) else Usage(),
            )
        )
        self.ended = True

    def _fail(self, err: Any, what: str, out: list[StreamEvent]) -> None:
        self.failed = True
        exc = failure(err, self.ctx.deployment.name, what=what)
        if not self.started:
            raise exc
        status = error_status(err) if isinstance(err, dict) else 502
        out.append(StreamError(kind=_ERROR_KINDS.get(status, "upstream"), message=exc.message, status=status))
