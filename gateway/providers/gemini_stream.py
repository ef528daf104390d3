"""Gemini ``streamGenerateContent?alt=sse`` -> internal stream events, and the assembler that
turns those events into one :class:`~gateway.schema.Response`.

Every SSE ``data:`` payload is a whole ``GenerateContentResponse`` fragment. The non-streaming
parser feeds the complete response through this same parser, so a streamed answer and a
non-streamed one become identical internal messages.

Part mapping (observed in ``tests/fixtures/gemini/``):

* ``{"text"}`` -> text deltas; consecutive text chunks extend one open text part.
* ``{"text", "thought": true}`` -> thinking deltas with provenance ``gemini``; a
  ``thoughtSignature`` on a thought part is the thinking part's signature (a second signature
  starts a new thinking part).
* A ``thoughtSignature`` on a non-thought text part (Gemini 3 sends it on the last text part
  or on a trailing ``{"text": ""}``) becomes an *empty* signed thinking part right after the
  text, so the signature reaches the client and comes back; the request builder puts it back
  on the text part.
* ``{"functionCall": {"name", "args", "id"?}}`` arrives whole: ``PartStart``, one
  ``PartDelta`` with the whole arguments JSON, ``PartEnd``. A ``thoughtSignature`` on it is
  the tool call's signature.
* Vertex "streamFunctionCallArguments": ``{"functionCall": {"name", "willContinue": true}}``
  then ``partialArgs`` (``jsonPath`` + ``stringValue``/``numberValue``/``boolValue``/
  ``nullValue``, strings continued while ``willContinue``) until a ``functionCall`` without
  ``willContinue`` (or until another part or call starts). The arguments are assembled and
  emitted as one call when it completes; a call still open when the candidate stops for any
  reason but ``STOP`` (or when the stream closes) is emitted with its JSON left unclosed, so
  the truncation guard sees its arguments as incomplete.
* Usage comes from the last ``usageMetadata`` seen; ``MessageEnd`` is emitted by
  :meth:`GeminiStreamParser.finish`, which raises :class:`UpstreamProtocolError` when no
  ``finishReason`` arrived (a cut-off stream).
"""

from __future__ import annotations

import itertools
import re
from typing import Any

import orjson

from gateway.errors import UpstreamError, UpstreamProtocolError
from gateway.providers import wire_common
from gateway.providers.gemini_common import call_id, map_stop_reason, provenance, response_id, usage_from
from gateway.providers.wire import CallContext
from gateway.schema import (
    AssistantMessage,
    MessageEnd,
    MessageStart,
    PartDelta,
    PartEnd,
    PartStart,
    Response,
    StopReason,
    StreamError,
    StreamEvent,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    Usage,
)

_PATH_TOKEN = re.compile(r"\.([A-Za-z_$][\w$-]*)|\[(\d+)\]|\[['\"](.*?)['\"]\]")


def _json_path(path: str) -> list[str | int]:
    """``$.a.b[0]['c d']`` -> ``["a", "b", 0, "c d"]``."""
    out: list[str | int] = []
    rest = path[1:] if path.startswith("$") else path
    pos = 0
    while pos < len(rest):
        m = _PATH_TOKEN.match(rest, pos)
        if m is None:
            raise UpstreamProtocolError(f"Gemini partialArgs: unreadable jsonPath {path!r}")
        if m.group(1) is not None:
            out.append(m.group(1))
        elif m.group(2) is not None:
            out.append(int(m.group(2)))
        else:
            out.append(m.group(3))
        pos = m.end()
    return out


class _PartialCall:
    """A function call whose arguments arrive as ``partialArgs`` pieces."""

    def __init__(self, name: str, id_: str | None, signature: str | None) -> None:
        self.name = name
        self.id = id_
        self.signature = signature
        self.args: dict[str, Any] = {}
        self.open_string: list[str | int] | None = None

    def apply(self, piece: dict[str, Any]) -> None:
        path = _json_path(str(piece.get("jsonPath", "$")))
        if not path:
            return
        if "stringValue" in piece:
            value: Any = piece["stringValue"]
            if self.open_string == path:
                value = self._get(path) + value
        elif "numberValue" in piece:
            value = piece["numberValue"]
        elif "boolValue" in piece:
            value = piece["boolValue"]
        elif "nullValue" in piece:
            value = None
        else:
            return
        self._set(path, value)
        self.open_string = path if ("stringValue" in piece and piece.get("willContinue")) else None

    def _get(self, path: list[str | int]) -> str:
        node: Any = self.args
        for key in path:
            node = node[key]
        return node if isinstance(node, str) else ""

    def _set(self, path: list[str | int], value: Any) -> None:
        try:
            node: Any = self.args
            for key, nxt in itertools.pairwise(path):
                child: Any = [] if isinstance(nxt, int) else {}
                if isinstance(key, int):
                    while len(node) <= key:
                        node.append(None)
                elif key not in node:
                    node[key] = None
                if node[key] is None:
                    node[key] = child
                node = node[key]
            last = path[-1]
            if isinstance(last, int):
                while len(node) <= last:
                    node.append(None)
            node[last] = value
        except (TypeError, KeyError, IndexError, AttributeError) as err:
            raise UpstreamProtocolError(f"Gemini partialArgs: conflicting jsonPath {path!r}") from err


class GeminiStreamParser:
    """Incremental Gemini stream conversion (implements ``gateway.providers.wire.StreamParser``).

    ``feed(event, data)`` takes one SSE ``data:`` payload; ``feed_obj(obj)`` an already
    decoded chunk (used by the non-streaming parser and by tests).
    """

    def __init__(self, ctx: CallContext) -> None:
        self.ctx = ctx
        self.prov = provenance(ctx.deployment)
        self.started = False
        self.ended = False
        self.id = ""
        self.model = ctx.deployment.model
        self.next_index = 0
        self.open_kind: str | None = None
        self.open_index = -1
        self.open_signed = False
        self.pending: _PartialCall | None = None
        self.calls = 0
        self.raw_finish: str | None = None
        self.stop: StopReason | None = None
        self.usage = Usage()

    # ------------------------------------------------------------------ entry points

    def feed(self, event: str | None, data: bytes) -> list[StreamEvent]:
        """One SSE payload -> internal events. Raises :class:`UpstreamProtocolError` on bytes
        that are not JSON."""
        data = data.strip()
        if not data or data == b"[DONE]" or self.ended:
            return []
        try:
            obj = orjson.loads(data)
        except orjson.JSONDecodeError as err:
            raise UpstreamProtocolError(
                f"Gemini stream chunk is not JSON: {err}", body=data[:500].decode("utf-8", "replace")
            ) from err
        return self.feed_obj(obj)

    def feed_obj(self, obj: Any) -> list[StreamEvent]:
        """One decoded ``GenerateContentResponse`` (or a list of them) -> internal events."""
        if isinstance(obj, list):
            out: list[StreamEvent] = []
            for item in obj:
                out.extend(self.feed_obj(item))
            return out
        if not isinstance(obj, dict):
            raise UpstreamProtocolError(f"Gemini chunk is not an object: {type(obj).__name__}")
        events: list[StreamEvent] = []
        if isinstance(obj.get("error"), dict):
            err = obj["error"]
            status = int(err.get("code") or 502)
            kind = UpstreamError("", status=status).kind
            self.ended = True
            self._close(events)
            events.append(StreamError(kind=kind, message=str(err.get("message") or err), status=status))
            return events
        if not self.started:
            self.started = True
            self.id = response_id(obj)
            self.model = str(obj.get("modelVersion") or self.model)
            events.append(MessageStart(id=self.id, model=self.model))
        if obj.get("usageMetadata"):
            self.usage = usage_from(obj["usageMetadata"])
        candidates = obj.get("candidates") or []
        if not candidates:
            block = (obj.get("promptFeedback") or {}).get("blockReason")
            if block:
                self._close(events)
                self.raw_finish, self.stop = f"blocked:{block}", "content_filter"
            return events
        cand = next((c for c in candidates if c.get("index", 0) == 0), candidates[0])
        for part in (cand.get("content") or {}).get("parts") or []:
            self._part(part, events)
        if cand.get("finishReason"):
            self.raw_finish = str(cand["finishReason"])
            self.stop = map_stop_reason(self.raw_finish)
            self._complete_pending(events, truncated=self.stop != "stop")
            self._close(events)
        return events

    def finish(self) -> list[StreamEvent]:
        """The upstream closed the stream: close open parts, emit ``MessageEnd``.

        Raises :class:`UpstreamProtocolError` when no ``finishReason`` was seen."""
        if self.ended:
            return []
        if self.stop is None:
            raise UpstreamProtocolError(
                "Gemini stream ended before a finishReason (cut-off stream)",
                deployment=self.ctx.deployment.name,
            )
        events: list[StreamEvent] = []
        self._complete_pending(events, truncated=True)
        self._close(events)
        self.ended = True
        stop: StopReason = self.stop
        if stop == "stop" and self.calls:
            stop = "tool_use"
        events.append(MessageEnd(stop_reason=stop, usage=self.usage))
        return events

    # ------------------------------------------------------------------ parts

    def _close(self, events: list[StreamEvent]) -> None:
        if self.open_kind is not None:
            events.append(PartEnd(index=self.open_index))
            self.open_kind = None

    def _open(self, kind: str, events: list[StreamEvent]) -> int:
        self._close(events)
        index = self.next_index
        self.next_index += 1
        if kind == "thinking":
            events.append(PartStart(index=index, kind="thinking", provenance=self.prov))
        else:
            events.append(PartStart(index=index, kind="text"))
        self.open_kind, self.open_index, self.open_signed = kind, index, False
        return index

    def _part(self, part: dict[str, Any], events: list[StreamEvent]) -> None:
        signature = part.get("thoughtSignature")
        if "functionCall" in part:
            self._function_call(part["functionCall"] or {}, signature, events)
            return
        if self.pending is not None:  # the model moved on: the call is complete
            self._complete_pending(events, truncated=False)
        if "text" not in part:
            return  # inlineData/executableCode/...: never requested by this gateway.
        text = str(part.get("text") or "")
        if part.get("thought"):
            if self.open_kind != "thinking" or self.open_signed:
                if not text and not signature:
                    return
                self._open("thinking", events)
            if text:
                events.append(PartDelta(index=self.open_index, text=text))
            if signature:
                events.append(PartDelta(index=self.open_index, signature=signature))
                self.open_signed = True
            return
        if text:
            if self.open_kind != "text":
                self._open("text", events)
            events.append(PartDelta(index=self.open_index, text=text))
        if signature:
            index = self._open("thinking", events)
            events.append(PartDelta(index=index, signature=signature))
            self._close(events)

    def _function_call(self, fc: dict[str, Any], signature: str | None, events: list[StreamEvent]) -> None:
        name = fc.get("name")
        if name and self.pending is not None:  # a new call starts: the previous one is complete
            self._complete_pending(events, truncated=False)
        if self.pending is None:
            if not name:
                return  # a bare {} / {"willContinue": true} separator
            if "args" in fc or not (fc.get("willContinue") or fc.get("partialArgs")):
                self._emit_call(str(name), fc.get("id"), fc.get("args") or {}, signature, None, events)
                return
            self._close(events)
            self.pending = _PartialCall(str(name), fc.get("id"), signature)
        elif signature and not self.pending.signature:
            self.pending.signature = signature
        for piece in fc.get("partialArgs") or []:
            self.pending.apply(piece)
        if not fc.get("willContinue"):
            self._complete_pending(events, truncated=False)

    def _complete_pending(self, events: list[StreamEvent], *, truncated: bool) -> None:
        call = self.pending
        if call is None:
            return
        self.pending = None
        raw = orjson.dumps(call.args).decode()
        if truncated:
            raw = raw[:-1]  # never received its end: leave the JSON unclosed on purpose
        self._emit_call(call.name, call.id, call.args, call.signature, raw, events)

    def _emit_call(
        self,
        upstream_name: str,
        upstream_id: Any,
        args: Any,
        signature: str | None,
        raw: str | None,
        events: list[StreamEvent],
    ) -> None:
        self._close(events)
        if raw is None:
            raw = wire_common.dumps_arguments(args)
        ordinal = self.calls
        self.calls += 1
        if upstream_id:
            cid = self.ctx.names.from_upstream_id(str(upstream_id))
        else:
            cid = call_id(self.id, ordinal, upstream_name, raw)
        index = self.next_index
        self.next_index += 1
        events.append(
            PartStart(
                index=index,
                kind="tool_call",
                id=cid,
                name=self.ctx.names.from_upstream_name(upstream_name),
                signature=signature,
                provenance=self.prov if signature else None,
            )
        )
        events.append(PartDelta(index=index, arguments=raw))
        events.append(PartEnd(index=index))


def assemble(events: list[StreamEvent], *, fallback_id: str = "", fallback_model: str = "") -> Response:
    """Fold a complete list of internal stream events into a :class:`Response`.

    Tool-call ``arguments`` is the parsed raw JSON when it is a JSON object, else ``{}`` (the
    raw string is kept either way). Raises :class:`UpstreamProtocolError` if the events carry a
    ``StreamError`` or no ``MessageEnd``."""
    rid, model = fallback_id, fallback_model
    parts: dict[int, TextPart | ThinkingPart | ToolCallPart] = {}
    end: MessageEnd | None = None
    for ev in events:
        if isinstance(ev, MessageStart):
            rid, model = ev.id, ev.model
        elif isinstance(ev, PartStart):
            if ev.kind == "text":
                parts[ev.index] = TextPart(text="")
            elif ev.kind == "thinking":
                parts[ev.index] = ThinkingPart(text="", signature=ev.signature, provenance=ev.provenance)
            elif ev.kind == "tool_call":
                parts[ev.index] = ToolCallPart(
                    id=ev.id or "",
                    name=ev.name or "",
                    raw_arguments="",
                    signature=ev.signature,
                    provenance=ev.provenance,
                )
        elif isinstance(ev, PartDelta):
            part = parts[ev.index]
            if isinstance(part, ToolCallPart):
                part.raw_arguments += ev.arguments or ""
            elif isinstance(part, ThinkingPart):
                part.text += ev.text or ""
                if ev.signature:
                    part.signature = (part.signature or "") + ev.signature
            else:
                part.text += ev.text or ""
        elif isinstance(ev, PartEnd):
            part = parts[ev.index]
            if isinstance(part, ToolCallPart):
                try:
                    parsed = orjson.loads(part.raw_arguments)
                except orjson.JSONDecodeError:
                    parsed = None
                part.arguments = parsed if isinstance(parsed, dict) else {}
        elif isinstance(ev, MessageEnd):
            end = ev
        elif isinstance(ev, StreamError):
            raise UpstreamProtocolError(f"Gemini error in response: {ev.message}")
    if end is None:
        raise UpstreamProtocolError("Gemini response has no finishReason")
    message = AssistantMessage(content=[parts[i] for i in sorted(parts)])
    return Response(id=rid, model=model, message=message, stop_reason=end.stop_reason, usage=end.usage)
