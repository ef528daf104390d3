"""Splitting a stdio MCP server's stdout into messages, with bounded memory.

MCP over stdio is newline-delimited JSON-RPC. A server is code from outside and may write
anything: a line too large to hold, bytes that are not UTF-8, text that is not JSON-RPC, a
message glued to the end of a stray ``print`` that had no newline. This module only frames and
judges; :mod:`mcp_servers.stdio_transport` decides what each outcome does to the connection.

* :class:`LineFramer` cuts the byte stream at ``\\n`` in linear time and never holds more than
  ``max_message_bytes`` of one line: past that, the line is *refused* and only its first and last
  ``EDGE_BYTES`` are kept (:class:`Oversize`), so the request it answered can still be named.
* :func:`parse_line` turns one line into a JSON-RPC message, recovering a message preceded by
  junk on the same line; anything else is junk (:class:`Junk`).
* :func:`oversize_request_id` recovers the ``id`` of a refused message from its edges, and
  :func:`oversize_is_from_server` tells a request of the server's own from an answer.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

import mcp_types as types

EDGE_BYTES = 4096
"""How much of the start and of the end of a refused line is kept to find its ``id``."""
_RECOVERY_TRIES = 3


@dataclass(frozen=True)
class Oversize:
    """A line of ``size`` bytes (more than the limit) that was refused while it was read;
    ``head`` and ``tail`` are its first and last ``EDGE_BYTES``."""

    size: int
    head: bytes
    tail: bytes


class LineFramer:
    """Newline framing with a per-line limit of ``max_message_bytes`` (bytes, newline excluded).

    :meth:`feed` takes each chunk read from the pipe and returns the lines it completed: the
    line's bytes, or an :class:`Oversize` for a line over the limit. Empty lines are skipped.
    Memory held: at most ``max_message_bytes`` plus ``2 * EDGE_BYTES``.
    """

    def __init__(self, max_message_bytes: int) -> None:
        self.max_message_bytes = max_message_bytes
        self._line = bytearray()
        self._refused = 0  # bytes of the current line seen since it went over the limit (0: not over)
        self._head = b""
        self._tail = bytearray()

    def feed(self, chunk: bytes) -> list[bytes | Oversize]:
        """The lines that ``chunk`` completed, in order."""
        out: list[bytes | Oversize] = []
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            self._add(memoryview(chunk)[start : len(chunk) if end < 0 else end])
            if end < 0:
                return out
            done = self._finish()
            if done:
                out.append(done)
            start = end + 1

    @property
    def held_bytes(self) -> int:
        """Bytes held in memory for the unfinished line."""
        return len(self._line) + len(self._head) + len(self._tail)

    def _add(self, piece: memoryview) -> None:
        if not piece:
            return
        if self._refused:
            self._refused += len(piece)
            self._tail += piece[-EDGE_BYTES:]
            del self._tail[:-EDGE_BYTES]
        elif len(self._line) + len(piece) > self.max_message_bytes:
            self._refused = len(self._line) + len(piece)
            self._head = bytes(self._line[:EDGE_BYTES]) + bytes(piece[: max(0, EDGE_BYTES - len(self._line))])
            edge = bytes(self._line[-EDGE_BYTES:]) + bytes(piece[-EDGE_BYTES:])
            self._tail = bytearray(edge[-EDGE_BYTES:])
            self._line = bytearray()
        else:
            self._line += piece

    def _finish(self) -> bytes | Oversize | None:
        if self._refused:
            done: bytes | Oversize = Oversize(self._refused, self._head, bytes(self._tail))
            self._refused, self._head, self._tail = 0, b"", bytearray()
            return done
        line = bytes(self._line)
        self._line.clear()
        return line if line.strip() else None


@dataclass(frozen=True)
class Junk:
    """A line that is not a JSON-RPC message; ``preview`` is its start, for the log."""

    size: int
    preview: str


def parse_line(line: bytes) -> tuple[types.JSONRPCMessage | None, Junk | None]:
    """``(message, junk)`` for one line: the JSON-RPC message and no junk; a message recovered
    after junk on the same line (a stray ``print`` without a newline before it) and that junk;
    or no message and the whole line as junk (not UTF-8, not JSON, not JSON-RPC)."""
    try:
        return types.jsonrpc_message_adapter.validate_json(line, by_name=False), None
    except ValueError:  # pydantic's ValidationError: not UTF-8, not JSON, not JSON-RPC
        pass
    start = 0
    for _ in range(_RECOVERY_TRIES):
        start = line.find(b"{", start + 1)
        if start < 0:
            break
        try:
            message = types.jsonrpc_message_adapter.validate_json(line[start:], by_name=False)
        except ValueError:
            continue
        return message, _junk(line[:start])
    return None, _junk(line)


def _junk(raw: bytes) -> Junk:
    return Junk(len(raw), raw[:120].decode("utf-8", "replace"))


_TAIL_MEMBER = re.compile(rb'[,{]\s*"([A-Za-z_]+)"\s*:\s*(-?\d+|"[^"\\]*"|null|true|false)\s*$')


def oversize_request_id(refused: Oversize) -> int | str | None:
    """The top-level ``id`` of a refused message, read from its edges, or None.

    From the head: the object's first members, up to one whose value runs past the head (a
    Python SDK server writes ``{"jsonrpc", "id", "result"}`` in that order). From the tail: the
    last members whose values are plain scalars (the TypeScript SDK writes ``result`` first);
    a scalar member right before the final ``}`` belongs to the top-level object.
    """
    found = _head_members(refused.head).get("id")
    return _id_value(found) if found is not None else _tail_id(refused.tail)


def oversize_is_from_server(refused: Oversize) -> bool:
    """Whether the refused message is a request or notification of the server's own (a
    ``method`` among its first members), not an answer to one of the client's requests."""
    return "method" in _head_members(refused.head)


def _head_members(head: bytes) -> dict[str, object]:
    """The top-level members readable whole from the head of a JSON object, in order."""
    text = head.decode("utf-8", "ignore")
    decoder = json.JSONDecoder()
    members: dict[str, object] = {}
    pos = _skip(text, 0)
    if not text.startswith("{", pos):
        return members
    pos += 1
    for _ in range(16):
        try:
            key, pos = decoder.raw_decode(text, _skip(text, pos))
            pos = _skip(text, pos)
            if not isinstance(key, str) or not text.startswith(":", pos):
                return members
            value, pos = decoder.raw_decode(text, _skip(text, pos + 1))
        except (json.JSONDecodeError, IndexError):
            return members  # the value runs past the head
        members[key] = value
        pos = _skip(text, pos)
        if not text.startswith(",", pos):
            return members
        pos += 1
    return members


def _tail_id(tail: bytes) -> int | str | None:
    text = tail.rstrip()
    if not text.endswith(b"}"):
        return None
    text = text[:-1]
    for _ in range(8):
        m = _TAIL_MEMBER.search(text)
        if m is None:
            return None
        if m.group(1) == b"id":
            try:
                return _id_value(json.loads(m.group(2)))
            except ValueError:
                return None
        if text[m.start() : m.start() + 1] == b"{":
            return None  # reached the start of the top-level object
        text = text[: m.start()]
    return None


def _id_value(value: object) -> int | str | None:
    return value if isinstance(value, (int, str)) and not isinstance(value, bool) else None


def _skip(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\r\n":
        pos += 1
    return pos
