"""Incremental Server-Sent Events framing: bytes chunks in, ``(event, data)`` pairs out.

Follows the WHATWG "event stream interpretation" rules
(https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation):

* lines end in ``\\r\\n``, ``\\n`` or ``\\r`` (a ``\\r`` at the end of a chunk waits for the next
  chunk to see whether a ``\\n`` follows);
* ``:comment`` lines are ignored (OpenRouter sends ``: OPENROUTER PROCESSING`` keep-alives);
* ``field: value`` strips exactly one space after the colon; ``data`` lines accumulate, joined
  by ``\\n``; ``event`` names the event; ``id`` and ``retry`` are accepted and ignored;
* a blank line dispatches the event; an event with no ``data`` line is not dispatched;
* a UTF-8 byte-order mark at the very start is skipped.

Data is returned as raw bytes, untouched: trailing whitespace padding inside a data line (seen
in anthropic-sdk-python ``tests/lib/streaming/fixtures/incomplete_partial_json_response.txt``,
e.g. ``data: {"type":"message_stop" }   ``) is kept; JSON decoders ignore it.

Unlike the spec, :meth:`SseDecoder.close` also dispatches a final event that was not followed
by a blank line (the same recording ends without one), so a stream cut right after its last
``data:`` line is not silently shortened.
"""

from __future__ import annotations

from dataclasses import dataclass, field

SseEvent = tuple[str | None, bytes]
"""``(event name or None, data payload bytes)``."""

_BOM = b"\xef\xbb\xbf"


@dataclass
class SseDecoder:
    """Stateful SSE decoder. ``feed(chunk)`` returns the events completed by ``chunk``;
    ``close()`` returns a pending event left at end of stream (see module docstring)."""

    _buf: bytes = b""
    _event: str | None = None
    _data: list[bytes] = field(default_factory=list)
    _started: bool = False
    _closed: bool = False

    def feed(self, chunk: bytes) -> list[SseEvent]:
        """Decode one chunk of the byte stream (any size, split anywhere).

        Returns the list of ``(event, data)`` pairs completed so far, in order.
        """
        if self._closed:
            raise ValueError("SseDecoder.feed() after close()")
        if not chunk:
            return []
        buf = self._buf + chunk
        if not self._started:
            if len(buf) < len(_BOM) and _BOM.startswith(buf):
                self._buf = buf
                return []
            self._started = True
            if buf.startswith(_BOM):
                buf = buf[len(_BOM) :]
        out: list[SseEvent] = []
        if b"\r" not in buf:  # the common case: LF line ends only, split in one C call
            lines = buf.split(b"\n")
            self._buf = lines.pop()  # the unterminated rest (b"" after a final LF)
            # _line inlined for the usual lines (``data: ``, ``event: ``, blank); the same rules.
            data = self._data
            for line in lines:
                if line[:6] == b"data: ":
                    data.append(line[6:])
                elif not line:
                    if data:
                        out.append((self._event, b"\n".join(data)))
                        data = self._data = []
                    self._event = None
                elif line[:7] == b"event: ":
                    self._event = line[7:].decode("utf-8", errors="replace") or None
                else:
                    self._line(line)
            return out
        pos = 0
        n = len(buf)
        cr = buf.find(b"\r")  # the next CR at or after pos; found again only once passed
        while pos < n:
            lf = buf.find(b"\n", pos)
            if cr != -1 and cr < pos:
                cr = buf.find(b"\r", pos)
            if lf == -1 and cr == -1:
                break
            if cr != -1 and (lf == -1 or cr < lf):
                if cr == n - 1:
                    break  # a lone CR at the end: wait to see whether LF follows
                line = buf[pos:cr]
                pos = cr + 2 if buf[cr + 1 : cr + 2] == b"\n" else cr + 1
            else:
                line = buf[pos:lf]
                pos = lf + 1
            ev = self._line(line)
            if ev is not None:
                out.append(ev)
        self._buf = buf[pos:]
        return out

    def close(self) -> list[SseEvent]:
        """End of stream: process a last unterminated line and dispatch a pending event."""
        if self._closed:
            return []
        self._closed = True
        out: list[SseEvent] = []
        rest = self._buf
        self._buf = b""
        if not self._started and rest.startswith(_BOM):
            rest = rest[len(_BOM) :]
        if rest.endswith(b"\r"):
            rest = rest[:-1]
        if rest:
            ev = self._line(rest)
            if ev is not None:
                out.append(ev)
        ev = self._line(b"")
        if ev is not None:
            out.append(ev)
        return out

    def _line(self, line: bytes) -> SseEvent | None:
        if not line:
            if not self._data:
                self._event = None
                return None
            ev: SseEvent = (self._event, b"\n".join(self._data))
            self._event = None
            self._data = []
            return ev
        if line[:1] == b":":
            return None
        name, sep, value = line.partition(b":")
        if sep and value[:1] == b" ":
            value = value[1:]
        if name == b"data":
            self._data.append(value)
        elif name == b"event":
            self._event = value.decode("utf-8", errors="replace") or None
        # ``id``, ``retry`` and unknown fields are ignored, as the spec says.
        return None


def decode_all(raw: bytes) -> list[SseEvent]:
    """Decode a complete SSE byte string (a recording) into its events."""
    dec = SseDecoder()
    return dec.feed(raw) + dec.close()
