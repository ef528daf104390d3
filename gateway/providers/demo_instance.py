"""A deterministic minimal instance of a JSON Schema: the ``demo`` deployment's structured
answer (:mod:`gateway.providers.demo`), which validates against the schema the client asked
for, so ``parse()`` of every SDK works against the keyless default.

Rules, recursively: ``$ref`` into the same document (``#/$defs/X``, ``#/definitions/X``, any
JSON pointer) is followed; ``const`` is its value, ``enum`` its first value; ``anyOf`` /
``oneOf`` the first branch that is not ``null`` (else ``null``); ``allOf`` the members' object
instances merged (else the first member's); a type list its first non-null type. Objects get
their ``required`` properties (every property when ``required`` is absent, to show the shape);
arrays ``max(minItems, 1)`` items (none when ``maxItems`` is 0); strings ``"demo"`` (a value of
the ``format`` for ``date-time``, ``date``, ``time``, ``email``, ``uri``, ``uuid``,
``hostname``, ``ipv4``, ``ipv6``, ``duration``), padded to ``minLength`` and cut to
``maxLength``; integers and numbers 1 moved into ``minimum`` / ``maximum`` /
``exclusiveMinimum`` / ``exclusiveMaximum``; booleans ``true``; a node with no type
``"demo"``. ``pattern`` is not honoured. Numeric and length bounds that the Anthropic SDK's
``transform_schema`` (and :func:`gateway.providers.anthropic_schema.to_anthropic_schema`) moved
into a description as ``{minimum: 2, maxLength: 5}`` are read back from it, so a client's
``parse()`` validation (which still has them) accepts the answer. Past :data:`MAX_DEPTH`
nested schemas (a recursive schema) a node gives its type's empty value (``{}``, ``[]``,
``null``, ``"demo"``).
"""

from __future__ import annotations

import math
import re
from typing import Any

__all__ = ["MAX_DEPTH", "minimal_instance"]

MAX_DEPTH = 12
"""Nested schemas followed at most (a recursive ``$ref`` ends there)."""

_FORMATS = {
    "date-time": "2026-01-01T00:00:00Z",
    "date": "2026-01-01",
    "time": "00:00:00Z",
    "email": "demo@example.com",
    "uri": "https://example.com/",
    "uuid": "00000000-0000-4000-8000-000000000000",
    "hostname": "example.com",
    "ipv4": "192.0.2.1",
    "ipv6": "2001:db8::1",
    "duration": "P1D",
}


def minimal_instance(schema: Any, text: str = "demo") -> Any:
    """A value valid for ``schema`` (a JSON Schema; anything else gives ``"demo"``) by the
    module docstring's rules; ``text`` replaces ``"demo"`` as the value of a string without a
    known ``format`` (the demo's tool calls pass the user's words), padded and cut alike.
    Never raises."""
    return _instance(schema, schema, 0, text or "demo")


def _resolve(ref: str, root: Any) -> Any:
    if not ref.startswith("#"):
        return None
    node = root
    for raw in ref[1:].lstrip("/").split("/") if ref != "#" else ():
        key = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and key in node:
            node = node[key]
        elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        else:
            return None
    return node


_BOUNDS = (
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
)
_DESCRIBED = re.compile(r"\{([^{}]*)\}\s*$")


def _with_described_bounds(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` plus the bounds its description carries in the SDK's ``{key: value}`` form
    (keywords already in the schema win)."""
    desc = schema.get("description")
    m = _DESCRIBED.search(desc) if isinstance(desc, str) else None
    if m is None:
        return schema
    extra: dict[str, Any] = {}
    for item in m.group(1).split(","):
        key, _, value = item.partition(":")
        key = key.strip()
        if key in _BOUNDS and key not in schema:
            try:
                number = float(value.strip())
            except ValueError:
                continue
            extra[key] = int(number) if number.is_integer() else number
    return {**schema, **extra} if extra else schema


def _instance(schema: Any, root: Any, depth: int, text: str) -> Any:
    if not isinstance(schema, dict) or depth > MAX_DEPTH:
        return "demo" if not isinstance(schema, dict) else _empty(schema)
    schema = _with_described_bounds(schema)
    ref = schema.get("$ref")
    if isinstance(ref, str):
        target = _resolve(ref, root)
        if target is not None:
            return _instance(target, root, depth + 1, text)
    if "const" in schema:
        return schema["const"]
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return enum[0]
    for key in ("anyOf", "oneOf"):
        branches = schema.get(key)
        if isinstance(branches, list) and branches:
            chosen = next(
                (b for b in branches if not (isinstance(b, dict) and b.get("type") == "null")), None
            )
            return None if chosen is None else _instance(chosen, root, depth + 1, text)
    all_of = schema.get("allOf")
    if isinstance(all_of, list) and all_of:
        parts = [_instance(m, root, depth + 1, text) for m in all_of]
        if all(isinstance(p, dict) for p in parts):
            merged: dict[str, Any] = {}
            for p in parts:
                merged.update(p)
            return merged
        return parts[0]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object" or (kind is None and isinstance(schema.get("properties"), dict)):
        return _object(schema, root, depth, text)
    if kind == "array":
        return _array(schema, root, depth, text)
    if kind == "integer" or kind == "number":
        return _number(schema, kind == "integer")
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    return _string(schema, text)


def _empty(schema: dict[str, Any]) -> Any:
    kind = schema.get("type")
    return [] if kind == "array" else {} if kind == "object" else None if kind == "null" else "demo"


def _object(schema: dict[str, Any], root: Any, depth: int, text: str) -> dict[str, Any]:
    props = schema.get("properties")
    props = props if isinstance(props, dict) else {}
    required = schema.get("required")
    names = [k for k in required if isinstance(k, str)] if isinstance(required, list) else list(props)
    return {k: _instance(props.get(k, {}), root, depth + 1, text) for k in names}


def _array(schema: dict[str, Any], root: Any, depth: int, text: str) -> list[Any]:
    low = schema.get("minItems")
    high = schema.get("maxItems")
    count = max(low if type(low) is int else 0, 1)
    if type(high) is int:
        count = min(count, high)
    items = schema.get("items")
    prefix = schema.get("prefixItems")
    out: list[Any] = []
    for i in range(count):
        if isinstance(prefix, list) and i < len(prefix):
            out.append(_instance(prefix[i], root, depth + 1, text))
        else:
            out.append(
                _instance(items if isinstance(items, dict) else {"type": "string"}, root, depth + 1, text)
            )
    return out


def _bound(schema: dict[str, Any], key: str) -> float | None:
    value = schema.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def _number(schema: dict[str, Any], integer: bool) -> int | float:
    value = 1.0
    low, high = _bound(schema, "minimum"), _bound(schema, "maximum")
    xlow, xhigh = _bound(schema, "exclusiveMinimum"), _bound(schema, "exclusiveMaximum")
    step = 1.0 if integer else 0.5
    if low is not None and value < low:
        value = math.ceil(low) if integer else low
    if xlow is not None and value <= xlow:
        value = math.floor(xlow) + 1 if integer else xlow + step
    if high is not None and value > high:
        value = math.floor(high) if integer else high
    if xhigh is not None and value >= xhigh:
        value = math.ceil(xhigh) - 1 if integer else xhigh - step
    return int(value) if integer else value


def _string(schema: dict[str, Any], plain: str) -> str:
    fmt = schema.get("format")
    text = _FORMATS.get(fmt, plain) if isinstance(fmt, str) else plain
    low = schema.get("minLength")
    high = schema.get("maxLength")
    if type(low) is int and len(text) < low:
        text = text + "o" * (low - len(text))
    if type(high) is int and len(text) > high:
        text = text[: max(high, 0)]
    return text
