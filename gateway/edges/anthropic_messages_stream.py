"""Internal stream events -> Anthropic Messages SSE (``event: X\\ndata: {...}\\n\\n``).

Reference: https://docs.anthropic.com/en/docs/build-with-claude/streaming. Rules this renderer
keeps (handed cases C12, C13):

* ``message_start`` first (usage from ``MessageStart.usage`` or zeros), ``message_delta``
  (``stop_reason``, ``stop_sequence``, cumulative ``usage``) and ``message_stop`` last;
* content blocks are numbered by the order they are rendered (0, 1, 2, ... without gaps),
  independent of internal part indexes (which may have gaps where a call was withheld);
  exactly one block is open at a time: a part that starts while another is open closes it;
* text and thinking stream as they come (``text_delta``, ``thinking_delta``); a thinking
  signature is sent as one ``signature_delta`` (wrapped with its provenance) before the
  block stops; redacted thinking is a start/stop pair;
* tool calls are rendered when their part ends (the pipeline holds them until the stop
  reason is known): ``content_block_start`` tool_use with ``input: {}``, one
  ``input_json_delta`` per argument fragment (``"{}"`` when there was none), then stop;
* a ``StreamError`` becomes ``event: error``; no ``message_stop`` follows it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from gateway.edges._common import sse
from gateway.edges._frames import MARKER, Template, template
from gateway.edges.anthropic_messages_render import (
    answer_id,
    client_signature,
    client_tool_use_id,
    error_body,
    render_usage,
    stop_reason,
    turnstile_meta,
)
from gateway.edges.signatures import wrap_signature
from gateway.providers.anthropic_common import API
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
    Usage,
)


def ping_frame() -> bytes:
    """Anthropic's keep-alive event: ``event: ping`` / ``data: {"type": "ping"}``."""
    return sse({"type": "ping"}, "ping")


def tool_progress_frame(name: str, is_error: bool = False) -> bytes:
    """Progress of the gateway's server-side tool loop: an SSE comment line naming the tool,
    then Anthropic's ``ping`` event (both ignored by Anthropic clients)."""
    comment = f": turnstile tool {name} done{' (error)' if is_error else ''}\n".encode()
    return comment + ping_frame()


_DELTA_TYPES = {"text": "text_delta", "thinking": "thinking_delta"}
"""Part kind -> the ``content_block_delta`` type of its text."""


@dataclass
class _Part:
    kind: str
    id: str | None = None
    name: str | None = None
    signature: str | None = None
    provenance: Provenance | None = None
    fragments: list[str] = field(default_factory=list)
    data: str | None = None
    api: str | None = None
    cited: bool = False
    caller: dict[str, Any] | None = None
    toolset_name: str | None = None


class StreamRenderer:
    """Renders one streamed answer for an Anthropic client.

    ``render(event)`` returns the complete SSE frames (bytes) the event produces;
    ``finish()`` returns nothing after ``message_stop`` or an error, else an error event
    (the stream ended before the answer was complete). ``closed`` is True once a
    ``MessageEnd`` or ``StreamError`` was rendered (the frames that end the answer).
    """

    def __init__(self, request: Request) -> None:
        self.model = request.model
        self.request = request
        self.started = False
        self.closed = False
        self.parts: dict[int, _Part] = {}
        self.open_index: int | None = None  # internal index of the open block
        self.next_block = 0
        self._delta_frames: dict[tuple[int, str], Template] = {}

    # ------------------------------------------------------------------ frames

    def _start(self, out: list[bytes], event: MessageStart | None = None) -> None:
        if self.started:
            return
        self.started = True
        usage = render_usage(event.usage if event and event.usage else Usage())
        message: dict[str, Any] = {
            "id": answer_id(event.id if event else "turnstile", self.request),
            "type": "message",
            "role": "assistant",
            "model": (event.model if event and event.model else self.model),
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": usage,
        }
        out.append(sse({"type": "message_start", "message": message}, "message_start"))
        out.append(ping_frame())  # as Anthropic's API does right after message_start

    def _block_start(self, block: dict[str, Any], out: list[bytes]) -> int:
        n = self.next_block
        self.next_block += 1
        out.append(
            sse({"type": "content_block_start", "index": n, "content_block": block}, "content_block_start")
        )
        return n

    def _block_delta(self, n: int, delta: dict[str, Any], out: list[bytes]) -> None:
        out.append(self._delta_frame(n, delta))

    def _text_delta(self, n: int, dtype: str, field: str, text: str) -> bytes:
        """The ``content_block_delta`` frame of block ``n`` with ``{"type": dtype, field:
        text}``, byte for byte as :meth:`_block_delta` makes it, from a template made once per
        block and delta type (the frame around the JSON string of ``text``)."""
        key = (n, dtype)
        frame = self._delta_frames.get(key)
        if frame is None:
            frame = self._delta_frames[key] = template(self._delta_frame(n, {"type": dtype, field: MARKER}))
        if not frame:
            return self._delta_frame(n, {"type": dtype, field: text})
        return frame[0] + orjson.dumps(text) + frame[1]

    def _delta_frame(self, n: int, delta: dict[str, Any]) -> bytes:
        return sse({"type": "content_block_delta", "index": n, "delta": delta}, "content_block_delta")

    def _block_stop(self, n: int, out: list[bytes]) -> None:
        out.append(sse({"type": "content_block_stop", "index": n}, "content_block_stop"))

    def _close_open(self, out: list[bytes]) -> None:
        if self.open_index is None:
            return
        part = self.parts.get(self.open_index)
        n = self.next_block - 1
        if part is not None and part.kind == "thinking" and part.signature:
            sig = client_signature(part.signature, part.provenance)
            self._block_delta(n, {"type": "signature_delta", "signature": sig}, out)
            part.signature = None
        self._block_stop(n, out)
        self.open_index = None

    def _open(self, index: int, part: _Part, out: list[bytes]) -> int:
        """The block number of part ``index``, opening its block (closing another) if needed."""
        if self.open_index == index:
            return self.next_block - 1
        self._close_open(out)
        if part.kind == "thinking":
            block: dict[str, Any] = {"type": "thinking", "thinking": "", "signature": ""}
        elif part.cited:
            block = {"type": "text", "text": "", "citations": []}
        else:
            block = {"type": "text", "text": ""}
        self.open_index = index
        return self._block_start(block, out)

    def _tool_use(self, part: _Part, out: list[bytes]) -> None:
        self._close_open(out)
        block = {
            "type": "tool_use",
            "id": client_tool_use_id(part.id or "toolu_turnstile", part.signature, part.provenance),
            "name": part.name or "",
            "input": {},
        }
        if part.caller is not None:
            block["caller"] = part.caller
        if part.toolset_name is not None:
            block["toolset_name"] = part.toolset_name
        n = self._block_start(block, out)
        for frag in [f for f in part.fragments if f] or ["{}"]:
            self._block_delta(n, {"type": "input_json_delta", "partial_json": frag}, out)
        self._block_stop(n, out)

    def _native(self, part: _Part, out: list[bytes]) -> None:
        """A server tool block (``server_tool_use``, ``web_search_tool_result``...) as the
        upstream streamed it: its start block verbatim, its input fragments as
        ``input_json_delta``, its stop. Another wire API's native block is not rendered."""
        if part.api != API:
            return
        self._close_open(out)
        n = self._block_start(orjson.loads(part.data or "{}"), out)
        for frag in part.fragments:
            self._block_delta(n, {"type": "input_json_delta", "partial_json": frag}, out)
        self._block_stop(n, out)

    def tool_progress(self, name: str, is_error: bool = False) -> bytes:
        """Progress of the server-side tool loop in this stream: :func:`tool_progress_frame`."""
        return tool_progress_frame(name, is_error)

    def ping(self) -> bytes:
        """A keep-alive while the gateway's tools run: :func:`ping_frame`."""
        return ping_frame()

    # ------------------------------------------------------------------ events

    def render(self, event: StreamEvent) -> list[bytes]:
        """The SSE frames for one internal event (possibly none)."""
        if (
            type(event) is PartDelta
            and event.index == self.open_index
            and event.text
            and not event.signature
            and self.started
            and not self.closed
        ):  # the most frequent event: more text of the open block, from a template
            part = self.parts.get(event.index)
            dtype = _DELTA_TYPES.get(part.kind) if part is not None else None
            if dtype is not None:
                frame = self._delta_frames.get((self.next_block - 1, dtype))
                if frame:
                    return [frame[0] + orjson.dumps(event.text) + frame[1]]
        out: list[bytes] = []
        if self.closed:
            return out
        if isinstance(event, PartDelta):
            self._start(out)
            self._part_delta(event, out)
        elif isinstance(event, MessageStart):
            self._start(out, event)
        elif isinstance(event, StreamError):
            out.append(sse(error_body(event.kind, event.message), "error"))
            self.closed = True
        else:
            self._start(out)
            if isinstance(event, PartStart):
                self._part_start(event, out)
            elif isinstance(event, PartEnd):
                self._part_end(event.index, out)
            elif isinstance(event, MessageEnd):
                self._message_end(event, out)
        return out

    def _part_start(self, event: PartStart, out: list[bytes]) -> None:
        part = _Part(
            kind=event.kind,
            id=event.id,
            name=event.name,
            signature=event.signature,
            provenance=event.provenance,
            caller=event.caller,
            toolset_name=event.toolset_name,
        )
        self.parts[event.index] = part
        if event.kind == "native":
            part.data, part.api = event.data, event.api
        elif event.kind == "redacted_thinking":
            self._close_open(out)
            data = event.data or ""
            if event.provenance is not None:
                data = wrap_signature(data, event.provenance)
            n = self._block_start({"type": "redacted_thinking", "data": data}, out)
            self._block_stop(n, out)
        elif (
            event.kind != "tool_call"
            and event.kind != "native"
            and self.open_index is not None
            and self.open_index != event.index
        ):
            self._close_open(out)

    def _part_delta(self, event: PartDelta, out: list[bytes]) -> None:
        part = self.parts.get(event.index)
        if part is None:  # a delta without its start: infer what we can
            part = self.parts[event.index] = _Part(kind="text" if event.text is not None else "unknown")
        if part.kind == "tool_call" or part.kind == "native":
            if event.arguments:
                part.fragments.append(event.arguments)
            if event.signature:
                part.signature = event.signature
        elif part.kind == "text" and event.citation is not None:
            part.cited = True
            n = self._open(event.index, part, out)
            self._block_delta(n, {"type": "citations_delta", "citation": event.citation}, out)
        elif part.kind == "text" and event.text:
            n = self._open(event.index, part, out)
            out.append(self._text_delta(n, "text_delta", "text", event.text))
        elif part.kind == "thinking":
            if event.text:
                n = self._open(event.index, part, out)
                out.append(self._text_delta(n, "thinking_delta", "thinking", event.text))
            if event.signature:
                part.signature = (part.signature or "") + event.signature

    def _part_end(self, index: int, out: list[bytes]) -> None:
        part = self.parts.pop(index, None)
        if part is None:
            return
        if part.kind == "tool_call":
            self._tool_use(part, out)
        elif part.kind == "native":
            self._native(part, out)
        elif part.kind == "thinking" and part.signature and self.open_index != index:
            self.parts[index] = part  # a signed thinking block with no text: still render it
            self._open(index, part, out)
            self._close_open(out)
            self.parts.pop(index, None)
        elif self.open_index == index:
            self.parts[index] = part
            self._close_open(out)
            self.parts.pop(index, None)

    def _message_end(self, event: MessageEnd, out: list[bytes]) -> None:
        self._close_open(out)
        for index in sorted(self.parts):
            self._part_end(index, out)
        delta = {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason(event.stop_reason), "stop_sequence": None},
            "usage": render_usage(event.usage),
        }
        meta = turnstile_meta(event.usage, event.withheld_tool_calls, event.stop_reason)
        if meta:
            delta["turnstile"] = meta
        out.append(sse(delta, "message_delta"))
        out.append(sse({"type": "message_stop"}, "message_stop"))
        self.closed = True

    def finish(self) -> list[bytes]:
        """Closing frames: none after ``message_stop`` or an error, else an error event."""
        if self.closed:
            return []
        self.closed = True
        return [sse(error_body("upstream", "stream ended before the answer was complete"), "error")]
