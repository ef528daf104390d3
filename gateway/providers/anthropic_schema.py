"""JSON Schema -> the subset Anthropic structured outputs accept in ``output_config.format``,
and which Claude models have that slot at all.

Reference: https://platform.claude.com/docs/en/build-with-claude/structured-outputs ("JSON
Schema limitations"). Anthropic compiles the schema into a grammar and refuses a request whose
schema uses what it cannot compile: numeric constraints (``minimum``, ``maximum``,
``multipleOf``...), string constraints (``minLength``, ``maxLength``), array constraints beyond
``minItems`` 0 or 1, ``additionalProperties`` other than ``false``, string formats outside its
list. Every object must say ``additionalProperties: false``.

:func:`to_anthropic_schema` does what the official SDK's own ``transform_schema`` does
(anthropic-sdk-python ``src/anthropic/lib/_parse/_transform.py``, the transform that
``client.messages.parse(output_format=Model)`` applies before sending), so a schema the gateway
sends is the one the SDK would have sent:

* ``$defs`` are kept (each transformed); a ``$ref`` node is kept as it is;
* ``oneOf`` -> ``anyOf``; ``anyOf`` / ``allOf`` members transformed;
* primitive ``enum`` / ``const`` kept (and then no ``type``);
* objects: ``properties`` transformed, ``additionalProperties: false``, ``required`` kept;
* strings: ``format`` kept when Anthropic supports it; arrays: ``items`` transformed,
  ``minItems`` kept when 0 or 1;
* ``title`` and ``description`` kept.

**Nothing that changes meaning is lost silently**: every other keyword (``minimum: 1``,
``maxLength: 5``, an unsupported ``format``...) is written into the node's ``description`` as
``{minimum: 1, maxLength: 5}``, exactly as the SDK does, so the model reads it. A node with no
``type``, ``anyOf``, ``oneOf``, ``allOf``, ``$ref`` or literal (e.g. ``{}``, "any value") cannot
be expressed: :class:`SchemaNotExpressible` (the adapter then uses the forced-tool form, which
takes any JSON Schema). The transform is a fixed point: applied to its own output it changes
nothing.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["SUPPORTED_STRING_FORMATS", "SchemaNotExpressible", "has_native_output", "to_anthropic_schema"]

SUPPORTED_STRING_FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4", "ipv6", "uuid"}
)
"""String formats Anthropic structured outputs accept (the SDK's ``SupportedStringFormats``)."""

_TYPES = frozenset({"object", "array", "string", "integer", "number", "boolean", "null"})


class SchemaNotExpressible(ValueError):
    """A schema node Anthropic structured outputs cannot state; ``path`` is its JSON path."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path


def _primitive(value: object) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))


def to_anthropic_schema(schema: dict[str, Any], path: str = "$") -> dict[str, Any]:
    """``schema`` (a JSON Schema object) transformed as the module docstring says; a new dict,
    ``schema`` is not changed. Raises :class:`SchemaNotExpressible` for a node with nothing to
    constrain it (no type, combinator, reference or literal), or a type that is not JSON
    Schema's."""
    node = dict(schema)
    out: dict[str, Any] = {}
    defs = node.pop("$defs", None)
    if isinstance(defs, dict):
        out["$defs"] = {
            name: to_anthropic_schema(d, f"{path}.$defs.{name}") if isinstance(d, dict) else d
            for name, d in defs.items()
        }
    elif defs is not None:
        node["$defs"] = defs
    ref = node.pop("$ref", None)
    if ref is not None:
        out["$ref"] = ref
        return out
    type_ = node.pop("type", None)
    any_of = node.pop("anyOf", None)
    one_of = node.pop("oneOf", None)
    all_of = node.pop("allOf", None)
    enum = node.get("enum")
    if isinstance(enum, list) and enum and all(_primitive(v) for v in enum):
        out["enum"] = list(node.pop("enum"))
    if "const" in node and _primitive(node["const"]):
        out["const"] = node.pop("const")
    literal = "enum" in out or "const" in out
    if literal:
        type_ = None
    if isinstance(any_of, list):
        out["anyOf"] = [_member(m, f"{path}.anyOf[{i}]") for i, m in enumerate(any_of)]
    elif isinstance(one_of, list):
        out["anyOf"] = [_member(m, f"{path}.oneOf[{i}]") for i, m in enumerate(one_of)]
    elif isinstance(all_of, list):
        out["allOf"] = [_member(m, f"{path}.allOf[{i}]") for i, m in enumerate(all_of)]
    elif not literal:
        if type_ is None:
            raise SchemaNotExpressible(
                path, "a schema without type, anyOf, oneOf, allOf, $ref, enum or const"
            )
        if not isinstance(type_, str) or type_ not in _TYPES:
            raise SchemaNotExpressible(
                path, f"type {type_!r} (structured outputs take one JSON type per node)"
            )
        out["type"] = type_
    for key in ("description", "title"):
        value = node.pop(key, None)
        if value is not None:
            out[key] = value
    if type_ == "object":
        props = node.pop("properties", None) or {}
        out["properties"] = {
            k: _member(v, f"{path}.properties.{k}")
            for k, v in (props.items() if isinstance(props, dict) else ())
        }
        node.pop("additionalProperties", None)
        out["additionalProperties"] = False
        required = node.pop("required", None)
        if required is not None:
            out["required"] = list(required) if isinstance(required, list) else required
    elif type_ == "string":
        fmt = node.pop("format", None)
        if fmt in SUPPORTED_STRING_FORMATS:
            out["format"] = fmt
        elif fmt:
            node["format"] = fmt  # described below
    elif type_ == "array":
        items = node.pop("items", None)
        if items is not None:
            out["items"] = _member(items, f"{path}.items")
        min_items = node.pop("minItems", None)
        if min_items in (0, 1) and type(min_items) is int:
            out["minItems"] = min_items
        elif min_items is not None:
            node["minItems"] = min_items  # described below
    if node:
        described = ", ".join(f"{k}: {v}" for k, v in node.items())
        prior = out.get("description")
        out["description"] = (f"{prior}\n\n" if prior is not None else "") + "{" + described + "}"
    return out


def _member(value: Any, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise SchemaNotExpressible(path, f"a schema must be an object, got {type(value).__name__}")
    return to_anthropic_schema(value, path)


_FAMILY = re.compile(
    r"claude-(?:(opus|sonnet|haiku)-(\d+)(?:-(\d)(?!\d))?|(\d)(?:-(\d))?-(?:opus|sonnet|haiku))"
)


def has_native_output(model: str) -> bool:
    """Whether Claude ``model`` has the ``output_config.format`` slot: Anthropic lists Claude
    Opus 4.5 / 4.6, Sonnet 4.5 / 4.6, Haiku 4.5 and later (the structured-outputs page above;
    Opus 4.1 had it in beta only). Older families (``claude-3-*``, ``claude-3-5-*``,
    ``claude-sonnet-4-20250514``, ``claude-opus-4-1-*``...) do not. A model name that names no
    Claude family (a proxy's own id) is taken to be a current model: True. Bedrock / Vertex
    style ids (``us.anthropic.claude-sonnet-4-5-...``, ``claude-haiku-4-5@2025...``) are read
    the same way. (litellm's bundled ``supports_response_schema`` is not this: it is True for
    the Claude 3 models too, because litellm itself emulates the format with a tool.) A
    deployment's ``structured_output`` setting overrides this rule."""
    name = model.lower()
    if "claude-2" in name or "claude-instant" in name:
        return False
    m = _FAMILY.search(name)
    if m is None:
        return True
    if m.group(1) is not None:  # claude-<family>-<major>[-<minor>]
        major, minor = int(m.group(2)), int(m.group(3) or 0)
    else:  # claude-<major>[-<minor>]-<family> (the Claude 3 naming)
        major, minor = int(m.group(4)), int(m.group(5) or 0)
    return major > 4 or (major == 4 and minor >= 5)
