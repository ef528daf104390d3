"""Internal stream events -> OpenAI ``chat.completion.chunk`` SSE frames.

Reference: https://platform.openai.com/docs/api-reference/chat-streaming. Rules this renderer
keeps (handed cases C10, C15):

* the first chunk carries ``delta.role = "assistant"``; text goes in ``delta.content``,
  thinking text in ``delta.reasoning_content``; when a thinking (or redacted-thinking) part
  ends, one chunk carries it whole, with its signature, as ``delta.reasoning_details``
  ([one entry], :func:`gateway.edges.openai_chat_render.reasoning_detail`; the ``openai``
  SDK's stream helper merges list entries by ``index``, so the text is not doubled there);
* a tool call's ``index`` is its ordinal among the tool calls of the answer (0, 1, ...), never
  the internal content-part index (which may have gaps where the gateway withheld a call);
  its first delta has ``id``, ``type``, ``function.name`` and ``arguments: ""``, the following
  deltas only ``function.arguments`` fragments;
* tool calls are emitted when their part ends (the pipeline holds them until the stop
  reason is known anyway), so a signature that arrives late can still be wrapped into the id;
* with ``stream_options.include_usage`` every chunk has ``"usage": null`` and one extra chunk
  with ``choices: []`` and the usage follows the ``finish_reason`` chunk; without it, no usage;
* ``finish()`` always ends with ``data: [DONE]``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import orjson

from gateway.edges._common import sse
from gateway.edges._frames import MARKER, Template, template
from gateway.edges.openai_chat_render import (
    completion_id,
    custom_tool_names,
    error_body,
    finish_reason,
    reasoning_detail,
    render_usage,
    tool_call_entry,
    turnstile_meta,
)
from gateway.edges.signatures import wrap_tool_call_id
from gateway.schema import (
    MessageEnd,
    MessageStart,
    PartDelta,
    PartEnd,
    PartStart,
    Provenance,
    RedactedThinkingPart,
    Request,
    StreamError,
    StreamEvent,
    ThinkingPart,
)

DONE = b"data: [DONE]\n\n"


def ping_frame() -> bytes:
    """An SSE comment line, ignored by OpenAI clients; keeps idle connections open."""
    return b": ping\n\n"


def tool_progress_frame(name: str, is_error: bool = False) -> bytes:
    """Progress of the gateway's server-side tool loop: an SSE comment line
    (``: turnstile tool <name> done``), which OpenAI clients ignore."""
    return f": turnstile tool {name} done{' (error)' if is_error else ''}\n\n".encode()


_TEXT_FIELDS = {"text": "content", "thinking": "reasoning_content"}
"""Part kind -> the chunk's delta field for its text."""


@dataclass
class _ToolCall:
    id: str
    name: str
    signature: str | None = None
    provenance: Provenance | None = None
    fragments: list[str] = field(default_factory=list)


@dataclass
class _Thought:
    """A thinking (or redacted-thinking) part being streamed: its text so far, signature and
    provenance (for its ``reasoning_details`` entry at its end)."""

    redacted: bool
    provenance: Provenance | None
    signature: str | None = None
    data: str = ""
    texts: list[str] = field(default_factory=list)


class StreamRenderer:
    """Renders one streamed answer for an OpenAI client.

    ``render(event)`` returns the complete SSE frames (bytes) the event produces;
    ``finish()`` the closing frames (an error frame if the stream ended without a
    ``MessageEnd`` or ``StreamError``, then ``data: [DONE]``). ``closed`` is True once a
    ``MessageEnd`` or ``StreamError`` was rendered (the frames that end the answer).
    """

    def __init__(self, request: Request) -> None:
        self._delta_frames: dict[str, Template] = {}
        self.request = request
        self.custom: frozenset[str] | None = None  # the client's custom tools, on the first call
        self.include_usage = request.include_usage
        self.id = completion_id("turnstile")
        self.model = request.model
        self.created = int(time.time())
        self.started = False
        self.closed = False
        self.kinds: dict[int, str] = {}
        self.pending: dict[int, _ToolCall] = {}
        self.n_tool_calls = 0
        self.thoughts: dict[int, _Thought] = {}
        self.n_details = 0

    # The chunk fields are properties so that the frame templates of text deltas
    # (:meth:`_text_delta`) are made again whenever one of them changes.

    @property
    def id(self) -> str:
        """The ``id`` of every chunk (``chatcmpl-...``)."""
        return self._id

    @id.setter
    def id(self, value: str) -> None:
        self._id = value
        self._delta_frames = {}

    @property
    def model(self) -> str:
        """The ``model`` of every chunk."""
        return self._model

    @model.setter
    def model(self, value: str) -> None:
        self._model = value
        self._delta_frames = {}

    @property
    def created(self) -> int:
        """The ``created`` time of every chunk (Unix seconds)."""
        return self._created

    @created.setter
    def created(self, value: int) -> None:
        self._created = value
        self._delta_frames = {}

    @property
    def include_usage(self) -> bool:
        """Whether every chunk carries ``"usage": null`` and a usage chunk ends the answer."""
        return self._include_usage

    @include_usage.setter
    def include_usage(self, value: bool) -> None:
        self._include_usage = value
        self._delta_frames = {}

    # ------------------------------------------------------------------ frames

    def _chunk(self, delta: dict[str, Any], finish: str | None = None, **extra: Any) -> bytes:
        body: dict[str, Any] = {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }
        if self.include_usage:
            body["usage"] = None
        body.update(extra)
        return sse(body)

    def _text_delta(self, field: str, text: str) -> bytes:
        """``self._chunk({field: text})``, byte for byte, from a template made once per field
        (the frame around the JSON string of ``text``)."""
        frame = self._delta_frames.get(field)
        if frame is None:
            frame = self._delta_frames[field] = template(self._chunk({field: MARKER}))
        if not frame:  # the marker also occurs elsewhere in the frame: no template
            return self._chunk({field: text})
        return frame[0] + orjson.dumps(text) + frame[1]

    def _start(self, out: list[bytes]) -> None:
        if not self.started:
            self.started = True
            out.append(self._chunk({"role": "assistant", "content": ""}))

    def _flush_tool_call(self, call: _ToolCall, out: list[bytes]) -> None:
        k = self.n_tool_calls
        self.n_tool_calls += 1
        cid = (
            call.id if call.signature is None else wrap_tool_call_id(call.id, call.signature, call.provenance)
        )
        if self.custom is None:
            self.custom = custom_tool_names(self.request) if self.request.tools else frozenset()
        if call.name in self.custom:  # a custom tool's call: whole, with its free-form input
            entry = tool_call_entry(cid, call.name, "".join(call.fragments), True)
            out.append(self._chunk({"tool_calls": [{"index": k, **entry}]}))
            return
        head = {"index": k, "id": cid, "type": "function", "function": {"name": call.name, "arguments": ""}}
        out.append(self._chunk({"tool_calls": [head]}))
        fragments = [f for f in call.fragments if f] or ["{}"]
        for frag in fragments:
            out.append(self._chunk({"tool_calls": [{"index": k, "function": {"arguments": frag}}]}))

    def _flush_thought(self, thought: _Thought, out: list[bytes]) -> None:
        """The ``reasoning_details`` chunk of a finished thinking part (none for a thinking part
        with neither text nor signature)."""
        part: ThinkingPart | RedactedThinkingPart
        if thought.redacted:
            if not thought.data:
                return
            part = RedactedThinkingPart(data=thought.data, provenance=thought.provenance)
        else:
            text = "".join(thought.texts)
            if not text and not thought.signature:
                return
            part = ThinkingPart(text=text, signature=thought.signature, provenance=thought.provenance)
        out.append(self._chunk({"reasoning_details": [reasoning_detail(part, self.n_details)]}))
        self.n_details += 1

    def _flush_all(self, out: list[bytes]) -> None:
        for index in sorted(self.thoughts):
            self._flush_thought(self.thoughts.pop(index), out)
        for index in sorted(self.pending):
            self._flush_tool_call(self.pending.pop(index), out)

    def tool_progress(self, name: str, is_error: bool = False) -> bytes:
        """Progress of the server-side tool loop in this stream: :func:`tool_progress_frame`."""
        return tool_progress_frame(name, is_error)

    def ping(self) -> bytes:
        """A keep-alive while the gateway's tools run: :func:`ping_frame`."""
        return ping_frame()

    # ------------------------------------------------------------------ events

    def render(self, event: StreamEvent) -> list[bytes]:
        """The SSE frames for one internal event (possibly none)."""
        if type(event) is PartDelta and self.started and not self.closed and event.text:
            # The most frequent event: text or thinking of a started answer, from a template.
            field = _TEXT_FIELDS.get(self.kinds.get(event.index, ""))
            if field is not None:
                frame = self._delta_frames.get(field)
                if frame:
                    if field == "reasoning_content":
                        thought = self.thoughts.get(event.index)
                        if thought is not None:
                            thought.texts.append(event.text)
                    return [frame[0] + orjson.dumps(event.text) + frame[1]]
        out: list[bytes] = []
        if self.closed:
            return out
        if isinstance(event, PartDelta):
            self._start(out)
            self._delta(event, out)
        elif isinstance(event, MessageStart):
            self.id = completion_id(event.id)
            self.model = event.model or self.model
            self._start(out)
        elif isinstance(event, PartStart):
            self._start(out)
            self.kinds[event.index] = event.kind
            if event.kind == "tool_call":
                self.pending[event.index] = _ToolCall(
                    id=event.id or f"call_{event.index}",
                    name=event.name or "",
                    signature=event.signature,
                    provenance=event.provenance,
                )
            elif event.kind in ("thinking", "redacted_thinking"):
                self.thoughts[event.index] = _Thought(
                    redacted=event.kind == "redacted_thinking",
                    provenance=event.provenance,
                    signature=event.signature,
                    data=event.data or "",
                )
        elif isinstance(event, PartEnd):
            call = self.pending.pop(event.index, None)
            if call is not None:
                self._flush_tool_call(call, out)
            thought = self.thoughts.pop(event.index, None)
            if thought is not None:
                self._flush_thought(thought, out)
        elif isinstance(event, MessageEnd):
            self._start(out)
            self._flush_all(out)
            extra: dict[str, Any] = {}
            meta = turnstile_meta(event.withheld_tool_calls, event.stop_reason)
            if meta:
                extra["turnstile"] = meta
            out.append(self._chunk({}, finish_reason(event.stop_reason), **extra))
            if self.include_usage:
                out.append(
                    sse(
                        {
                            "id": self.id,
                            "object": "chat.completion.chunk",
                            "created": self.created,
                            "model": self.model,
                            "choices": [],
                            "usage": render_usage(event.usage),
                        }
                    )
                )
            self.closed = True
        elif isinstance(event, StreamError):
            out.append(sse(error_body(event.kind, event.message)))
            self.closed = True
        return out

    def _delta(self, event: PartDelta, out: list[bytes]) -> None:
        kind = self.kinds.get(event.index)
        if kind is None:  # a delta without its start: infer what we can
            kind = "text" if event.text is not None else "unknown"
            self.kinds[event.index] = kind
        if kind == "tool_call":
            call = self.pending.get(event.index)
            if call is not None:
                if event.arguments:
                    call.fragments.append(event.arguments)
                if event.signature:
                    call.signature = event.signature
            return
        thought = self.thoughts.get(event.index)
        if thought is not None:
            if event.signature:
                thought.signature = (thought.signature or "") + event.signature
            if event.text:
                thought.texts.append(event.text)
        if kind in _TEXT_FIELDS and event.text:
            out.append(self._text_delta(_TEXT_FIELDS[kind], event.text))

    def finish(self) -> list[bytes]:
        """Closing frames: an error frame if the answer never ended, then ``data: [DONE]``."""
        out: list[bytes] = []
        if not self.closed:
            out.append(sse(error_body("upstream", "stream ended before the answer was complete")))
            self.closed = True
        out.append(DONE)
        return out
