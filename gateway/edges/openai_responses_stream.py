"""Internal stream events -> OpenAI Responses SSE (``event: <type>\\ndata: {...}\\n\\n``).

Reference: https://platform.openai.com/docs/api-reference/responses-streaming. Rules this
renderer keeps:

* every event has ``type`` and a ``sequence_number`` counted from 0 without gaps;
* ``response.created`` then ``response.in_progress`` first (status ``in_progress``, empty
  output); the response id is fixed there and never changes (the SDK refuses a lifecycle event
  whose id changed);
* output items are numbered in the order they are rendered (``output_index`` 0, 1, ...), one
  per content part. Text: ``output_item.added`` (message), ``content_part.added``,
  ``output_text.delta``..., ``output_text.done``, ``content_part.done``,
  ``output_item.done``. Thinking: ``output_item.added`` (reasoning), per summary
  ``reasoning_summary_part.added``, ``reasoning_summary_text.delta``..., ``.done``,
  ``reasoning_summary_part.done``, ``output_item.done`` (with ``encrypted_content`` when
  included). Tool calls are rendered whole when their part ends (the pipeline holds them until
  the stop reason is known, and withheld calls never reach this renderer):
  ``output_item.added`` (``arguments: ""``), ``function_call_arguments.delta`` per fragment,
  ``.done``, ``output_item.done``; a custom tool's call the same with
  ``custom_tool_call_input.delta/.done``;
* the end: ``response.completed``, ``response.incomplete`` or ``response.failed`` with the
  whole response (output items and usage), as :func:`render_response` would give it;
* an error after the stream started: ``response.failed`` with ``error.code``
  (:func:`stream_error_code`); the stream then ends. Errors before it started are plain HTTP
  errors (the server answers them);
* keep-alive and the server-side tool loop's progress: a ``response.in_progress`` data event
  (Codex resets its idle timer on data events only, not on SSE comments).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any

import orjson

from gateway.edges._common import sse
from gateway.edges.openai_responses_render import (
    add_meta,
    call_item,
    custom_tools,
    failed_error,
    include_encrypted,
    item_id,
    message_item,
    namespaced_tools,
    reasoning_item,
    render_usage,
    response_body,
    response_id,
    status_of,
    stream_error_code,
)
from gateway.schema import (
    MessageEnd,
    MessageStart,
    PartDelta,
    PartEnd,
    PartStart,
    Provenance,
    Request,
    StreamError,
    StreamEvent,
    ToolCallPart,
)


def ping_frame() -> bytes:
    """A keep-alive for a renderer-less caller: a ``response.in_progress`` event without a
    response or sequence number. A stream that has a renderer sends
    :meth:`StreamRenderer.ping` instead, which clients accept as a lifecycle event."""
    return sse({"type": "response.in_progress"}, "response.in_progress")


def tool_progress_frame(name: str, is_error: bool = False) -> bytes:
    """Progress of the server-side tool loop for a renderer-less caller: an SSE comment line.
    Streams use :meth:`StreamRenderer.tool_progress` (a ``response.in_progress`` event)."""
    return f": turnstile tool {name} done{' (error)' if is_error else ''}\n\n".encode()


@dataclass
class _Item:
    """An output item being streamed: its kind, output index and id, what it has gathered."""

    kind: str
    output_index: int = -1
    id: str = ""
    name: str = ""
    call_id: str = ""
    signature: str | None = None
    provenance: Provenance | None = None
    fragments: list[str] = field(default_factory=list)
    started: bool = False  # a reasoning item's summary part was announced
    phase: str | None = None  # a message item's phase from a Responses upstream


class StreamRenderer:
    """Renders one streamed answer for an OpenAI Responses client.

    ``render(event)`` returns the complete SSE frames (bytes) the event produces;
    ``finish()`` a ``response.failed`` event if the answer never ended, else nothing.
    ``closed`` is True once the answer's end or an error was rendered.
    """

    def __init__(self, request: Request) -> None:
        self.request = request
        self.model = request.model
        self.created_at = int(time.time())
        self.id = ""
        self.seq = 0
        self.started = False
        self.closed = False
        self.parts: dict[int, _Item] = {}
        self.output: list[dict[str, Any]] = []  # finished items by output index
        self.custom = custom_tools(request)
        self.namespaced = namespaced_tools(request)
        self.include = include_encrypted(request)

    # ------------------------------------------------------------------ frames

    def _event(self, etype: str, body: dict[str, Any]) -> bytes:
        body = {"type": etype, "sequence_number": self.seq, **body}
        self.seq += 1
        return sse(body, etype)

    def _snapshot(self, status: str = "in_progress", **kw: Any) -> dict[str, Any]:
        return response_body(
            self.request,
            resp_id=self.id,
            created_at=self.created_at,
            model=self.model,
            status=status,
            output=kw.pop("output", []),
            usage=kw.pop("usage", None),
            **kw,
        )

    def _start(self, out: list[bytes], event: MessageStart | None = None) -> None:
        if self.started:
            return
        self.started = True
        if event is not None:
            self.id = response_id(event.id, self.request)
            self.model = event.model or self.model
        else:
            self.id = response_id("resp_" + os.urandom(12).hex(), self.request)
        out.append(self._event("response.created", {"response": self._snapshot()}))
        out.append(self._event("response.in_progress", {"response": self._snapshot()}))

    def ping(self) -> bytes:
        """A keep-alive: ``response.in_progress`` with the response so far (after the start)."""
        out: list[bytes] = []
        if not self.started:
            self._start(out)
            return b"".join(out)
        return self._event("response.in_progress", {"response": self._snapshot()})

    def tool_progress(self, name: str, is_error: bool = False) -> bytes:
        """Progress of the server-side tool loop (tool ``name`` finished): a keep-alive
        ``response.in_progress`` event, which clients ignore and Codex's idle timer counts."""
        return self.ping()

    def _open(self, item: _Item, prefix: str) -> int:
        n = len(self.output)
        self.output.append({})  # its place, filled when the item is done
        item.output_index = n
        item.id = item_id(prefix, self.id, n)
        return n

    # ------------------------------------------------------------------ items

    def _text_start(self, item: _Item, out: list[bytes]) -> None:
        n = self._open(item, "msg")
        added = message_item(item.id, "", "in_progress", item.phase)
        added["content"] = []
        out.append(self._event("response.output_item.added", {"output_index": n, "item": added}))
        part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
        out.append(
            self._event(
                "response.content_part.added",
                {"item_id": item.id, "output_index": n, "content_index": 0, "part": part},
            )
        )

    def _text_end(self, item: _Item, out: list[bytes]) -> None:
        text = "".join(item.fragments)
        n = item.output_index
        ids = {"item_id": item.id, "output_index": n, "content_index": 0}
        out.append(self._event("response.output_text.done", {**ids, "text": text, "logprobs": []}))
        part = {"type": "output_text", "text": text, "annotations": [], "logprobs": []}
        out.append(self._event("response.content_part.done", {**ids, "part": part}))
        done = message_item(item.id, text, phase=item.phase)
        self.output[n] = done
        out.append(self._event("response.output_item.done", {"output_index": n, "item": done}))

    def _reasoning_start(self, item: _Item, out: list[bytes]) -> None:
        n = self._open(item, "rs")
        added = {"id": item.id, "type": "reasoning", "summary": []}
        out.append(self._event("response.output_item.added", {"output_index": n, "item": added}))

    def _reasoning_delta(self, item: _Item, text: str, out: list[bytes]) -> None:
        ids = {"item_id": item.id, "output_index": item.output_index, "summary_index": 0}
        if not item.started:
            item.started = True
            part = {"type": "summary_text", "text": ""}
            out.append(self._event("response.reasoning_summary_part.added", {**ids, "part": part}))
        item.fragments.append(text)
        out.append(self._event("response.reasoning_summary_text.delta", {**ids, "delta": text}))

    def _reasoning_end(self, item: _Item, out: list[bytes]) -> None:
        text = "".join(item.fragments)
        n = item.output_index
        if item.started:
            ids = {"item_id": item.id, "output_index": n, "summary_index": 0}
            out.append(self._event("response.reasoning_summary_text.done", {**ids, "text": text}))
            part = {"type": "summary_text", "text": text}
            out.append(self._event("response.reasoning_summary_part.done", {**ids, "part": part}))
        done = reasoning_item(item.id, text, item.signature, item.provenance, self.include)
        self.output[n] = done
        out.append(self._event("response.output_item.done", {"output_index": n, "item": done}))

    def _call(self, item: _Item, out: list[bytes]) -> None:
        """A held tool call, rendered whole."""
        custom = item.name in self.custom
        n = self._open(item, "ctc" if custom else "fc")
        raw = "".join(item.fragments)
        call = ToolCallPart(
            id=item.call_id,
            name=item.name,
            arguments=_object(raw),
            raw_arguments=raw or "{}",
            signature=item.signature,
            provenance=item.provenance,
        )
        namespace = self.namespaced.get(call.name)
        added = call_item(item.id, call, custom, "in_progress", namespace)
        done = call_item(item.id, call, custom, namespace=namespace)
        ids = {"item_id": item.id, "output_index": n}
        if custom:
            added["input"] = ""
            out.append(self._event("response.output_item.added", {"output_index": n, "item": added}))
            value = done["input"]
            out.append(self._event("response.custom_tool_call_input.delta", {**ids, "delta": value}))
            out.append(self._event("response.custom_tool_call_input.done", {**ids, "input": value}))
        else:
            added["arguments"] = ""
            out.append(self._event("response.output_item.added", {"output_index": n, "item": added}))
            for frag in [f for f in item.fragments if f] or ["{}"]:
                out.append(self._event("response.function_call_arguments.delta", {**ids, "delta": frag}))
            out.append(
                self._event(
                    "response.function_call_arguments.done",
                    {**ids, "name": done["name"], "arguments": done["arguments"]},
                )
            )
        self.output[n] = done
        out.append(self._event("response.output_item.done", {"output_index": n, "item": done}))

    def _end_part(self, index: int, out: list[bytes]) -> None:
        item = self.parts.pop(index, None)
        if item is None:
            return
        if item.kind == "text":
            self._text_end(item, out)
        elif item.kind in ("thinking", "redacted_thinking"):
            self._reasoning_end(item, out)
        elif item.kind == "tool_call":
            self._call(item, out)

    # ------------------------------------------------------------------ events

    def render(self, event: StreamEvent) -> list[bytes]:
        """The SSE frames for one internal event (possibly none)."""
        out: list[bytes] = []
        if self.closed:
            return out
        if type(event) is PartDelta:
            self._start(out)
            item = self.parts.get(event.index)
            if item is None:  # a delta without its start: a text part
                item = self.parts[event.index] = _Item("text")
                self._text_start(item, out)
            if item.kind == "text" and event.text:
                item.fragments.append(event.text)
                out.append(
                    self._event(
                        "response.output_text.delta",
                        {
                            "item_id": item.id,
                            "output_index": item.output_index,
                            "content_index": 0,
                            "delta": event.text,
                            "logprobs": [],
                        },
                    )
                )
            elif item.kind == "thinking":
                if event.text:
                    self._reasoning_delta(item, event.text, out)
                if event.signature:
                    item.signature = (item.signature or "") + event.signature
            elif item.kind == "tool_call":
                if event.arguments:
                    item.fragments.append(event.arguments)
                if event.signature:
                    item.signature = event.signature
        elif isinstance(event, MessageStart):
            self._start(out, event)
        elif isinstance(event, PartStart):
            self._start(out)
            item = _Item(event.kind, signature=event.signature, provenance=event.provenance)
            self.parts[event.index] = item
            if event.kind == "text":
                if event.own_keys is not None:
                    phase = event.own_keys.get("phase")
                    item.phase = phase if type(phase) is str else None
                self._text_start(item, out)
            elif event.kind == "thinking":
                self._reasoning_start(item, out)
            elif event.kind == "redacted_thinking":
                item.signature = event.data
                self._reasoning_start(item, out)
            elif event.kind == "tool_call":
                item.call_id = event.id or f"call_{event.index}"
                item.name = event.name or ""
        elif isinstance(event, PartEnd):
            self._end_part(event.index, out)
        elif isinstance(event, MessageEnd):
            self._start(out)
            for index in sorted(self.parts):
                self._end_part(index, out)
            status, incomplete = status_of(event.stop_reason)
            body = self._snapshot(
                status,
                output=[o for o in self.output if o],
                usage=render_usage(event.usage),
                incomplete=incomplete,
                error=failed_error(event.stop_reason) if status == "failed" else None,
            )
            add_meta(body, event.withheld_tool_calls, event.stop_reason)
            out.append(self._event(f"response.{status}", {"response": body}))
            self.closed = True
        elif isinstance(event, StreamError):
            self._fail(stream_error_code(event.kind, event.message), event.message, out)
        return out

    def _fail(self, code: str, message: str, out: list[bytes]) -> None:
        self._start(out)
        body = self._snapshot(
            "failed", output=[o for o in self.output if o], error={"code": code, "message": message}
        )
        out.append(self._event("response.failed", {"response": body}))
        self.closed = True

    def finish(self) -> list[bytes]:
        """Closing frames: ``response.failed`` if the answer never ended, else none."""
        out: list[bytes] = []
        if not self.closed:
            self._fail("server_error", "stream ended before the answer was complete", out)
        return out


def _object(raw: str) -> dict[str, Any]:
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}
