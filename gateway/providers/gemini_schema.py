"""JSON Schema -> the ``Schema`` subset Gemini accepts in ``FunctionDeclaration.parameters`` and
``generationConfig.responseSchema``; one normalisation for upstream Gemini requests
(:mod:`gateway.providers.gemini_request`) and ``GET /v1/mcp/tools?format=gemini``
(:mod:`gateway.providers.tool_formats`).

**The target.** Gemini's ``Schema`` (ai.google.dev/api/caching#Schema, v1beta; the same fields
in js-genai ``types.Schema`` and Vertex ``v1/Schema``) has exactly these fields: ``type format
title description nullable enum maxItems minItems properties required minProperties
maxProperties minLength maxLength pattern example anyOf propertyOrdering default items minimum
maximum``. It is parsed as a protobuf message, so any other member at any depth, or a value of
the wrong JSON type, fails the whole request with HTTP 400 ``INVALID_ARGUMENT`` "Invalid JSON
payload received. Unknown name "additionalProperties" at
'tools[0].function_declarations[4].parameters.properties[13].value.any_of[0].items': Cannot find
field." (as reported in ax-llm/ax#293 and glowingjade/obsidian-smart-composer#455). ``enum``
holds strings only ("Possible values of the element of Type.STRING with enum format");
``format`` is honoured for ``float``/``double`` (NUMBER), ``int32``/``int64`` (INTEGER),
``enum``/``date-time`` (STRING), and the Developer API refuses other string formats (Firebase AI
``SchemaShared.format``: "must be either 'enum' or 'date-time', otherwise requests will fail").

**Why not ``parametersJsonSchema``.** ``FunctionDeclaration.parametersJsonSchema`` (v1beta and
Vertex ``v1``: "Describes the parameters to the function in JSON Schema format ... This field is
mutually exclusive with parameters", googleapis ``GoogleCloudAiplatformV1FunctionDeclaration``)
takes JSON Schema with ``$ref``, ``oneOf``, ``additionalProperties`` and more, which would carry
more meaning. It is not the target here: its accepted keyword set is documented only by example
(the structured-output guide lists a subset for ``responseJsonSchema``, and refuses or ignores
the rest), older API versions and the Gemini OpenAI-compatible endpoint know only
``parameters``, and the recorded Gemini traffic (``tests/fixtures/fantasy``, ``simonw-llm``)
uses ``parameters``/``responseSchema``; a client listing tools in Gemini's format gets the
shape every Gemini client accepts.

**The rules** (recursive: everywhere a schema can appear, i.e. ``properties`` values, ``items``,
``anyOf`` members, and what ``$ref``, ``allOf``, ``oneOf``, type arrays and ``prefixItems``
become):

* ``$ref`` into the same document (``#/$defs/X``, ``#/definitions/X``, any JSON pointer, ``#``)
  is inlined, its sibling keywords laid over the target. A reference already expanded
  :data:`MAX_REF_DEPTH` times on one path (recursion) is cut to the target's type with a
  description saying the structure repeats; a reference that cannot be resolved becomes a
  description naming it. At most :data:`MAX_NODES` schema nodes are produced; past that, further
  references are cut the same way.
* ``allOf`` is merged into one schema (properties and ``required`` united, a property in several
  members merged again, the first value of any other keyword kept, a conflicting one described).
* ``type: [T, "null"]``, an ``anyOf``/``oneOf`` branch ``{"type": "null"}``, ``const: null`` or
  ``null`` among ``enum`` values -> ``nullable: true``; several non-null types -> ``anyOf`` of one
  schema per type, each carrying the keywords that apply to its type; ``oneOf`` -> ``anyOf`` (the
  "exactly one" is not checked by Gemini); one remaining branch is inlined.
* ``const: "x"`` -> ``enum: ["x"]``; ``enum`` / ``const`` values that are not all strings keep
  the type and are described ("one of: 1, 2, 3").
* ``examples`` -> ``example`` (its first value); ``title``, ``default`` and ``example`` are kept.
* A ``required`` name that is not a property, or an ``object`` without properties, cannot be
  stated (Gemini refuses an empty ``properties`` map): described.
* **Nothing that changes meaning is lost silently.** A constraint Gemini cannot express
  (``additionalProperties``, ``patternProperties``, ``propertyNames``, ``dependentRequired``,
  ``exclusiveMinimum``/``exclusiveMaximum``, ``multipleOf``, ``uniqueItems``, ``contains``,
  ``not``, ``if``/``then``/``else``, other formats, tuple positions, ``readOnly`` /
  ``writeOnly`` / ``deprecated``, unknown keywords unless their value is empty, a value of the
  wrong type for a Gemini field) is written into the node's ``description`` as a sentence the
  model reads ("Also: a multiple of 5; greater than 0."). Only annotations that say nothing
  about values are dropped:
  ``$schema``, ``$id``, ``$anchor``, ``$dynamicAnchor``, ``$vocabulary``, ``$comment``, and the
  ``$defs``/``definitions`` maps once inlined.

The output of :func:`to_gemini_schema` is a fixed point: normalising it again changes nothing.
"""

from __future__ import annotations

import math
from typing import Any

import orjson

MAX_REF_DEPTH = 2
"""Times one ``$ref`` is expanded on one path before a recursive structure is cut."""

MAX_NODES = 2_000
"""Schema nodes one normalisation produces at most (``$ref`` inlining can multiply them)."""

ACCEPTED = frozenset(
    {
        "type",
        "format",
        "title",
        "description",
        "nullable",
        "enum",
        "maxItems",
        "minItems",
        "properties",
        "required",
        "minProperties",
        "maxProperties",
        "minLength",
        "maxLength",
        "pattern",
        "example",
        "anyOf",
        "propertyOrdering",
        "default",
        "items",
        "minimum",
        "maximum",
    }
)
"""Every field of Gemini's ``Schema`` (module docstring)."""

_JSON_TYPES = ("string", "number", "integer", "boolean", "object", "array")
_FORMATS = {"number": {"float", "double"}, "integer": {"int32", "int64"}, "string": {"enum", "date-time"}}
_DROPPED = frozenset(
    {"$schema", "$id", "$anchor", "$dynamicAnchor", "$vocabulary", "$comment", "$defs", "definitions"}
)
_BY_TYPE = {
    "string": ("minLength", "maxLength", "pattern"),
    "number": ("minimum", "maximum"),
    "integer": ("minimum", "maximum"),
    "array": ("items", "minItems", "maxItems"),
    "object": ("properties", "required", "minProperties", "maxProperties", "propertyOrdering"),
}
_INTS = ("minItems", "maxItems", "minProperties", "maxProperties", "minLength", "maxLength")


_HANDLED = frozenset(
    {
        *ACCEPTED,
        *_DROPPED,
        "const",
        "oneOf",
        "not",
        "if",
        "then",
        "else",
        "examples",
        "deprecated",
        "readOnly",
        "writeOnly",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "uniqueItems",
        "contains",
        "minContains",
        "maxContains",
        "prefixItems",
        "additionalProperties",
        "patternProperties",
        "propertyNames",
        "dependentRequired",
        "dependentSchemas",
        "unevaluatedProperties",
        "unevaluatedItems",
        "additionalItems",
        "allOf",
        "$ref",
    }
)
"""Keywords :class:`_Normaliser` turns into Gemini fields or words; any other one is written out
as it is ("key: value")."""


def _short(value: Any) -> str:
    """``value`` as compact JSON text (whole: a cut would lose what it says)."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS, default=str).decode()


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _is_number(value: Any) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and not (isinstance(value, float) and not math.isfinite(value))
    )


def _ref_name(ref: str) -> str:
    return ref.rsplit("/", 1)[-1] or "the schema"


class _Normaliser:
    def __init__(self, root: dict[str, Any]) -> None:
        self.root = root
        self.nodes = 0

    # ------------------------------------------------------------------ references

    def _resolve(self, ref: str) -> Any:
        """The target of a same-document reference, or None."""
        if ref == "#":
            return self.root
        if not ref.startswith("#/"):
            return None
        node: Any = self.root
        for raw in ref[2:].split("/"):
            key = raw.replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and key in node:
                node = node[key]
            elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
                node = node[int(key)]
            else:
                return None
        return node

    def _expand(self, node: dict[str, Any], seen: tuple[str, ...]) -> tuple[dict[str, Any], tuple[str, ...]]:
        """``node`` with its ``$ref`` (repeatedly) inlined, and the references followed on the
        way. A reference that cannot be resolved, or that recursion or the node budget stops,
        gives the node without it and a description saying so."""
        while isinstance(node.get("$ref"), str):
            ref = node["$ref"]
            rest = {k: v for k, v in node.items() if k != "$ref"}
            target = self._resolve(ref)
            if not isinstance(target, dict | bool):
                return _cut(rest, f"refers to {ref}, which is not in this schema"), seen
            if seen.count(ref) >= MAX_REF_DEPTH or self.nodes >= MAX_NODES:
                kind = target.get("type") if isinstance(target, dict) else None
                if isinstance(kind, str) and "type" not in rest:
                    rest["type"] = kind
                note = f"the structure of {_ref_name(ref)} repeats here (cut after {MAX_REF_DEPTH} levels)"
                return _cut(rest, note), seen
            seen = (*seen, ref)
            base = dict(target) if isinstance(target, dict) else ({} if target else {"not": {}})
            base.update(rest)
            node = base
        return node, seen

    def _inline(self, value: Any, seen: tuple[str, ...]) -> Any:
        """``value`` (a schema or part of one) with same-document references replaced by
        their targets (each at most :data:`MAX_REF_DEPTH` times on a path), for text that
        must stand without the definitions."""
        if isinstance(value, list):
            return [self._inline(v, seen) for v in value]
        if not isinstance(value, dict):
            return value
        ref = value.get("$ref")
        if isinstance(ref, str) and seen.count(ref) < MAX_REF_DEPTH:
            target = self._resolve(ref)
            if isinstance(target, dict):
                merged = {**target, **{k: v for k, v in value.items() if k != "$ref"}}
                return self._inline(merged, (*seen, ref))
        return {k: self._inline(v, seen) for k, v in value.items() if k not in ("$defs", "definitions")}

    def _text(self, value: Any) -> str:
        """``value`` as JSON text with its references inlined."""
        return _short(self._inline(value, ()))

    # ------------------------------------------------------------------ merging

    def _merge_all_of(
        self, node: dict[str, Any], seen: tuple[str, ...], notes: list[str]
    ) -> tuple[dict[str, Any], tuple[str, ...]]:
        """``node`` with its ``allOf`` members merged in, and the references followed on the
        way (those of every member: the merged node's sub-schemas stand below all of them)."""
        merged: dict[str, Any] = {k: v for k, v in node.items() if k != "allOf"}
        members = node.get("allOf")
        followed = seen
        if not isinstance(members, list):
            notes.append(f"allOf: {_short(members)}")
            return merged, followed
        for member in members:
            if isinstance(member, bool):
                if not member:
                    notes.append("no value is valid here (allOf holds false)")
                continue
            if not isinstance(member, dict):
                continue
            expanded, seen2 = self._expand(member, seen)
            if "allOf" in expanded:
                expanded, seen2 = self._merge_all_of(expanded, seen2, notes)
            followed = (*followed, *seen2[len(seen) :])
            for key, value in expanded.items():
                if key == "properties" and isinstance(value, dict):
                    have = merged.get("properties", {})
                    if not isinstance(have, dict):
                        continue
                    props = dict(have)  # a copy: the input is never changed
                    for name, sub in value.items():
                        props[name] = {"allOf": [props[name], sub]} if name in props else sub
                    merged["properties"] = props
                elif key == "required" and isinstance(value, list):
                    before = merged.get("required")
                    names: list[Any] = before if isinstance(before, list) else []
                    merged["required"] = list(dict.fromkeys([*names, *value]))
                elif key == "type" and "type" in merged and merged["type"] != value:
                    mine, theirs = _type_set(merged["type"]), _type_set(value)
                    both = [t for t in mine if t in theirs or (t == "integer" and "number" in theirs)]
                    both += [t for t in theirs if t == "integer" and "number" in mine and t not in both]
                    if both:
                        merged["type"] = both[0] if len(both) == 1 else both
                    else:
                        types = f"{_short(merged['type'])} and {_short(value)}"
                        notes.append(f"no value is allowed here (allOf requires type {types})")
                elif key == "description" and isinstance(value, str) and isinstance(merged.get(key), str):
                    if value not in merged[key]:
                        merged[key] = f"{merged[key]} {value}"
                elif key not in merged:
                    merged[key] = value
                elif merged[key] != value and key not in _DROPPED:
                    notes.append(f"{key} {self._text(value)} as well (allOf)")
        return merged, followed

    # ------------------------------------------------------------------ one node

    def node(self, schema: Any, seen: tuple[str, ...] = ()) -> dict[str, Any]:
        """One schema, normalised."""
        self.nodes += 1
        if schema is True or schema == {}:
            return {}
        if schema is False:
            return {"description": "no value is allowed here"}
        if not isinstance(schema, dict):
            return {"description": f"schema: {_short(schema)}"}
        expanded, seen = self._expand(schema, seen)
        notes: list[str] = []
        if "allOf" in expanded:
            expanded, seen = self._merge_all_of(expanded, seen, notes)
        return self._build(expanded, seen, notes)

    def _build(self, node: dict[str, Any], seen: tuple[str, ...], notes: list[str]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        nullable = node.get("nullable") is True
        if "nullable" in node and not isinstance(node["nullable"], bool):
            notes.append(f"nullable: {_short(node['nullable'])}")

        # types
        raw_type = node.get("type")
        types: list[str] = []
        for t in [raw_type] if isinstance(raw_type, str) else raw_type if isinstance(raw_type, list) else []:
            if t == "null":
                nullable = True
            elif isinstance(t, str) and t.lower() in _JSON_TYPES:
                if t.lower() not in types:
                    types.append(t.lower())
            else:
                notes.append(f"type {_short(t)}")
        if raw_type is not None and not isinstance(raw_type, str | list):
            notes.append(f"type {_short(raw_type)}")

        # const / enum
        values: list[Any] | None = None
        if "const" in node:
            values = [node["const"]]
        if isinstance(node.get("enum"), list):
            values = list(node["enum"]) if values is None else [v for v in values if v in node["enum"]]
        elif "enum" in node:
            notes.append(f"enum: {_short(node['enum'])}")
        if values is not None:
            if None in values:
                nullable = True
                values = [v for v in values if v is not None]
            if values and all(isinstance(v, str) for v in values):
                out["enum"] = values
                if types and "string" not in types:
                    notes.append(
                        "no value is allowed here (type " + " or ".join(types) + ", the values are strings)"
                    )
                types = ["string"]  # the values are strings: only the string type applies
            elif values:
                notes.append("one of: " + ", ".join(_short(v) for v in values))
                if not types:
                    types = _types_of(values)
            elif not nullable:
                notes.append("no value is allowed here")
            else:
                notes.append("must be null")

        # combinators
        branches: list[Any] = []
        for key in ("anyOf", "oneOf"):
            value = node.get(key)
            if isinstance(value, list):
                branches += value
            elif value is not None:
                notes.append(f"{key}: {_short(value)}")
        if "anyOf" in node and "oneOf" in node:
            notes.append("of the alternatives listed, one from each of two groups applies (anyOf and oneOf)")
        converted: list[dict[str, Any]] = []
        for b in branches:
            if b is False:
                continue
            c = self.node(b, seen)
            if c.get("nullable") is True and not set(c) - {"nullable", "title"}:
                nullable = True  # a branch that only allows null
                continue
            converted.append(c)
        for key, phrase in (("not", "must not match"), ("if", "if it matches")):
            if key in node:
                text = f"{phrase} {self._text(node[key])}"
                if key == "if":
                    if "then" in node:
                        text += f", then it must match {self._text(node['then'])}"
                    if "else" in node:
                        text += f", else it must match {self._text(node['else'])}"
                notes.append(text)

        # the per-type keywords, for the single type or for each type of a type array
        typed = {t: self._typed(t, node, seen, notes) for t in types}
        if len(types) == 1:
            out.update(typed[types[0]])
            out["type"] = types[0]
        elif len(types) > 1:
            per_type = [{"type": t, **typed[t]} for t in types]
            converted = converted or per_type
            if branches and per_type:
                notes.append("type: " + " or ".join(types))
        else:
            out.update(self._typed(None, node, seen, notes))

        if converted:
            if len(converted) == 1 and _inlinable(converted[0], out):
                out.update(converted[0])
            else:
                out["anyOf"] = converted

        # annotations
        for key in ("title", "description"):
            value = node.get(key)
            if isinstance(value, str):
                inlined = out.get(key)  # from the one alternative laid in above: kept after this one
                if key == "description" and inlined and value:
                    out[key] = f"{value}\n{inlined}"
                elif value or not inlined:
                    out[key] = value
            elif value is not None:
                notes.append(f"{key}: {_short(value)}")
        if "default" in node:
            out["default"] = node["default"]
        if "example" in node:
            out["example"] = node["example"]
        elif isinstance(node.get("examples"), list) and node["examples"]:
            out["example"] = node["examples"][0]
        for key, phrase in (
            ("deprecated", "deprecated"),
            ("readOnly", "read-only"),
            ("writeOnly", "write-only"),
        ):
            if node.get(key) is True:
                notes.append(phrase)

        # every keyword not handled above says what it says in words
        for key, value in node.items():
            if key not in _HANDLED and value not in (None, "", [], {}):  # an empty value says nothing
                notes.append(f"{key}: {self._text(value)}")

        if nullable:
            out["nullable"] = True
        if notes:
            extra = "Also: " + "; ".join(dict.fromkeys(notes)) + "."
            out["description"] = f"{out['description']}\n{extra}" if out.get("description") else extra
        return out

    def _typed(
        self, kind: str | None, node: dict[str, Any], seen: tuple[str, ...], notes: list[str]
    ) -> dict[str, Any]:
        """The keywords of ``node`` that apply to type ``kind`` (all of them for None),
        normalised; what cannot be expressed goes to ``notes``."""
        out: dict[str, Any] = {}
        applies = (lambda k: True) if kind is None else (lambda k: k in _BY_TYPE.get(kind, ()))

        fmt = node.get("format")
        if fmt is not None and (kind is None or kind in ("string", "number", "integer")):
            allowed = _FORMATS.get(kind or "", set()) if kind else set().union(*_FORMATS.values())
            if isinstance(fmt, str) and fmt in allowed:
                out["format"] = fmt
            else:
                notes.append(f"format {_short(fmt)}")

        for key in _INTS:
            if key in node and applies(key):
                if _is_int(node[key]):
                    out[key] = node[key]
                else:
                    notes.append(f"{key}: {_short(node[key])}")
        if "pattern" in node and applies("pattern"):
            if isinstance(node["pattern"], str):
                out["pattern"] = node["pattern"]
            else:
                notes.append(f"pattern: {_short(node['pattern'])}")
        for key in ("minimum", "maximum"):
            if key in node and applies(key):
                if _is_number(node[key]):
                    out[key] = node[key]
                else:
                    notes.append(f"{key}: {_short(node[key])}")
        if kind is None or kind in ("number", "integer"):
            for key, phrase in (("exclusiveMinimum", "greater than"), ("exclusiveMaximum", "less than")):
                value = node.get(key)
                if value is True:
                    bound = node.get("minimum" if key == "exclusiveMinimum" else "maximum")
                    notes.append(f"{phrase} {_short(bound)}" if bound is not None else f"{key}: true")
                elif _is_number(value):
                    notes.append(f"{phrase} {_short(value)}")
                elif value not in (None, False):
                    notes.append(f"{key}: {_short(value)}")
            if "multipleOf" in node:
                notes.append(f"a multiple of {_short(node['multipleOf'])}")

        if kind is None or kind == "array":
            self._array(node, seen, out, notes)
        if kind is None or kind == "object":
            self._object(node, seen, out, notes)
        return out

    def _array(
        self, node: dict[str, Any], seen: tuple[str, ...], out: dict[str, Any], notes: list[str]
    ) -> None:
        items = node.get("items")
        prefix = node.get("prefixItems")
        if isinstance(prefix, list) and prefix:  # 2020-12: prefixItems, then items for the rest
            positional, rest = prefix, items
            if isinstance(items, list):  # both drafts at once: every listed position counts
                positional, rest = [*prefix, *items], node.get("additionalItems")
        elif isinstance(items, list):  # draft 4-2019: items as a list, additionalItems for the rest
            positional, rest = items, node.get("additionalItems")
        else:
            positional, rest = None, None
        if positional is not None:
            kinds = list(positional)
            if rest is not None and rest is not False and not isinstance(rest, list):
                kinds.append(rest)
            unique = list(
                {orjson.dumps(k, option=orjson.OPT_SORT_KEYS, default=str): k for k in kinds}.values()
            )
            if unique:  # any item is one of the positional kinds: the rules of anyOf apply to them
                out["items"] = self.node(unique[0] if len(unique) == 1 else {"anyOf": unique}, seen)
            if len(positional) > 1 or (positional and rest is False):
                notes.append(f"items by position: {self._text(positional)}")
            if rest is False and "maxItems" not in node:
                out["maxItems"] = len(positional)
        elif isinstance(items, dict | bool):
            out["items"] = self.node(items, seen)
        elif items is not None:
            notes.append(f"items: {_short(items)}")
        if node.get("uniqueItems") is True:
            notes.append("items must be unique")
        if "unevaluatedItems" in node:
            notes.append(f"unevaluated items: {self._text(node['unevaluatedItems'])}")
        if "contains" in node:
            text = f"contains an item matching {self._text(node['contains'])}"
            if "minContains" in node or "maxContains" in node:
                low, high = _short(node.get("minContains", 1)), _short(node.get("maxContains", "any"))
                text += f" ({low} to {high} times)"
            notes.append(text)

    def _object(
        self, node: dict[str, Any], seen: tuple[str, ...], out: dict[str, Any], notes: list[str]
    ) -> None:
        props = node.get("properties")
        names: list[str] = []
        if isinstance(props, dict):
            converted = {str(k): self.node(v, seen) for k, v in props.items()}
            if converted:
                out["properties"] = converted
                names = list(converted)
        elif props is not None:
            notes.append(f"properties: {_short(props)}")
        required = node.get("required")
        if isinstance(required, list):
            kept = [r for r in dict.fromkeys(required) if isinstance(r, str) and r in names]
            if kept:
                out["required"] = kept
            missing = [r for r in dict.fromkeys(required) if r not in kept]
            if missing:
                notes.append("requires " + ", ".join(_short(r) for r in missing) + " too")
        elif required is not None and required is not False:
            notes.append(f"required: {_short(required)}")
        order = node.get("propertyOrdering")
        if isinstance(order, list) and names and all(isinstance(o, str) and o in names for o in order):
            out["propertyOrdering"] = list(order)
        elif order is not None:
            notes.append(f"property order: {_short(order)}")
        extra = node.get("additionalProperties")
        if extra is False:
            notes.append("no other properties are allowed")
        elif isinstance(extra, dict) and extra:
            notes.append(f"other properties must match {self._text(extra)}")
        elif extra not in (None, True, {}):
            notes.append(f"additionalProperties: {_short(extra)}")
        for key, phrase in (
            ("patternProperties", "properties matching a pattern"),
            ("propertyNames", "property names must match"),
            ("dependentRequired", "required together"),
            ("dependentSchemas", "dependent schemas"),
            ("unevaluatedProperties", "unevaluated properties"),
        ):
            if key in node:
                notes.append(f"{phrase}: {self._text(node[key])}")


_TYPED_KEYS = frozenset(k for keys in _BY_TYPE.values() for k in keys)


def _inlinable(branch: dict[str, Any], out: dict[str, Any]) -> bool:
    """Whether the only alternative ``branch`` can be laid into ``out`` as is: no keyword in
    both, and no keyword of ``out`` that the branch's type would make void."""
    if set(branch) & set(out):
        return False
    kind = branch.get("type")
    if isinstance(kind, str):
        return not any(k in _TYPED_KEYS and k not in _BY_TYPE.get(kind, ()) for k in out)
    return True


def _type_set(value: Any) -> list[str]:
    """A ``type`` keyword's value as a list of type names."""
    if isinstance(value, str):
        return [value]
    return [t for t in value if isinstance(t, str)] if isinstance(value, list) else []


def _types_of(values: list[Any]) -> list[str]:
    """The JSON type of ``values`` when they share one (integers inside numbers count as
    numbers), else none."""
    kinds = set()
    for v in values:
        if isinstance(v, bool):
            kinds.add("boolean")
        elif isinstance(v, int):
            kinds.add("integer")
        elif isinstance(v, float):
            kinds.add("number")
        elif isinstance(v, str):
            kinds.add("string")
        elif isinstance(v, list):
            kinds.add("array")
        elif isinstance(v, dict):
            kinds.add("object")
    if kinds == {"integer", "number"}:
        return ["number"]
    return list(kinds) if len(kinds) == 1 else []


def _cut(node: dict[str, Any], note: str) -> dict[str, Any]:
    """``node`` (without ``$ref``) with ``note`` added to its description."""
    out = dict(node)
    desc = out.get("description")
    out["description"] = f"{desc} ({note})" if isinstance(desc, str) and desc else note[0].upper() + note[1:]
    return out


def to_gemini_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` (a JSON Schema object) as Gemini's ``Schema`` (rules in the module docstring):
    only :data:`ACCEPTED` fields at every level, values of the right JSON type, what cannot be
    expressed written into descriptions. Pure: the input is not modified. ``{}`` for a schema
    that constrains nothing."""
    return _Normaliser(schema).node(schema)


def function_parameters(schema: dict[str, Any]) -> dict[str, Any] | None:
    """``FunctionDeclaration.parameters`` for a tool's JSON Schema, or None when the tool takes
    no parameters (Gemini: "For function with no parameters, this can be left unset"; an
    object schema with an empty ``properties`` map is refused)."""
    out = to_gemini_schema(schema)
    if not out.get("properties"):
        return None
    return out


def function_declaration(name: str, description: str | None, schema: dict[str, Any]) -> dict[str, Any]:
    """One ``FunctionDeclaration``: ``name``, ``description`` and :func:`function_parameters`.
    A parameter schema that has no properties but says something (a free-form object, a
    constraint) gives that text to the function's description, so nothing is lost."""
    decl: dict[str, Any] = {"name": name}
    params = function_parameters(schema)
    text = description or ""
    if params is None:  # "no other properties" of an object without properties says nothing more
        probe = {k: v for k, v in schema.items() if not (k == "additionalProperties" and v is False)}
        said = to_gemini_schema(probe).get("description")
        if said:
            text = f"{text}\nParameters: {said}" if text else f"Parameters: {said}"
    if text:
        decl["description"] = text
    if params is not None:
        decl["parameters"] = params
    return decl


__all__ = [
    "ACCEPTED",
    "MAX_NODES",
    "MAX_REF_DEPTH",
    "function_declaration",
    "function_parameters",
    "to_gemini_schema",
]
