"""Build a :class:`Response` from a complete internal stream of events."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import orjson

from gateway.errors import UpstreamError, UpstreamProtocolError
from gateway.schema import (
    AssistantMessage,
    AssistantPart,
    MessageEnd,
    MessageStart,
    NativePart,
    OwnKeys,
    PartDelta,
    PartStart,
    RedactedThinkingPart,
    Response,
    StreamError,
    StreamEvent,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    Usage,
)


@dataclass
class _Builder:
    start: PartStart
    text: list[str] = field(default_factory=list)
    arguments: list[str] = field(default_factory=list)
    signature: list[str] = field(default_factory=list)
    citations: list[dict[str, Any]] = field(default_factory=list)

    def add(self, delta: PartDelta) -> None:
        if delta.text:
            self.text.append(delta.text)
        if delta.arguments:
            self.arguments.append(delta.arguments)
        if delta.signature:
            self.signature.append(delta.signature)
        if delta.citation is not None:
            self.citations.append(delta.citation)

    def _signature(self) -> str | None:
        sig = (self.start.signature or "") + "".join(self.signature)
        return sig or None

    def build(self) -> AssistantPart:
        s = self.start
        if s.kind == "text":
            return TextPart(text="".join(self.text), citations=self.citations or None, own_keys=s.own_keys)
        if s.kind == "thinking":
            return ThinkingPart(text="".join(self.text), signature=self._signature(), provenance=s.provenance)
        if s.kind == "redacted_thinking":
            return RedactedThinkingPart(data=(s.data or "") + "".join(self.text), provenance=s.provenance)
        if s.kind == "native":
            return native_part(s, "".join(self.arguments))
        raw = "".join(self.arguments)
        try:
            parsed = orjson.loads(raw) if raw.strip() else {}
        except orjson.JSONDecodeError:
            parsed = {}
        return ToolCallPart(
            id=s.id or "",
            name=s.name or "",
            arguments=parsed if isinstance(parsed, dict) else {},
            raw_arguments=raw,
            signature=self._signature(),
            provenance=s.provenance,
            caller=s.caller,
            toolset_name=s.toolset_name,
        )


def native_part(start: PartStart, arguments: str) -> NativePart:
    """The :class:`NativePart` of a streamed native block: its start block (``start.data``,
    JSON) with its ``input`` replaced by the streamed ``arguments`` when any came (Anthropic
    ``server_tool_use`` streams its input as ``input_json_delta``); kept as sent when they are
    not a JSON object."""
    block = orjson.loads(start.data or "{}")
    if arguments.strip():
        try:
            block["input"] = orjson.loads(arguments)
        except orjson.JSONDecodeError:
            block["input"] = arguments
    return NativePart(api=start.api or "", block=block)


def _final_usage(start: Usage | None, end: Usage) -> Usage:
    """``MessageEnd.usage`` is cumulative, but some upstreams report a count only at the
    start (input tokens) or only at the end (output tokens): take each count's maximum."""
    if start is None:
        return end
    return Usage(
        input_tokens=max(start.input_tokens, end.input_tokens),
        output_tokens=max(start.output_tokens, end.output_tokens),
        cache_read_tokens=max(start.cache_read_tokens, end.cache_read_tokens),
        cache_write_tokens=max(start.cache_write_tokens, end.cache_write_tokens),
        reasoning_tokens=max(start.reasoning_tokens, end.reasoning_tokens),
        estimated=start.estimated or end.estimated,
        cost_usd=end.cost_usd if end.cost_usd is not None else start.cost_usd,
    )


def collect(events: Iterable[StreamEvent]) -> Response:
    """Build the Response a complete internal event stream describes.

    Parts are ordered by their ``index`` (gaps, e.g. left by withheld calls, close up);
    text and thinking deltas are joined; tool-call raw arguments are the argument fragments
    concatenated byte-exact, ``arguments`` their parse when that is a JSON object, else
    ``{}``; a signature is the start's signature followed by the signature deltas. Usage:
    see :func:`_final_usage`. ``withheld_tool_calls`` and ``replaced_call_ids`` come from the
    :class:`MessageEnd`. A text part started with ``own_keys`` (a Responses upstream's message
    ``phase``) keeps them, and the message then has ``own`` of that part's wire API.

    Raises :class:`gateway.errors.UpstreamError` (status of the event) on a
    :class:`StreamError`, and :class:`gateway.errors.UpstreamProtocolError` when the stream
    lacks its start or end or has a delta for a part that never started.
    """
    start: MessageStart | None = None
    end: MessageEnd | None = None
    parts: dict[int, _Builder] = {}
    own_api: str | None = None
    for event in events:
        if isinstance(event, PartDelta):  # the most frequent event first
            builder = parts.get(event.index)
            if builder is None:
                raise UpstreamProtocolError(f"stream delta for part {event.index} before the part started")
            builder.add(event)
        elif isinstance(event, MessageStart):
            start = event
        elif isinstance(event, PartStart):
            parts[event.index] = _Builder(event)
            if event.own_keys is not None:  # a part with keys of its wire API (a Responses phase)
                own_api = event.api
        elif isinstance(event, MessageEnd):
            end = event
        elif isinstance(event, StreamError):
            raise UpstreamError(f"{event.kind}: {event.message}", status=event.status)
    if start is None or end is None:
        missing = "start" if start is None else "end"
        raise UpstreamProtocolError(f"stream has no message {missing}")
    content = [parts[i].build() for i in sorted(parts)]
    return Response(
        id=start.id,
        model=start.model,
        message=AssistantMessage(
            content=content,
            own=None if own_api is None else OwnKeys(api=own_api),  # its parts carry keys of that API
        ),
        stop_reason=end.stop_reason,
        usage=_final_usage(start.usage, end.usage),
        withheld_tool_calls=list(end.withheld_tool_calls),
        replaced_call_ids=list(end.replaced_call_ids),
    )
