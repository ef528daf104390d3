"""Internal stream events -> Gemini ``streamGenerateContent?alt=sse`` frames.

Reference: https://ai.google.dev/api/generate-content#method:-models.streamgeneratecontent and
the recorded streams under ``tests/fixtures/fantasy/.../TestGoogleCommon``. Every frame is
``data: <GenerateContentResponse>\\n\\n`` holding the next parts (incremental, never the text so
far), with ``modelVersion`` and ``responseId``:

* text and thought text stream as they come, one part per delta (``{"text"}``,
  ``{"text", "thought": true}``); a thinking signature goes out when its part ends, as
  ``{"text": "", "thought": true, "thoughtSignature"}``, or, for the empty signed part that
  follows text, as ``{"text": "", "thoughtSignature"}`` (what Gemini sends);
* a tool call is one ``functionCall`` part sent when its part ends (the pipeline holds calls
  until the stop reason is known, so a call the truncation guard withholds is never sent);
* the last frame has ``finishReason``, ``usageMetadata`` (only there) and an empty text part,
  as Gemini's last chunk has, plus the ``"turnstile"`` object when there is something to say;
* an error after the stream started is a last frame ``{"error": {"code", "message",
  "status"}}``: Gemini's own shape for an error inside a stream, which the google-genai SDKs
  raise as ``APIError`` (python ``_api_client``: a chunk starting with ``{"error":``). An error
  before the first byte is an HTTP error (the server answers it before any frame).

Keep-alive: the google-genai SDKs read every non-empty line that is not ``data:`` as JSON,
and the JS SDK's line pattern stalls on anything but ``data:`` frames, so an SSE comment would
break them; :func:`ping_frame` is an empty ``data: {}`` frame instead.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from gateway.edges._common import sse
from gateway.edges._frames import MARKER, Template, template
from gateway.edges.gemini_render import (
    call_arguments,
    error_body,
    finish_reason,
    function_call,
    render_usage,
    turnstile_meta,
)
from gateway.edges.signatures import wrap_b64_signature
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
)

_KEEPALIVE = sse({})


def ping_frame() -> bytes:
    """A keep-alive frame the SDKs read as an empty chunk: ``data: {}`` (no ``candidates`` key:
    the python SDK's stream reads ``candidates[0]`` of a chunk whose list is there, even empty;
    Gemini CLI skips a chunk without candidates)."""
    return _KEEPALIVE


def tool_progress_frame(name: str, is_error: bool = False) -> bytes:
    """Progress of the gateway's server-side tool loop: an empty chunk, as :func:`ping_frame`
    (Gemini clients have no place for a comment)."""
    return _KEEPALIVE


@dataclass
class _Part:
    kind: str
    id: str | None = None
    name: str | None = None
    signature: str | None = None
    provenance: Provenance | None = None
    data: str | None = None
    fragments: list[str] = field(default_factory=list)
    has_text: bool = False


class StreamRenderer:
    """Renders one streamed answer for a Gemini client.

    ``render(event)`` returns the complete SSE frames (bytes) the event produces; ``finish()``
    returns nothing after the last frame or an error, else an error frame (the stream ended
    before the answer was complete). ``closed`` is True once a ``MessageEnd`` or
    ``StreamError`` was rendered.
    """

    def __init__(self, request: Request) -> None:
        self.model = request.model
        self.id = ""
        self.closed = False
        self.parts: dict[int, _Part] = {}
        self.last_text = False  # the last part sent was plain text
        self._text: dict[bool, Template] = {}

    def _frame(self, parts: list[dict[str, Any]], **extra: Any) -> bytes:
        cand: dict[str, Any] = {"content": {"role": "model", "parts": parts}}
        cand.update(extra)
        cand["index"] = 0
        return sse({"candidates": [cand], "modelVersion": self.model, "responseId": self.id})

    def _text_frame(self, text: str, thought: bool) -> bytes:
        """A frame with one text (or thought) part, from a template made once per kind."""
        tpl = self._text.get(thought)
        if tpl is None:
            part: dict[str, Any] = {"text": MARKER, "thought": True} if thought else {"text": MARKER}
            tpl = self._text[thought] = template(self._frame([part]))
        if not tpl:
            return self._frame([{"text": text, "thought": True} if thought else {"text": text}])
        return tpl[0] + orjson.dumps(text) + tpl[1]

    def tool_progress(self, name: str, is_error: bool = False) -> bytes:
        """Progress of the server-side tool loop in this stream: :func:`tool_progress_frame`."""
        return tool_progress_frame(name, is_error)

    def ping(self) -> bytes:
        """A keep-alive while the gateway's tools run: :func:`ping_frame`."""
        return ping_frame()

    def render(self, event: StreamEvent) -> list[bytes]:
        """The SSE frames for one internal event (possibly none)."""
        if self.closed:
            return []
        if type(event) is PartDelta:
            return self._delta(event)
        if type(event) is PartStart:
            return self._start(event)
        if type(event) is PartEnd:
            return self._end(event.index)
        if type(event) is MessageStart:
            self.id = event.id
            if event.model:
                self.model = event.model
            self._text.clear()
            return []
        if type(event) is MessageEnd:
            return self._message_end(event)
        if type(event) is StreamError:
            self.closed = True
            return [sse(error_body(event.kind, event.message, event.status))]
        return []

    def _start(self, event: PartStart) -> list[bytes]:
        part = _Part(
            kind=event.kind,
            id=event.id,
            name=event.name,
            signature=event.signature,
            provenance=event.provenance,
            data=event.data,
        )
        if event.kind == "redacted_thinking":
            self.last_text = False
            sig = wrap_b64_signature(event.data or "", event.provenance, redacted=True)
            return [self._frame([{"text": "", "thought": True, "thoughtSignature": sig}])]
        self.parts[event.index] = part
        return []

    def _delta(self, event: PartDelta) -> list[bytes]:
        part = self.parts.get(event.index)
        if part is None:  # a delta without its start: infer what we can
            part = self.parts[event.index] = _Part(kind="text" if event.text is not None else "unknown")
        if part.kind == "tool_call":
            if event.arguments:
                part.fragments.append(event.arguments)
            if event.signature:
                part.signature = event.signature
            return []
        if part.kind == "thinking":
            if event.signature:
                part.signature = (part.signature or "") + event.signature
            if event.text:
                part.has_text = True
                self.last_text = False
                return [self._text_frame(event.text, True)]
            return []
        if part.kind == "text" and event.text:
            self.last_text = True
            return [self._text_frame(event.text, False)]
        return []

    def _end(self, index: int) -> list[bytes]:
        part = self.parts.pop(index, None)
        if part is None:
            return []
        if part.kind == "tool_call":
            self.last_text = False
            args = call_arguments("".join(part.fragments))
            fc = function_call(part.id or "", part.name or "", args, part.signature, part.provenance)
            return [self._frame([fc])]
        if part.kind == "thinking" and part.signature:
            sig = wrap_b64_signature(part.signature, part.provenance)
            on_text = self.last_text and not part.has_text
            self.last_text = False
            out: dict[str, Any] = (
                {"text": "", "thoughtSignature": sig}
                if on_text
                else {
                    "text": "",
                    "thought": True,
                    "thoughtSignature": sig,
                }
            )
            return [self._frame([out])]
        return []

    def _message_end(self, event: MessageEnd) -> list[bytes]:
        frames: list[bytes] = []
        for index in sorted(self.parts):
            frames += self._end(index)
        cand: dict[str, Any] = {
            "content": {"role": "model", "parts": [{"text": ""}]},
            "finishReason": finish_reason(event.stop_reason),
            "index": 0,
        }
        body: dict[str, Any] = {
            "candidates": [cand],
            "usageMetadata": render_usage(event.usage),
            "modelVersion": self.model,
            "responseId": self.id,
        }
        meta = turnstile_meta(event.usage, event.withheld_tool_calls, event.stop_reason)
        if meta:
            body["turnstile"] = meta
        frames.append(sse(body))
        self.closed = True
        return frames

    def finish(self) -> list[bytes]:
        """Closing frames: none after the last frame or an error, else an error frame."""
        if self.closed:
            return []
        self.closed = True
        return [sse(error_body("upstream", "stream ended before the answer was complete", 502))]
