"""Incremental parser of Anthropic Messages streams into internal stream events.

Events (https://docs.anthropic.com/en/docs/build-with-claude/streaming): ``message_start``
(id, model, usage with input and cache tokens) -> ``MessageStart``; ``content_block_start`` /
``content_block_delta`` (``text_delta``, ``thinking_delta``, ``signature_delta``,
``input_json_delta``, ``citations_delta``: ``PartDelta.citation``) / ``content_block_stop`` -> part events;
``message_delta`` (stop reason, cumulative usage: the latest value of each field wins);
``message_stop`` -> ``MessageEnd``; a ``tool_use`` block of the structured-output tool
(``ctx.output_tool``, :mod:`gateway.providers.anthropic_output`) is a text part whose text is
its ``input_json_delta`` fragments (held to the block's end and unwrapped for a wrapped
schema), and ``tool_use`` is then ``stop`` when no other tool was called; ``ping`` ignored;
``error`` -> :class:`StreamError` (``overloaded_error`` -> ``overloaded``…). Unknown event
types are ignored, as the streaming documentation asks ("we may occasionally add new event types").

Part indexes are contiguous and Turnstile's own: Anthropic block indexes are mapped, and
blocks with no internal representation (compaction…) are skipped with their deltas. The
server's own tool calls and results (``server_tool_use``, ``*_tool_result``, ``mcp_tool_use``)
are ``native`` parts: the ``content_block_start`` block as JSON in ``PartStart.data``, its
``input_json_delta`` fragments as ``arguments`` deltas.
A text block gets its part only at its first non-empty text, so empty text blocks
never surface. A ``tool_use`` block that closes without any ``input_json_delta`` gets its
``content_block_start`` input (``{}``) as its arguments. Blocks still open at ``message_delta``
(a stream cut by ``max_tokens`` mid tool call, anthropic-sdk-python
``incomplete_partial_json_response.txt``) are ended there without completing their arguments.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from gateway.errors import UpstreamProtocolError
from gateway.providers import wire_common
from gateway.providers.anthropic_common import API, is_server_block, map_stop_reason, provenance
from gateway.providers.anthropic_output import output_text
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

ERROR_KINDS: dict[str, tuple[str, int]] = {
    "invalid_request_error": ("invalid_request", 400),
    "authentication_error": ("authentication", 401),
    "permission_error": ("permission", 403),
    "not_found_error": ("not_found", 404),
    "request_too_large": ("payload_too_large", 413),
    "rate_limit_error": ("rate_limit", 429),
    "api_error": ("api_error", 500),
    "timeout_error": ("timeout", 504),
    "overloaded_error": ("overloaded", 529),
}
"""Anthropic ``error.type`` -> (``gateway.errors`` kind, HTTP status)
(https://docs.anthropic.com/en/api/errors)."""

_USAGE_FIELDS = {
    "input_tokens": "input_tokens",
    "output_tokens": "output_tokens",
    "cache_read_input_tokens": "cache_read_tokens",
    "cache_creation_input_tokens": "cache_write_tokens",
}


_part_delta = PartDelta.__pydantic_validator__.validate_python
"""``PartDelta`` from a dict of its fields, validated exactly as ``PartDelta(**fields)`` (the
same validator) without the Python-level ``__init__`` call: the per-chunk event is made once
per upstream chunk, and this is a third cheaper."""


@dataclass
class _Block:
    kind: str  # text | thinking | redacted_thinking | tool_call | output | native | skip
    part: int | None = None
    start_input: Any = None
    got_args: bool = False
    ended: bool = False
    held: list[str] | None = None  # output tool of a wrapped schema: its input, held to the end


class AnthropicStreamParser:
    """See module docstring. ``feed(event, data)`` takes one SSE event (the event name is
    taken from the payload's ``type`` when present); ``finish()`` ends the stream."""

    def __init__(self, ctx: CallContext) -> None:
        self.ctx = ctx
        self.blocks: dict[int, _Block] = {}
        self.next_part = 0
        self.usage: dict[str, int] = {}
        self.stop: StopReason | None = None
        self.started = False
        self.ended = False
        self.failed = False
        self.calls = 0  # tool_use blocks that are client tool calls (not the output tool)

    def feed(self, event: str | None, data: bytes) -> list[StreamEvent]:
        """One SSE event. Raises :class:`UpstreamProtocolError` for non-JSON data or a
        ``message_stop`` without a stop reason, :class:`UnknownStopReason` for an unknown
        stop reason."""
        if self.ended or self.failed:
            return []
        payload = data.strip()
        if not payload:
            return []
        try:
            obj = orjson.loads(payload)
        except orjson.JSONDecodeError:  # the protocol error, with its message
            obj = None
        if not isinstance(obj, dict):
            obj = wire_common.loads_object(payload, what="stream event", deployment=self.ctx.deployment.name)
        elif obj.get("type") == "content_block_delta":  # most events: more text of a text block
            index = obj.get("index")
            block = self.blocks.get(index) if type(index) is int else None
            delta = obj.get("delta")
            if (
                block is not None
                and block.kind == "text"
                and block.part is not None
                and not block.ended
                and type(delta) is dict
                and delta.get("type") == "text_delta"
            ):
                text = delta.get("text")
                if type(text) is str:  # what _block_delta does, without the general walk
                    return [_part_delta({"index": block.part, "text": text})] if text else []
        return self.feed_obj(obj, event)

    def feed_obj(self, obj: dict[str, Any], event: str | None = None) -> list[StreamEvent]:
        """One decoded stream event object."""
        if self.ended or self.failed:
            return []
        kind = obj.get("type") or event
        out: list[StreamEvent] = []
        if kind == "content_block_delta":  # the most frequent event first
            self._block_delta(obj, out)
        elif kind == "message_start":
            msg = wire_common.as_dict(obj.get("message"))
            self._usage(wire_common.as_dict(msg.get("usage")))
            self.started = True
            out.append(
                MessageStart(
                    id=str(msg.get("id") or ""),
                    model=str(msg.get("model") or self.ctx.deployment.model),
                    usage=self._usage_model(),
                )
            )
        elif kind == "content_block_start":
            self._block_start(obj, out)
        elif kind == "content_block_stop":
            block = self.blocks.get(_int(obj.get("index")))
            if block is not None:
                self._end_block(block, out, complete=True)
        elif kind == "message_delta":
            delta = wire_common.as_dict(obj.get("delta"))
            self._usage(wire_common.as_dict(obj.get("usage")))
            if delta.get("stop_reason") is not None:
                raw = str(delta["stop_reason"])
                if raw == "tool_use" and self.ctx.output_tool is not None and not self.calls:
                    raw = "end_turn"  # the only call was the structured answer: plain text
                self.stop = map_stop_reason(raw)
                self._end_all(out)
        elif kind == "message_stop":
            out.extend(self._end())
        elif kind == "error":
            self.failed = True
            err = wire_common.as_dict(obj.get("error"))
            etype = str(err.get("type") or "")
            ekind, status = ERROR_KINDS.get(etype, ("upstream", 502))
            out.append(
                StreamError(kind=ekind, message=str(err.get("message") or etype or "error"), status=status)
            )
        # ping and unknown event types: nothing
        return out

    def finish(self) -> list[StreamEvent]:
        """The upstream closed the stream: emit ``MessageEnd`` if the stop reason is known
        (``message_stop`` may be missing), else raise :class:`UpstreamProtocolError`."""
        if self.ended or self.failed:
            return []
        if self.stop is None:
            raise UpstreamProtocolError(
                "Anthropic stream ended before a stop_reason (cut off)", deployment=self.ctx.deployment.name
            )
        return self._end()

    # ------------------------------------------------------------------ internals

    def _usage(self, u: dict[str, Any]) -> None:
        for wire, ours in _USAGE_FIELDS.items():
            val = wire_common.int_field(u, wire)
            if val is not None:
                self.usage[ours] = val

    def _usage_model(self) -> Usage:
        u = self.usage
        return Usage(
            input_tokens=u.get("input_tokens", 0),
            output_tokens=u.get("output_tokens", 0),
            cache_read_tokens=u.get("cache_read_tokens", 0),
            cache_write_tokens=u.get("cache_write_tokens", 0),
        )

    def _new_part(self) -> int:
        index = self.next_part
        self.next_part += 1
        return index

    def _block_start(self, obj: dict[str, Any], out: list[StreamEvent]) -> None:
        index = _int(obj.get("index"))
        cb = wire_common.as_dict(obj.get("content_block"))
        btype = cb.get("type")
        dep = self.ctx.deployment
        if btype == "text":
            block = _Block("text")
            self.blocks[index] = block
            if cb.get("text"):
                self._text(block, str(cb["text"]), out)
        elif btype == "thinking":
            block = _Block("thinking", part=self._new_part())
            self.blocks[index] = block
            out.append(
                PartStart(
                    index=block.part or 0,
                    kind="thinking",
                    signature=cb.get("signature") or None,
                    provenance=provenance(dep),
                )
            )
            if cb.get("thinking"):
                out.append(PartDelta(index=block.part or 0, text=str(cb["thinking"])))
        elif btype == "redacted_thinking":
            block = _Block("redacted_thinking", part=self._new_part())
            self.blocks[index] = block
            out.append(
                PartStart(
                    index=block.part or 0,
                    kind="redacted_thinking",
                    data=str(cb.get("data") or ""),
                    provenance=provenance(dep),
                )
            )
        elif (
            btype == "tool_use"
            and self.ctx.output_tool is not None
            and cb.get("name") == self.ctx.output_tool
        ):
            block = _Block("output", part=self._new_part(), start_input=cb.get("input"))
            block.held = [] if self.ctx.output_wrapped else None
            self.blocks[index] = block
            out.append(PartStart(index=block.part or 0, kind="text"))
        elif btype == "tool_use":
            self.calls += 1
            block = _Block("tool_call", part=self._new_part(), start_input=cb.get("input"))
            self.blocks[index] = block
            caller = cb.get("caller")
            toolset = cb.get("toolset_name")
            out.append(
                PartStart(
                    index=block.part or 0,
                    kind="tool_call",
                    id=self.ctx.names.from_upstream_id(str(cb.get("id") or "")),
                    name=self.ctx.names.from_upstream_name(str(cb.get("name") or "")),
                    caller=caller if isinstance(caller, dict) else None,
                    toolset_name=toolset if isinstance(toolset, str) else None,
                )
            )
        elif isinstance(btype, str) and is_server_block(btype):
            block = _Block("native", part=self._new_part())
            self.blocks[index] = block
            out.append(
                PartStart(index=block.part or 0, kind="native", api=API, data=orjson.dumps(cb).decode())
            )
        else:
            self.blocks[index] = _Block("skip")

    def _text(self, block: _Block, text: str, out: list[StreamEvent]) -> None:
        if block.part is None:
            block.part = self._new_part()
            out.append(PartStart(index=block.part, kind="text"))
        out.append(PartDelta(index=block.part, text=text))

    def _block_delta(self, obj: dict[str, Any], out: list[StreamEvent]) -> None:
        index = obj.get("index")
        block = self.blocks.get(index if isinstance(index, int) and not isinstance(index, bool) else -1)
        if block is None or block.kind == "skip" or block.ended:
            return
        delta = obj.get("delta")
        if not isinstance(delta, dict):
            delta = {}
        dtype = delta.get("type")
        if dtype == "text_delta" and block.kind == "text":
            text = delta.get("text")
            if text:
                if block.part is not None and type(text) is str:  # the usual case
                    out.append(_part_delta({"index": block.part, "text": text}))
                else:
                    self._text(block, str(text), out)
        elif dtype == "citations_delta" and block.kind == "text":
            citation = delta.get("citation")
            if isinstance(citation, dict):
                if block.part is None:
                    block.part = self._new_part()
                    out.append(PartStart(index=block.part, kind="text"))
                out.append(PartDelta(index=block.part, citation=citation))
        elif block.part is None:
            return
        elif dtype == "thinking_delta":
            if delta.get("thinking"):
                out.append(_part_delta({"index": block.part, "text": str(delta["thinking"])}))
        elif dtype == "signature_delta":
            if delta.get("signature"):
                out.append(PartDelta(index=block.part, signature=str(delta["signature"])))
        elif dtype == "input_json_delta":
            fragment = delta.get("partial_json")
            if fragment:
                block.got_args = True
                if block.kind == "tool_call" or block.kind == "native":
                    out.append(_part_delta({"index": block.part, "arguments": str(fragment)}))
                elif block.held is not None:
                    block.held.append(str(fragment))
                else:  # the output tool's input is the answer's text, as it streams
                    out.append(_part_delta({"index": block.part, "text": str(fragment)}))

    def _end_block(self, block: _Block, out: list[StreamEvent], *, complete: bool) -> None:
        if block.ended:
            return
        block.ended = True
        if block.part is None:
            return
        if complete and block.kind == "tool_call" and not block.got_args:
            start = block.start_input if isinstance(block.start_input, dict) else {}
            out.append(PartDelta(index=block.part, arguments=wire_common.dumps_arguments(start)))
        elif block.kind == "output":
            self._end_output(block, out, complete)
        out.append(PartEnd(index=block.part))

    def _end_output(self, block: _Block, out: list[StreamEvent], complete: bool) -> None:
        """The rest of the output tool's text: its start input when no delta came, or the
        ``value`` of a wrapped schema's held input (the held text as it is when cut short or
        not JSON, so nothing the model wrote is lost)."""
        part = block.part or 0
        if block.held is None:
            if complete and not block.got_args:
                start = block.start_input if isinstance(block.start_input, dict) else {}
                out.append(PartDelta(index=part, text=wire_common.dumps_arguments(start)))
            return
        raw = "".join(block.held)
        if not block.got_args:
            raw = wire_common.dumps_arguments(
                block.start_input if isinstance(block.start_input, dict) else {}
            )
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError:
            value = None
        text = output_text(value, True) if complete and isinstance(value, dict) else raw
        if text:
            out.append(PartDelta(index=part, text=text))

    def _end_all(self, out: list[StreamEvent]) -> None:
        for block in sorted(self.blocks.values(), key=lambda b: -1 if b.part is None else b.part):
            self._end_block(block, out, complete=False)

    def _end(self) -> list[StreamEvent]:
        if self.stop is None:
            raise UpstreamProtocolError(
                "Anthropic stream sent message_stop without a stop_reason",
                deployment=self.ctx.deployment.name,
            )
        out: list[StreamEvent] = []
        if not self.started:
            self.started = True
            out.append(MessageStart(id="", model=self.ctx.deployment.model))
        self._end_all(out)
        out.append(MessageEnd(stop_reason=self.stop, usage=self._usage_model()))
        self.ended = True
        return out


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else -1
