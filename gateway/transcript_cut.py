"""Bounded JSON for the transcript: a request or response too large to keep whole is kept cut,
and says so.

A row keeps at most ``server.transcript_max_json_bytes`` of request JSON and as much of
response JSON. Past that, the value's longest strings (answer text, tool results, base64
images) are shortened, all to one length chosen so that the whole fits, each ending in ``…``;
the top-level object gets a :data:`CUT_KEY` entry ``{"original_bytes", "stored_bytes",
"strings_shortened", "kept_chars"}``. When shortening strings cannot make it fit (a huge number
of small items), what is kept is ``{CUT_KEY: {...}, "head": <the start of the JSON text>}``.

A value that cannot be encoded at all (nested past what the encoders take, a value JSON has no
form for) is stored as ``{UNSTORABLE_KEY: "<why>"}``: the row is always written.
"""

from __future__ import annotations

from typing import Any

import orjson

CUT_KEY = "turnstile.cut"
"""Key, in stored JSON, of the note that it was cut (and from what size)."""

UNSTORABLE_KEY = "turnstile.unstorable"
"""Key, in stored JSON, of why a value could not be stored at all."""

_NOTE_ROOM = 256
"""Bytes kept free for the cut note."""


def unstorable(err: BaseException) -> str:
    """The JSON stored in place of a value that could not be encoded."""
    return orjson.dumps({UNSTORABLE_KEY: f"{type(err).__name__}: {err}"[:500]}).decode()


def bounded(raw: bytes, max_bytes: int) -> str:
    """``raw`` (JSON bytes) as stored text: unchanged when at most ``max_bytes`` long, else
    cut to fit as the module docstring says."""
    if len(raw) <= max_bytes:
        return raw.decode()
    try:
        return _shorten(raw, max_bytes)
    except (RecursionError, ValueError, TypeError):  # too deep to walk: keep the head
        return _head(raw, max_bytes, strings=0, kept=0)


def _strings(value: Any, out: list[int]) -> None:
    """Append the length of every string value (not key) inside ``value`` to ``out``."""
    stack = [value]
    while stack:
        node = stack.pop()
        items = node.values() if type(node) is dict else node
        for v in items:
            if type(v) is str:
                out.append(len(v))
            elif type(v) is dict or type(v) is list:
                stack.append(v)


def _cut(value: Any, kept: int) -> Any:
    if type(value) is str:
        return value if len(value) <= kept else value[:kept] + "…"
    if type(value) is dict:
        return {k: _cut(v, kept) for k, v in value.items()}
    if type(value) is list:
        return [_cut(v, kept) for v in value]
    return value


def _shorten(raw: bytes, max_bytes: int) -> str:
    value = orjson.loads(raw)
    lengths: list[int] = []
    if type(value) is dict or type(value) is list:
        _strings(value, lengths)
    elif type(value) is str:
        lengths.append(len(value))
    lengths.sort(reverse=True)
    excess = len(raw) - (max_bytes - _NOTE_ROOM)
    # The longest length ``kept`` such that cutting every longer string to it removes enough.
    lo, hi = 0, lengths[0] if lengths else 0
    while lo < hi:
        mid = (lo + hi + 1) // 2
        removed = sum(n - mid for n in lengths if n > mid)
        if removed >= excess:
            lo = mid
        else:
            hi = mid - 1
    kept = lo
    shortened = 0
    for _ in range(3):  # lengths are characters; non-ASCII text may need another pass
        shortened = sum(1 for n in lengths if n > kept)
        out = _cut(value, kept)
        if type(out) is not dict:
            out = {"value": out}
        note = _note(raw, shortened, kept)
        text = _with_size({CUT_KEY: note, **out}, note)
        if len(text) <= max_bytes:
            return text.decode()
        if kept == 0:
            break
        kept = kept * max_bytes // len(text) // 2
    return _head(raw, max_bytes, strings=shortened, kept=kept)  # strings were not what made it large


def _note(raw: bytes, shortened: int, kept: int) -> dict[str, int]:
    return {"original_bytes": len(raw), "stored_bytes": 0, "strings_shortened": shortened, "kept_chars": kept}


def _head(raw: bytes, max_bytes: int, *, strings: int, kept: int) -> str:
    # Half the room: the head is stored as a JSON string, whose quotes are escaped.
    head = raw[: max(0, max_bytes - _NOTE_ROOM) // 2].decode("utf-8", "ignore")
    note = _note(raw, strings, kept)
    return _with_size({CUT_KEY: note, "head": head}, note).decode()


def _with_size(out: dict[str, Any], note: dict[str, int]) -> bytes:
    """``out`` encoded, its ``note["stored_bytes"]`` set to the encoded length (which it is part of)."""
    text = orjson.dumps(out)
    while note["stored_bytes"] != len(text):
        note["stored_bytes"] = len(text)
        text = orjson.dumps(out)
    return text
