"""Frame templates for the stream renderers: the bytes around one string value of an SSE frame,
made once so a frequent frame (a text delta) costs one JSON string encoding and two joins.

A template is made by rendering the frame the usual way with :data:`MARKER` as the value and
splitting the result at the marker's JSON, so the template frame is byte-identical to what the
usual way would make for any text (JSON escaping of the text is orjson's in both cases).
"""

from __future__ import annotations

import orjson

MARKER = "\x00turnstile-text\x00"
"""The placeholder string value a template is made with."""

_MARKER_JSON = orjson.dumps(MARKER)

Template = tuple[bytes, bytes] | tuple[()]
"""``(head, tail)``, or ``()`` when no template could be made."""


def template(frame: bytes) -> Template:
    """``(head, tail)`` of ``frame``, a frame made with :data:`MARKER` as its one string value:
    the frame for text ``t`` is ``head + orjson.dumps(t) + tail``. ``()`` when the marker's JSON
    does not occur exactly once in ``frame`` (another value of the frame contains it): the
    caller then renders the frame the usual way."""
    if frame.count(_MARKER_JSON) != 1:
        return ()
    head, _, tail = frame.partition(_MARKER_JSON)
    return head, tail
