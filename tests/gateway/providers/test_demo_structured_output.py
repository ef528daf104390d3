"""The keyless demo deployment honours structured output (issue 14 item 10): its answer is a
minimal instance that validates against the requested schema, whole and streamed."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

from gateway.config import Deployment
from gateway.providers.demo import answer, response_events
from gateway.providers.demo_instance import minimal_instance
from gateway.schema import PartDelta, Request, ResponseFormat, TextPart, UserMessage

DEP = Deployment(name="demo", api="demo", model="turnstile-demo")

SCHEMAS: list[dict[str, Any]] = [
    {
        "type": "object",
        "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
        "required": ["name", "age"],
        "additionalProperties": False,
    },
    {
        "type": "object",
        "properties": {
            "kind": {"enum": ["cat", "dog"]},
            "n": {"type": "number", "minimum": 3, "exclusiveMaximum": 4},
        },
        "required": ["kind", "n"],
    },
    {"type": "array", "items": {"type": "string", "format": "date-time"}, "minItems": 2},
    {
        "$defs": {
            "P": {
                "type": "object",
                "properties": {"id": {"type": "string", "format": "uuid"}},
                "required": ["id"],
            }
        },
        "type": "object",
        "properties": {
            "p": {"$ref": "#/$defs/P"},
            "q": {"anyOf": [{"type": "null"}, {"type": "integer", "maximum": -5}]},
        },
        "required": ["p", "q"],
    },
    {
        "type": "object",
        "properties": {
            "s": {"type": "string", "minLength": 10, "maxLength": 12},
            "c": {"const": 7},
            "b": {"type": ["null", "boolean"]},
        },
        "required": ["s", "c", "b"],
    },
    {
        "type": "object",
        "properties": {"x": {"type": "integer"}},
        "allOf": [{"type": "object", "properties": {"y": {"type": "string"}}, "required": ["y"]}],
    },
    {
        "$defs": {"Node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Node"}}}},
        "$ref": "#/$defs/Node",
    },
]


@pytest.mark.parametrize("schema", SCHEMAS)
def test_the_minimal_instance_validates_against_its_schema(schema: dict[str, Any]) -> None:
    jsonschema.validate(minimal_instance(schema), schema, format_checker=jsonschema.FormatChecker())


def _req(fmt: ResponseFormat, **kw: Any) -> Request:
    return Request(
        model="demo",
        messages=[UserMessage(content=[TextPart(text="invent a dog")])],
        response_format=fmt,
        **kw,
    )


def test_the_demo_answer_is_json_of_the_requested_schema() -> None:
    schema = SCHEMAS[0]
    resp = answer(_req(ResponseFormat(type="json_schema", schema=schema)), DEP)
    assert resp.stop_reason == "stop"
    jsonschema.validate(json.loads(resp.message.text), schema)


def test_the_streamed_demo_answer_is_the_same_json() -> None:
    resp = answer(_req(ResponseFormat(type="json_schema", schema=SCHEMAS[3]), stream=True), DEP)
    text = "".join(e.text or "" for e in response_events(resp) if isinstance(e, PartDelta))
    jsonschema.validate(json.loads(text), SCHEMAS[3])


def test_json_object_mode_answers_a_json_object() -> None:
    resp = answer(_req(ResponseFormat(type="json_object")), DEP)
    assert isinstance(json.loads(resp.message.text)["answer"], str)
