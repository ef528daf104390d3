"""Response header values built from data: never a byte an HTTP parser refuses.

A header value may hold only visible ASCII, spaces and tabs (RFC 9110 §5.5: ``field-vchar``;
obs-text is obsolete and Latin-1 decoding of it differs between clients); a CR or LF ends the
header (h11 and uvicorn refuse to send it, dropping the connection without an answer), and a
character outside Latin-1 cannot be encoded at all. Values the gateway builds from data it does
not control (tool-call ids an upstream invented, deployment and route names from the
configuration, retry-after seconds an upstream sent) therefore pass through one of these
functions before they become a header:

* :func:`header_value`: the text with every character outside printable ASCII (``0x20``-``0x7e``),
  every ``%``, a leading or trailing space, and any extra ``separators`` replaced by the
  percent-escapes of its UTF-8 bytes (``%0D%0A``, ``%E8%B0%83``): ``urllib.parse.unquote``
  gives the original back exactly. Text that needs no escape is returned as it is (the common
  case costs one scan in C).
* :func:`header_list`: a comma-separated list whose items are escaped with ``,`` as a
  separator, so an item holding a comma stays one item.
* :func:`retry_after_value`: delta-seconds (RFC 9110 §10.2.3) from a float of seconds that may be
  huge or not finite.

Every value is at most :data:`MAX_HEADER_VALUE_CHARS` characters: a longer one is cut (a list at
an item boundary) and ends with :data:`CUT_MARK`; whatever a header cuts is in the body in full
(e.g. ``withheld_tool_calls``). Strict clients refuse a header block over 16 KiB (h11's
``max_incomplete_event_size``), so one value an upstream inflates must not reach that.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

MAX_HEADER_VALUE_CHARS = 2048
"""Characters of one header value, after escaping."""

CUT_MARK = "..."
"""The end of a value (or the last item of a list) that was cut at :data:`MAX_HEADER_VALUE_CHARS`."""

MAX_RETRY_AFTER_S = 86_400
"""The largest ``retry-after`` (seconds, one day) the gateway passes on."""

_PLAIN = frozenset(chr(c) for c in range(0x20, 0x7F)) - {"%"}
_AS_IS = re.compile(r"[!-$&-~](?:[ -$&-~]*[!-$&-~])?").fullmatch
"""Not None for text that needs no escape: printable ASCII without ``%``, no space at either end."""


def _escape(text: str, separators: str) -> str:
    out: list[str] = []
    last = len(text) - 1
    for i, ch in enumerate(text):
        if ch in _PLAIN and ch not in separators and not (ch == " " and (i == 0 or i == last)):
            out.append(ch)
        else:
            out.extend(f"%{b:02X}" for b in ch.encode("utf-8", "surrogatepass"))
    return "".join(out)


def _cut(escaped: str, limit: int) -> str:
    """``escaped`` cut to ``limit`` characters ending in :data:`CUT_MARK`, never inside a
    ``%XX`` escape."""
    end = limit - len(CUT_MARK)
    pct = escaped.rfind("%", max(0, end - 2), end)
    if pct != -1:
        end = pct
    return escaped[:end] + CUT_MARK


def header_value(text: str, separators: str = "", limit: int = MAX_HEADER_VALUE_CHARS) -> str:
    """``text`` as a safe header value (see the module docstring): printable ASCII only, at
    most ``limit`` characters, ``%``-escaped where needed, ``separators`` escaped too. Never
    raises."""
    if _AS_IS(text) is not None and not (separators and any(s in text for s in separators)):
        escaped = text  # the common case: one C call
    else:
        escaped = _escape(text, separators)
    return escaped if len(escaped) <= limit else _cut(escaped, limit)


def header_list(items: Iterable[str], limit: int = MAX_HEADER_VALUE_CHARS) -> str:
    """``items`` as one comma-separated header value: each item escaped by :func:`header_value`
    with ``,`` as a separator (split on ``,`` and unquote each part to read it back). When the
    list would pass ``limit`` characters, the items that fit are kept and :data:`CUT_MARK` is
    the last item."""
    out: list[str] = []
    size = 0
    for item in items:
        escaped = header_value(item, ",", limit)
        size += len(escaped) + (1 if out else 0)
        if size > limit - len(CUT_MARK) - 1:
            out.append(CUT_MARK)
            break
        out.append(escaped)
    return ",".join(out)


def retry_after_value(seconds: float) -> str:
    """Delta-seconds for a ``retry-after`` header: ``seconds`` rounded, at least 1 and at most
    :data:`MAX_RETRY_AFTER_S` (a NaN counts as 1, infinity as the maximum)."""
    if math.isnan(seconds):
        return "1"
    if seconds >= MAX_RETRY_AFTER_S:
        return str(MAX_RETRY_AFTER_S)
    return str(max(1, round(seconds)))


__all__ = [
    "CUT_MARK",
    "MAX_HEADER_VALUE_CHARS",
    "MAX_RETRY_AFTER_S",
    "header_list",
    "header_value",
    "retry_after_value",
]
