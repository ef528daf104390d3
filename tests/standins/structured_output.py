"""Structured output in the stand-in: the rule Anthropic applies to ``output_config.format``,
and answers built from the request's own schema (as a model under constrained decoding gives).

**Anthropic's rule** (https://platform.claude.com/docs/en/build-with-claude/structured-outputs,
"JSON Schema limitations"): every object must set ``additionalProperties: false`` (the real
message, reported verbatim in ax-llm/ax#458 and veryfront/veryfront-code#3918: "output_config.
format.schema: For 'object' type, 'additionalProperties' must be explicitly set to false";
``additionalProperties: true`` in BerriAI/litellm#35808: "For 'object' type,
'additionalProperties: true' is not supported. Please set 'additionalProperties' to false");
numeric constraints (``minimum``, ``maximum``, ``exclusiveMinimum``, ``exclusiveMaximum``,
``multipleOf``), string length constraints (``minLength``, ``maxLength``), ``minItems`` other
than 0 or 1, ``maxItems`` and string formats outside the documented list are not supported (the
wording of those refusals here is the stand-in's: no recorded example). A model without the
slot (Claude Sonnet 4 / Opus 4 / 4.1 and the Claude 3 families, :data:`NO_NATIVE_PREFIXES`)
refuses ``output_config.format`` altogether (the stand-in's wording). Both the GA
``output_config.format`` and the beta top-level ``output_format`` are checked.

**Structured answers** (:func:`structured`): the stand-in reads the request and answers with a
minimal instance of the schema it asked for: Anthropic ``output_config.format`` -> a text
block of JSON; a forced ``tool_choice`` (``tool``, or ``any`` = the first tool) -> a
``tool_use`` of that tool's ``input_schema``; OpenAI ``response_format.json_schema`` -> JSON
``content``; Gemini ``generationConfig.responseSchema`` / ``responseJsonSchema`` -> a JSON text
part. Whole or streamed, in each API's own shape (:mod:`standins.tool_answers`).
"""

from __future__ import annotations

import json
from typing import Any

from .recordings import Exchange
from .tool_answers import Call, text_answer, tool_call_answer

FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4", "ipv6", "uuid"}
)
UNSUPPORTED = (
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "maxItems",
)
NO_NATIVE_PREFIXES = ("claude-sonnet-4-2025", "claude-opus-4-2025", "claude-opus-4-1", "claude-3", "claude-2")


def _schema_violations(node: Any, path: str, out: list[str]) -> None:
    if isinstance(node, list):
        for i, n in enumerate(node):
            _schema_violations(n, f"{path}[{i}]", out)
        return
    if not isinstance(node, dict):
        return
    kind = node.get("type")
    if kind == "object":
        ap = node.get("additionalProperties")
        if ap is True:
            out.append(
                f"{path}: For 'object' type, 'additionalProperties: true' is not supported. "
                "Please set 'additionalProperties' to false"
            )
        elif ap is not False:
            out.append(f"{path}: For 'object' type, 'additionalProperties' must be explicitly set to false")
    for key in UNSUPPORTED:
        if key in node:
            out.append(f"{path}: For '{kind}' type, property '{key}' is not supported")
    if "minItems" in node and node["minItems"] not in (0, 1):
        out.append(f"{path}: For 'array' type, 'minItems' values other than 0 or 1 are not supported")
    if kind == "string" and "format" in node and node["format"] not in FORMATS:
        out.append(f"{path}: For 'string' type, format {node['format']!r} is not supported")
    for key in ("properties", "$defs", "definitions"):
        sub = node.get(key)
        if isinstance(sub, dict):
            for name, s in sub.items():
                _schema_violations(s, f"{path}.{key}.{name}", out)
    for key in ("items", "anyOf", "allOf", "oneOf"):
        if key in node:
            _schema_violations(node[key], f"{path}.{key}", out)


def anthropic_violations(body: dict[str, Any]) -> list[str]:
    """What Anthropic would refuse in ``body``'s structured-output request (empty: nothing)."""
    out: list[str] = []
    for where, fmt in (
        ("output_config.format", (body.get("output_config") or {}).get("format")),
        ("output_format", body.get("output_format")),
    ):
        if fmt is None:
            continue
        model = str(body.get("model") or "")
        if model.startswith(NO_NATIVE_PREFIXES):
            out.append(f"{where}: structured outputs are not supported by model {model!r}")
            continue
        _schema_violations(fmt.get("schema"), f"{where}.schema", out)
    return out


# ------------------------------------------------------------------------------- answers


def instance(schema: Any, root: Any = None, depth: int = 0) -> Any:
    """A minimal value of ``schema`` (JSON Schema or Gemini ``Schema``: types in any case)."""
    root = schema if root is None else root
    if not isinstance(schema, dict) or depth > 10:
        return "x"
    if isinstance(schema.get("$ref"), str):
        node: Any = root
        for key in schema["$ref"].lstrip("#/").split("/"):
            node = node.get(key, {}) if isinstance(node, dict) else {}
        return instance(node, root, depth + 1)
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    for key in ("anyOf", "oneOf"):
        if schema.get(key):
            branch = next(
                (b for b in schema[key] if str(b.get("type", "")).lower() != "null"), schema[key][0]
            )
            return instance(branch, root, depth + 1)
    kind = str(schema.get("type", "string")).lower()
    if kind == "object":
        props = schema.get("properties") or {}
        names = schema.get("required") if isinstance(schema.get("required"), list) else list(props)
        return {k: instance(props.get(k, {}), root, depth + 1) for k in names}
    if kind == "array":
        return [instance(schema.get("items") or {}, root, depth + 1)]
    if kind == "integer":
        return 1
    if kind == "number":
        return 1.5
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    return "2026-01-01T00:00:00Z" if schema.get("format") == "date-time" else "x"


def _anthropic(body: dict[str, Any], stream: bool) -> Exchange:
    fmt = (body.get("output_config") or {}).get("format") or body.get("output_format")
    choice = body.get("tool_choice") or {}
    tools = body.get("tools") or []
    if choice.get("type") in ("tool", "any") and tools:
        tool = next((t for t in tools if t["name"] == choice.get("name")), tools[0])
        call = Call("toolu_structured_1", tool["name"], json.dumps(instance(tool.get("input_schema"))))
        return tool_call_answer("anthropic_messages", [call], stream=stream)
    text = json.dumps(instance(fmt["schema"])) if fmt else "no schema was asked for"
    return text_answer("anthropic_messages", text, stream=stream)


def _openai(body: dict[str, Any], stream: bool) -> Exchange:
    fmt = body.get("response_format") or {}
    schema = (fmt.get("json_schema") or {}).get("schema")
    text = json.dumps(instance(schema)) if schema is not None else json.dumps({"answer": "x"})
    return text_answer("openai_chat", text, stream=stream)


def _gemini(body: dict[str, Any], stream: bool) -> Exchange:
    gen = body.get("generationConfig") or {}
    schema = gen.get("responseJsonSchema") or gen.get("responseSchema")
    text = json.dumps(instance(schema)) if schema is not None else json.dumps({"answer": "x"})
    return text_answer("gemini", text, stream=stream)


def structured(api: str, body: dict[str, Any], stream: bool) -> Exchange:
    """The answer of ``api`` to ``body``: a minimal instance of the schema it asked for."""
    return {"anthropic_messages": _anthropic, "openai_chat": _openai, "gemini": _gemini}[api](body, stream)
