"""A size cap on MCP tool results (handed case C28).

A tool may return megabytes (``cat build.log``); forwarded whole, the next chat turn overflows
the model's context and the upstream answers 400. The gateway caps each result's text before
the result reaches the client: it keeps a head and a tail, puts an explicit marker between them
giving the original size and the bytes left out, cuts only at UTF-8 character boundaries, and
flags that truncation happened. With ``mode="error"`` it returns an error result instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

DEFAULT_CAP_BYTES = 128 * 1024


@dataclass(frozen=True)
class CappedText:
    """The result of :func:`cap_text`: ``text`` to forward, ``truncated`` flag, the original
    and kept sizes in bytes, and ``is_error`` when mode ``error`` refused the result."""

    text: str
    truncated: bool
    original_bytes: int
    omitted_bytes: int
    is_error: bool = False


def _cut_head(data: bytes, n: int) -> bytes:
    """The longest prefix of ``data`` of at most ``n`` bytes that ends on a character boundary."""
    n = min(n, len(data))
    while n > 0 and n < len(data) and (data[n] & 0xC0) == 0x80:
        n -= 1
    return data[:n]


def _cut_tail(data: bytes, n: int) -> bytes:
    """The longest suffix of at most ``n`` bytes that starts on a character boundary."""
    start = max(0, len(data) - n)
    while start < len(data) and (data[start] & 0xC0) == 0x80:
        start += 1
    return data[start:]


def cap_text(
    text: str,
    cap_bytes: int = DEFAULT_CAP_BYTES,
    *,
    mode: Literal["truncate", "error"] = "truncate",
    head_share: float = 0.75,
) -> CappedText:
    """Cap ``text`` at about ``cap_bytes`` UTF-8 bytes.

    In ``truncate`` mode keeps ``head_share`` of the budget from the start and the rest from
    the end, with a marker line ``[turnstile: tool result truncated: N bytes in all, M bytes
    omitted]`` between them; the marker counts against the cap, so the output never exceeds
    ``cap_bytes``. In ``error`` mode an oversized text becomes an ``is_error`` result saying
    so. Raises ``ValueError`` for a cap too small to hold the marker (< 256 bytes).
    """
    if cap_bytes < 256:
        raise ValueError(f"cap_bytes must be at least 256, got {cap_bytes}")
    # A lone surrogate (legal in a JSON string, not in UTF-8) becomes "?" rather than an error.
    data = text.encode("utf-8", errors="replace")
    size = len(data)
    if size <= cap_bytes:
        return CappedText(text=text, truncated=False, original_bytes=size, omitted_bytes=0)
    if mode == "error":
        message = (
            f"result too large: the tool returned {size} bytes, over the gateway's cap of {cap_bytes} bytes"
        )
        return CappedText(
            text=message, truncated=True, original_bytes=size, omitted_bytes=size, is_error=True
        )
    marker_room = 120
    budget = cap_bytes - marker_room
    head = _cut_head(data, int(budget * head_share))
    tail = _cut_tail(data, budget - len(head))
    omitted = size - len(head) - len(tail)
    marker = f"\n[turnstile: tool result truncated: {size} bytes in all, {omitted} bytes omitted]\n"
    out = head.decode("utf-8") + marker + tail.decode("utf-8")
    return CappedText(text=out, truncated=True, original_bytes=size, omitted_bytes=omitted)
