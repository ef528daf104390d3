"""JSON Schema normalised for Gemini (gateway.providers.gemini_schema) holds only what Gemini's
``Schema`` accepts, at every level, and loses nothing that changes meaning: the real tool and
output schemas recorded in the corpus (``tests/fixtures/tool-schemas``) and generated ones,
checked with the stand-in's copy of Gemini's rule (``standins.gemini_schema_rule``)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from standins.gemini_schema_rule import schema_violations

from gateway.providers.gemini_schema import function_declaration, function_parameters, to_gemini_schema
from gateway.providers.tool_formats import render_tools
from gateway.schema import ToolDefinition

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "tool-schemas" / "corpus-schemas.jsonl"
CORPUS = [json.loads(line) for line in FIXTURE.read_text(encoding="utf-8").splitlines() if line.strip()]

# Constraints with no Gemini field, with the words the normalised schema says them in.
UNEXPRESSED = {
    "multipleOf": "multiple of",
    "exclusiveMinimum": "greater than",
    "uniqueItems": "unique",
    "contains": "contains",
    "patternProperties": "pattern",
    "propertyNames": "property names",
    "dependentRequired": "required together",
    "not": "must not match",
    "if": "if it matches",
    "additionalProperties": "no other properties",
}


def _descriptions(node: Any) -> str:
    if isinstance(node, dict):
        own = node.get("description") if isinstance(node.get("description"), str) else ""
        return own + " ".join(_descriptions(v) for v in node.values())
    if isinstance(node, list):
        return " ".join(_descriptions(v) for v in node)
    return ""


@pytest.mark.parametrize("row", CORPUS, ids=[f"{r['name']}@{r['corpus'].split('/')[-1]}" for r in CORPUS])
def test_every_recorded_schema_becomes_one_gemini_accepts(row: dict[str, Any]) -> None:
    out = to_gemini_schema(row["schema"])
    assert schema_violations(out, "parameters") == []
    params = function_parameters(row["schema"])
    assert params is None or schema_violations(params, "parameters") == []


def test_the_tools_listing_and_the_upstream_request_use_one_normalisation() -> None:
    tools = [ToolDefinition(name=f"t{i}", parameters=r["schema"]) for i, r in enumerate(CORPUS)]
    decls = render_tools(tools, "gemini")[0]["functionDeclarations"]
    for tool, decl in zip(tools, decls, strict=True):
        assert decl.get("parameters") == function_parameters(tool.parameters)


NAMES = st.sampled_from(["a", "b", "path", "mode", "x-y", "$weird", "with space"])
SCALAR = st.one_of(
    st.none(), st.booleans(), st.integers(-5, 5), st.floats(-2, 2, allow_nan=False), st.text(max_size=4)
)
TYPE = st.sampled_from(["string", "integer", "number", "boolean", "object", "array", "null"])
ANNOTATIONS = {
    "description": st.text(max_size=8),
    "title": st.text(max_size=5),
    "default": SCALAR,
    "examples": st.lists(SCALAR, max_size=2),
    "deprecated": st.booleans(),
    "readOnly": st.booleans(),
    "$comment": st.text(max_size=5),
    "nullable": st.booleans(),
    "x-vendor": st.text(max_size=3),
    "example_value": st.text(max_size=3),
}
# Values of the wrong JSON type for fields Gemini has (real schemas carry such slips).
ILL_TYPED = {
    "minimum": st.just("5"),
    "maxItems": st.just(1.5),
    "description": st.just(3),
    "nullable": st.just("yes"),
    "title": st.just({"en": "x"}),
    "enum": st.just("x"),
    "type": st.sampled_from(["any", "file", "Float"]),
    "pattern": st.just(7),
    "propertyOrdering": st.just(["zz"]),
}


def _with(
    base: dict[str, st.SearchStrategy[Any]], optional: dict[str, st.SearchStrategy[Any]]
) -> st.SearchStrategy[Any]:
    return st.fixed_dictionaries(base, optional={**ANNOTATIONS, **optional})


def _leaf() -> st.SearchStrategy[Any]:
    string = _with(
        {"type": st.just("string")},
        {
            "format": st.sampled_from(["uri", "date-time", "email", "enum", "uuid"]),
            "minLength": st.integers(0, 3),
            "maxLength": st.integers(3, 9),
            "pattern": st.just("^[a-z]+$"),
            "enum": st.lists(st.text(max_size=3), min_size=1, max_size=3),
        },
    )
    number = _with(
        {"type": st.sampled_from(["integer", "number", ["integer", "null"]])},
        {
            "format": st.sampled_from(["int64", "float", "percent"]),
            "minimum": st.integers(-3, 3),
            "maximum": st.floats(0, 9, allow_nan=False),
            "exclusiveMinimum": st.integers(-3, 3),
            "multipleOf": st.integers(1, 4),
            "enum": st.lists(st.integers(0, 9), min_size=1, max_size=3),
        },
    )
    anything = _with(
        {},
        {
            "type": st.one_of(TYPE, st.lists(TYPE, min_size=1, max_size=3)),
            "const": SCALAR,
            "enum": st.lists(SCALAR, min_size=1, max_size=3),
        },
    )
    ill = st.fixed_dictionaries({}, optional=ILL_TYPED)
    return st.one_of(string, number, anything, ill, st.booleans())


def _compound(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    obj = _with(
        {"type": st.just("object"), "properties": st.dictionaries(NAMES, children, max_size=3)},
        {
            "required": st.lists(NAMES, max_size=3),
            "additionalProperties": st.one_of(st.booleans(), children),
            "patternProperties": st.dictionaries(st.just("^x"), children, min_size=1, max_size=1),
            "minProperties": st.integers(0, 2),
            "propertyNames": st.just({"pattern": "^[a-z]+$"}),
            "dependentRequired": st.just({"a": ["b"]}),
        },
    )
    arr = _with(
        {"type": st.just("array")},
        {
            "items": st.one_of(children, st.lists(children, max_size=2)),
            "prefixItems": st.lists(children, max_size=2),
            "minItems": st.integers(0, 2),
            "maxItems": st.integers(2, 5),
            "uniqueItems": st.just(True),
            "contains": children,
        },
    )
    comb = st.one_of(
        st.fixed_dictionaries({"anyOf": st.lists(children, min_size=1, max_size=3)}),
        st.fixed_dictionaries({"oneOf": st.lists(children, min_size=1, max_size=3)}),
        st.fixed_dictionaries({"allOf": st.lists(children, min_size=1, max_size=3)}),
        st.fixed_dictionaries({"not": children}),
        st.fixed_dictionaries(
            {"$ref": st.sampled_from(["#/$defs/A", "#/$defs/B", "#/definitions/C", "#/$defs/none"])}
        ),
        st.fixed_dictionaries({"if": children, "then": children}),
    )
    return st.one_of(obj, arr, comb)


SCHEMA = st.recursive(_leaf(), _compound, max_leaves=12)
ROOT = st.fixed_dictionaries(
    {"type": st.just("object"), "properties": st.dictionaries(NAMES, SCHEMA, min_size=1, max_size=4)},
    optional={
        "$schema": st.just("http://json-schema.org/draft-07/schema#"),
        "$defs": st.fixed_dictionaries(
            {"A": SCHEMA, "B": st.just({"type": "object", "properties": {"next": {"$ref": "#/$defs/B"}}})}
        ),
        "definitions": st.fixed_dictionaries({"C": SCHEMA}),
        "required": st.lists(NAMES, max_size=3),
        "additionalProperties": st.booleans(),
    },
)


def _constraints(
    node: Any, out: set[str], root: Any = None, followed: frozenset[str] = frozenset()
) -> set[str]:
    """The :data:`UNEXPRESSED` keywords that constrain something reachable in ``node`` (a
    ``false`` ``additionalProperties``; any value of the others), following ``$ref`` into the
    root's definitions (each once per path) and skipping definitions nothing refers to."""
    root = node if root is None else root
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref not in followed:
            kind, _, name = ref[2:].partition("/")
            target = (root.get(kind) or {}).get(name) if isinstance(root, dict) else None
            _constraints(target, out, root, followed | {ref})
        for k, v in node.items():
            if k in UNEXPRESSED and not (k == "additionalProperties" and v is not False):
                out.add(k)
            if k in ("properties", "patternProperties"):
                if isinstance(v, dict):
                    for sub in v.values():
                        _constraints(sub, out, root, followed)
            elif k not in (
                "enum",
                "const",
                "default",
                "examples",
                "required",
                "dependentRequired",
                "$defs",
                "definitions",
            ):
                _constraints(v, out, root, followed)
    elif isinstance(node, list):
        for v in node:
            _constraints(v, out, root, followed)
    return out


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(ROOT)
def test_any_generated_schema_becomes_one_gemini_accepts_and_keeps_its_constraints(
    schema: dict[str, Any],
) -> None:
    before = copy.deepcopy(schema)
    out = to_gemini_schema(schema)
    assert schema == before, "the input is never changed"
    assert schema_violations(out, "parameters") == []
    text = _descriptions(out)
    if "no value is allowed" not in text:  # where nothing can match, no constraint matters
        for keyword in _constraints(schema, set()):
            assert UNEXPRESSED[keyword] in text or keyword in text, (keyword, schema, out)
    assert to_gemini_schema(out) == out, "an already normalised schema is left as it is"


def test_a_recursive_reference_is_cut_after_a_bounded_depth_and_said_so() -> None:
    schema = {
        "type": "object",
        "properties": {"node": {"$ref": "#/$defs/Node"}},
        "$defs": {
            "Node": {
                "type": "object",
                "properties": {"value": {"type": "integer"}, "next": {"$ref": "#/$defs/Node"}},
            }
        },
    }
    out = to_gemini_schema(schema)
    assert schema_violations(out, "p") == []
    node = out["properties"]["node"]
    assert node["properties"]["value"] == {"type": "integer"}
    depth = 0
    while "next" in node.get("properties", {}):
        node = node["properties"]["next"]
        depth += 1
    assert 1 <= depth <= 4
    assert "Node" in node.get("description", "")


def test_constraints_gemini_cannot_express_move_into_the_description() -> None:
    out = to_gemini_schema(
        {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "n": {"type": "integer", "multipleOf": 5, "exclusiveMinimum": 0, "description": "count"},
                "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
                "level": {"enum": [1, 2, 3]},
                "kind": {"const": 7},
                "url": {"type": "string", "format": "uri"},
            },
        }
    )
    assert schema_violations(out, "p") == []
    props = out["properties"]
    assert props["n"]["description"].startswith("count")
    assert "multiple of 5" in props["n"]["description"] and "greater than 0" in props["n"]["description"]
    assert "unique" in props["tags"]["description"]
    assert "1, 2, 3" in props["level"]["description"]
    assert "7" in props["kind"]["description"]
    assert "uri" in props["url"]["description"]
    assert "no other properties" in out["description"]


def test_nullable_type_arrays_and_null_branches_become_nullable() -> None:
    out = to_gemini_schema(
        {
            "type": "object",
            "properties": {
                "a": {"type": ["string", "null"]},
                "b": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
                "c": {"type": ["string", "integer"]},
                "d": {"const": "x"},
            },
        }
    )
    props = out["properties"]
    assert props["a"] == {"type": "string", "nullable": True}
    assert props["b"] == {"type": "integer", "nullable": True}
    assert props["c"] == {"anyOf": [{"type": "string"}, {"type": "integer"}]}
    assert props["d"] == {"type": "string", "enum": ["x"]}


def test_references_that_would_multiply_are_bounded() -> None:
    defs: dict[str, Any] = {
        f"L{i}": {
            "type": "object",
            "properties": {"a": {"$ref": f"#/$defs/L{i + 1}"}, "b": {"$ref": f"#/$defs/L{i + 1}"}},
        }
        for i in range(16)
    }
    defs["L16"] = {"type": "string"}
    out = to_gemini_schema({"type": "object", "properties": {"root": {"$ref": "#/$defs/L0"}}, "$defs": defs})
    assert schema_violations(out, "p") == []
    assert len(json.dumps(out)) < 2_000_000
    assert "repeats here" in json.dumps(out), "the cut is said where it happens"


def test_a_tool_without_properties_keeps_what_its_schema_says_in_the_description() -> None:
    decl = function_declaration(
        "kv", "Store values", {"type": "object", "additionalProperties": {"type": "string"}}
    )
    assert "parameters" not in decl
    assert (
        decl["description"].startswith("Store values")
        and "other properties must match" in decl["description"]
    )
    plain = function_declaration(
        "now", None, {"type": "object", "properties": {}, "additionalProperties": False}
    )
    assert plain == {"name": "now"}
