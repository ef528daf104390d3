"""JSON Schema -> the OpenAPI-3.0 subset Gemini accepts in ``FunctionDeclaration.parameters``
and ``generationConfig.responseSchema``.

Gemini's ``Schema`` object (ai.google.dev/api/caching#Schema; js-genai ``types.Schema``)
knows only: ``type format description nullable enum items minItems maxItems properties
required minProperties maxProperties minLength maxLength pattern anyOf propertyOrdering
default minimum maximum``. Any other key (``$schema``, ``additionalProperties``, ``$ref``,
``$defs``, ``const``, ``oneOf``, ``allOf``, ``examples``, ``exclusiveMinimum``...) is rejected with
HTTP 400 "Invalid JSON payload received. Unknown name ...". This module rewrites what it can
and drops the rest:

* ``$ref`` to ``#/$defs/X`` or ``#/definitions/X`` is inlined; a recursive reference is cut
  to ``{"type": "object"}`` at its second occurrence on one path.
* ``type: [T, "null"]`` -> ``type: T, nullable: true``; several non-null types -> ``anyOf``.
* ``anyOf``/``oneOf`` with a ``{"type": "null"}`` branch -> ``nullable``; ``oneOf`` -> ``anyOf``;
  a single remaining branch is inlined.
* ``allOf`` is merged into one schema (properties and required united).
* ``const: "x"`` -> ``enum: ["x"]``; enums that are not all strings are dropped (Gemini
  enums are strings).
* ``format`` is kept only for ``enum``, ``date-time``, ``int32``, ``int64``, ``float``,
  ``double`` (the Gemini Developer API rejects other formats).
* An ``object`` with no properties keeps just ``type`` (Gemini rejects an empty
  ``properties`` map); ``required`` keeps only names that are properties.
* ``title`` and ``example`` are dropped.
"""

from __future__ import annotations

from typing import Any

_KEEP_SCALARS = (
    "description",
    "nullable",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
    "minLength",
    "maxLength",
    "pattern",
    "default",
    "minimum",
    "maximum",
    "propertyOrdering",
)
_FORMATS = {"enum", "date-time", "int32", "int64", "float", "double"}


def to_gemini_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Convert a JSON Schema object to Gemini's ``Schema`` subset (see module docstring).

    Pure function; the input is not modified. Returns ``{}`` for a schema that constrains
    nothing.
    """
    defs: dict[str, Any] = {}
    for key in ("$defs", "definitions"):
        if isinstance(schema.get(key), dict):
            defs.update({f"#/{key}/{name}": value for name, value in schema[key].items()})
    return _convert(schema, defs, ())


def function_parameters(schema: dict[str, Any]) -> dict[str, Any] | None:
    """``FunctionDeclaration.parameters`` for a tool's JSON Schema, or None when the tool
    takes no parameters (Gemini: "For function with no parameters, this can be left unset")."""
    out = to_gemini_schema(schema)
    if not out.get("properties"):
        return None
    return out


def _merge_all_of(node: dict[str, Any]) -> dict[str, Any]:
    merged: dict[str, Any] = {k: v for k, v in node.items() if k != "allOf"}
    for sub in node.get("allOf") or []:
        if not isinstance(sub, dict):
            continue
        for key, value in sub.items():
            if key == "properties" and isinstance(value, dict):
                merged.setdefault("properties", {}).update(value)
            elif key == "required" and isinstance(value, list):
                merged["required"] = list(dict.fromkeys([*merged.get("required", []), *value]))
            else:
                merged.setdefault(key, value)
    return merged


def _convert(node: Any, defs: dict[str, Any], seen: tuple[str, ...]) -> dict[str, Any]:
    if not isinstance(node, dict):
        return {}
    ref = node.get("$ref")
    if isinstance(ref, str):
        if ref in seen or ref not in defs:
            return {"type": "object"}
        target = dict(defs[ref])
        extra = {k: v for k, v in node.items() if k != "$ref"}
        target.update(extra)
        return _convert(target, defs, (*seen, ref))
    if "allOf" in node:
        node = _merge_all_of(node)

    out: dict[str, Any] = {}
    nullable = False

    raw_type = node.get("type")
    types: list[str] = []
    if isinstance(raw_type, str):
        types = [raw_type]
    elif isinstance(raw_type, list):
        types = [t for t in raw_type if isinstance(t, str)]
    if "null" in types:
        nullable = True
        types = [t for t in types if t != "null"]

    branches_key = "anyOf" if "anyOf" in node else ("oneOf" if "oneOf" in node else None)
    if branches_key is not None:
        branches = [b for b in node.get(branches_key) or [] if isinstance(b, dict)]
        non_null = [b for b in branches if b.get("type") != "null"]
        if len(non_null) < len(branches):
            nullable = True
        converted = [_convert(b, defs, seen) for b in non_null]
        if len(converted) == 1:
            out.update(converted[0])
        elif converted:
            out["anyOf"] = converted

    if len(types) == 1:
        out["type"] = types[0]
    elif len(types) > 1:
        out["anyOf"] = [{"type": t} for t in types]

    for key in _KEEP_SCALARS:
        if key in node:
            out[key] = node[key]
    fmt = node.get("format")
    if isinstance(fmt, str) and fmt in _FORMATS:
        out["format"] = fmt

    if "const" in node and isinstance(node["const"], str):
        out["enum"] = [node["const"]]
        out.setdefault("type", "string")
    enum = node.get("enum")
    if isinstance(enum, list) and enum and all(isinstance(v, str) for v in enum):
        out["enum"] = list(enum)

    props = node.get("properties")
    if isinstance(props, dict) and props:
        out["properties"] = {name: _convert(sub, defs, seen) for name, sub in props.items()}
        required = [r for r in node.get("required") or [] if r in props]
        if required:
            out["required"] = required
        out.setdefault("type", "object")

    items = node.get("items")
    if isinstance(items, dict):
        out["items"] = _convert(items, defs, seen)
    elif isinstance(items, list) and items:
        # Tuple validation has no Gemini form: accept any of the positional schemas.
        converted_items = [_convert(i, defs, seen) for i in items]
        out["items"] = converted_items[0] if len(converted_items) == 1 else {"anyOf": converted_items}

    if nullable:
        out["nullable"] = True
    return out
