"""The keyless demo deployment honours structured output (issue 14 item 10): its answer is a
minimal instance that validates against the requested schema, whole and streamed."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, Literal

import jsonschema
import pytest
from pydantic import BaseModel, Field

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


class Pet(BaseModel):
    name: str
    legs: int = Field(ge=2, le=4)
    kind: Literal["cat", "dog"]
    born: datetime
    nickname: str | None


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_both_sdks_parse_the_keyless_demo_answer(tmp_path: Any, stream: bool) -> None:
    """What a newcomer without a key runs first: each SDK's ``parse()`` against the embedded
    ``demo`` deployment returns the model instance."""
    import anthropic
    import openai
    from starlette.testclient import TestClient

    from gateway import server
    from gateway.config import Settings, parse_config

    cfg = parse_config(
        {
            "server": {"db_path": str(tmp_path / "t.db")},
            "deployments": [
                {"name": "demo", "api": "demo", "model": "turnstile-demo", "price": {"input": 0, "output": 0}}
            ],
        }
    )
    prompt = [{"role": "user", "content": "invent a pet"}]
    with TestClient(
        server.create_app(config=cfg, settings=Settings()), base_url="http://127.0.0.1:4000"
    ) as http:
        oai = openai.OpenAI(
            base_url="http://127.0.0.1:4000/v1", api_key="unused", http_client=http, max_retries=0
        )
        ant = anthropic.Anthropic(
            base_url="http://127.0.0.1:4000", api_key="unused", http_client=http, max_retries=0
        )
        if stream:
            with oai.chat.completions.stream(model="demo", messages=prompt, response_format=Pet) as s:
                parsed = s.get_final_completion().choices[0].message.parsed
            with ant.messages.stream(model="demo", max_tokens=200, messages=prompt, output_format=Pet) as a:
                output = a.get_final_message().parsed_output
        else:
            parsed = (
                oai.chat.completions.parse(model="demo", messages=prompt, response_format=Pet)
                .choices[0]
                .message.parsed
            )
            output = ant.messages.parse(
                model="demo", max_tokens=200, messages=prompt, output_format=Pet
            ).parsed_output
    assert isinstance(parsed, Pet) and isinstance(output, Pet)
    assert (parsed.kind, parsed.legs) == ("cat", 2)


def test_bounds_the_sdk_moved_into_descriptions_are_honoured() -> None:
    schema = {
        "type": "object",
        "properties": {
            "legs": {"type": "integer", "description": "Legs\n\n{minimum: 2, maximum: 4}"},
            "tag": {"type": "string", "description": "{minLength: 6}"},
        },
        "required": ["legs", "tag"],
    }
    assert minimal_instance(schema) == {"legs": 2, "tag": "demooo"}
