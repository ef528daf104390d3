"""The rule the Gemini API applies to ``Schema`` objects in a request, for the stand-in.

Gemini parses ``tools[].functionDeclarations[].parameters`` and
``generationConfig.responseSchema`` as its ``Schema`` protobuf message (ai.google.dev/api/caching
#Schema). Protobuf JSON parsing refuses any member that is not a field of the message, at any
depth, and a value of the wrong JSON type for a known field; the whole request is answered with
HTTP 400 ``INVALID_ARGUMENT`` listing every violation. The shape, as real answers show it
(reported verbatim in glowingjade/obsidian-smart-composer#455, ax-llm/ax#293,
openswarm-ai/openswarm#24, google/adk-python#1277; the corpus holds no recorded Gemini 400)::

    {"error": {"code": 400,
               "message": "Invalid JSON payload received. Unknown name \\"additionalProperties\\" at
                           'tools[0].function_declarations[4].parameters.properties[13].value.any_of[0].items':
                           Cannot find field.\\n...",
               "status": "INVALID_ARGUMENT",
               "details": [{"@type": "type.googleapis.com/google.rpc.BadRequest",
                            "fieldViolations": [{"field": "<path>", "description": "<that line>"}]}]}}

Paths use the proto field names (``function_declarations``, ``any_of``), a map entry is
``properties[<index of the entry>].value``. Both the JSON names (``anyOf``) and the proto names
(``any_of``) of a field are accepted, as protobuf JSON parsing does. Type names are accepted in
any case (``"object"``: the llm-gemini cassettes in ``tests/fixtures/simonw-llm`` send lowercase
types and get 200).
"""

from __future__ import annotations

from typing import Any

# Schema fields: JSON name -> (proto name, kind)
SCHEMA_FIELDS: dict[str, tuple[str, str]] = {
    "type": ("type", "type"),
    "format": ("format", "string"),
    "title": ("title", "string"),
    "description": ("description", "string"),
    "nullable": ("nullable", "bool"),
    "enum": ("enum", "strings"),
    "maxItems": ("max_items", "int"),
    "minItems": ("min_items", "int"),
    "properties": ("properties", "schema_map"),
    "required": ("required", "strings"),
    "minProperties": ("min_properties", "int"),
    "maxProperties": ("max_properties", "int"),
    "minLength": ("min_length", "int"),
    "maxLength": ("max_length", "int"),
    "pattern": ("pattern", "string"),
    "example": ("example", "value"),
    "anyOf": ("any_of", "schema_list"),
    "propertyOrdering": ("property_ordering", "strings"),
    "default": ("default", "value"),
    "items": ("items", "schema"),
    "minimum": ("minimum", "number"),
    "maximum": ("maximum", "number"),
}
_BY_NAME = {
    **{k: (k, *v) for k, v in SCHEMA_FIELDS.items()},
    **{v[0]: (k, *v) for k, v in SCHEMA_FIELDS.items()},
}
TYPES = frozenset({"TYPE_UNSPECIFIED", "STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT", "NULL"})


def _unknown(name: str, at: str) -> str:
    return f"Invalid JSON payload received. Unknown name \"{name}\" at '{at}': Cannot find field."


def _invalid(at: str, kind: str, value: Any) -> str:
    return f"Invalid value at '{at}' ({kind}), {value!r}"


def schema_violations(schema: Any, at: str) -> list[tuple[str, str]]:
    """``(field, description)`` for everything the Gemini API refuses in ``schema`` (a
    ``Schema`` at path ``at``), in document order; empty when it is accepted."""
    out: list[tuple[str, str]] = []
    if not isinstance(schema, dict):
        out.append(
            (at, _invalid(at, "type.googleapis.com/google.ai.generativelanguage.v1beta.Schema", schema))
        )
        return out
    for key, value in schema.items():
        known = _BY_NAME.get(key)
        if known is None:
            out.append((at, _unknown(key, at)))
            continue
        _, proto, kind = known
        here = f"{at}.{proto}"
        if kind == "type":
            if not isinstance(value, str) or value.upper() not in TYPES:
                out.append(
                    (
                        here,
                        _invalid(here, "type.googleapis.com/google.ai.generativelanguage.v1beta.Type", value),
                    )
                )
        elif kind == "string" and not isinstance(value, str):
            out.append((here, _invalid(here, "TYPE_STRING", value)))
        elif kind == "bool" and not isinstance(value, bool):
            out.append((here, _invalid(here, "TYPE_BOOL", value)))
        elif kind == "int" and not (
            (isinstance(value, int) and not isinstance(value, bool))
            or (isinstance(value, str) and value.isdigit())
        ):
            out.append((here, _invalid(here, "TYPE_INT64", value)))
        elif kind == "number" and (isinstance(value, bool) or not isinstance(value, int | float)):
            out.append((here, _invalid(here, "TYPE_DOUBLE", value)))
        elif kind == "strings":
            if not isinstance(value, list):
                out.append((here, _invalid(here, "TYPE_STRING", value)))
            else:
                for i, item in enumerate(value):
                    if not isinstance(item, str):
                        out.append((f"{here}[{i}]", _invalid(f"{here}[{i}]", "TYPE_STRING", item)))
        elif kind == "schema":
            out += schema_violations(value, here)
        elif kind == "schema_list":
            if not isinstance(value, list):
                out.append(
                    (
                        here,
                        _invalid(
                            here, "type.googleapis.com/google.ai.generativelanguage.v1beta.Schema", value
                        ),
                    )
                )
            else:
                for i, item in enumerate(value):
                    out += schema_violations(item, f"{here}[{i}]")
        elif kind == "schema_map":
            if not isinstance(value, dict):
                out.append(
                    (
                        here,
                        _invalid(
                            here, "type.googleapis.com/google.ai.generativelanguage.v1beta.Schema", value
                        ),
                    )
                )
            else:
                for i, item in enumerate(value.values()):
                    out += schema_violations(item, f"{here}[{i}].value")
    return out


def request_violations(body: dict[str, Any]) -> list[tuple[str, str]]:
    """Every Schema violation of a ``generateContent`` request body: function declaration
    parameters (``functionDeclarations`` or ``function_declarations``) and the response
    schema."""
    out: list[tuple[str, str]] = []
    for t, tool in enumerate(body.get("tools") or []):
        if not isinstance(tool, dict):
            continue
        decls = tool.get("functionDeclarations", tool.get("function_declarations")) or []
        for d, decl in enumerate(decls):
            if isinstance(decl, dict) and "parameters" in decl:
                out += schema_violations(
                    decl["parameters"], f"tools[{t}].function_declarations[{d}].parameters"
                )
    gen = body.get("generationConfig") or {}
    if isinstance(gen, dict) and "responseSchema" in gen:
        out += schema_violations(gen["responseSchema"], "generation_config.response_schema")
    return out


def one_of_violation(body: dict[str, Any]) -> str | None:
    """The message of Gemini's 400 for ``generationConfig`` fields it takes one of, or None:
    ``responseSchema`` with ``responseJsonSchema`` (the API reference of ``responseJsonSchema``:
    "If this is set, responseSchema must be omitted"), ``thinkingConfig.thinkingBudget`` with
    ``thinkingLevel`` (the thinking guide: not both in one request). Wording ours."""
    gen = body.get("generationConfig")
    if not isinstance(gen, dict):
        return None
    if "responseSchema" in gen and "responseJsonSchema" in gen:
        return "generation_config: response_schema and response_json_schema cannot both be set"
    thinking = gen.get("thinkingConfig")
    if isinstance(thinking, dict) and "thinkingBudget" in thinking and "thinkingLevel" in thinking:
        return "generation_config.thinking_config: thinking_budget and thinking_level cannot both be set"
    return None


def error_body(violations: list[tuple[str, str]]) -> dict[str, Any]:
    """Gemini's HTTP 400 body for ``violations`` (see the module docstring)."""
    return {
        "error": {
            "code": 400,
            "message": "\n".join(d for _, d in violations),
            "status": "INVALID_ARGUMENT",
            "details": [
                {
                    "@type": "type.googleapis.com/google.rpc.BadRequest",
                    "fieldViolations": [{"field": f, "description": d} for f, d in violations],
                }
            ],
        }
    }
