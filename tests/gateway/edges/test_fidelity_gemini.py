"""The Gemini dialect's fidelity (issue 14 item 1): every field of the REST body the
``google-genai`` SDK sends (its ``GenerateContentConfig`` / ``GenerationConfig`` fields by their
wire keys) has one class in :mod:`gateway.edges.fidelity_gemini`, each class lands where it
says, and every key of the SDK's ``Part``, ``Content``, ``FunctionCall``, ``FunctionResponse``,
``FunctionDeclaration``, ``Tool``, ``ToolConfig`` and ``ThinkingConfig`` is read or refused by
name."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import orjson
import pytest
from google.genai import models as genai_models
from google.genai import types

from gateway.edges import fidelity
from gateway.edges import gemini_options as options
from gateway.edges import gemini_parse as parse
from gateway.edges.fidelity_gemini import GEMINI, SDK_ONLY, SDK_WIRE_KEYS
from gateway.errors import InvalidRequest

TABLE = GEMINI


def _wire(model: Any) -> frozenset[str]:
    """The wire keys of a google-genai pydantic type: each field's alias (camelCase)."""
    return frozenset(f.alias or name for name, f in model.model_fields.items())


def _sdk_fields() -> set[str]:
    """The request body's fields as the SDK sends them: ``contents``, the top-level
    ``GenerateContentConfig`` fields, and ``generationConfig.*`` for the ``GenerationConfig``
    ones (module doc of :mod:`gateway.edges.fidelity_gemini`)."""
    config = types.GenerateContentConfig.model_fields
    generation = set(types.GenerationConfig.model_fields)
    top = {"contents"}
    for name, f in config.items():
        if name in SDK_ONLY or name in generation:
            continue
        top.add(SDK_WIRE_KEYS.get(name) or f.alias or name)
    return top | {f"generationConfig.{k}" for k in _wire(types.GenerationConfig)}


def test_every_documented_request_field_has_a_class() -> None:
    sdk = _sdk_fields()
    assert sorted(sdk - TABLE.keys()) == []
    assert sorted(TABLE.keys() - sdk) == ["model"]  # the URL's, or a countTokens body's
    assert {r.cls for r in TABLE.values()} <= set(fidelity.CLASSES)


def test_the_sdk_writes_its_config_where_the_mapping_says() -> None:
    """The SDK's own request converter puts the top-level fields at the top and the others
    under ``generationConfig`` (what :func:`_sdk_fields` assumes)."""
    config = types.GenerateContentConfig(
        system_instruction="be brief",
        safety_settings=[types.SafetySetting(category="HARM_CATEGORY_HARASSMENT", threshold="BLOCK_NONE")],
        tool_config=types.ToolConfig(),
        cached_content="cachedContents/c1",
        service_tier="flex",
        temperature=0.5,
        image_config=types.ImageConfig(aspect_ratio="1:1"),
    )
    body: dict[str, Any] = {}
    client = SimpleNamespace(vertexai=False)  # the Gemini API's converter, not Vertex AI's
    gen = genai_models._GenerateContentConfig_to_mldev(client, config, body)  # type: ignore[arg-type]
    assert set(body) == {"systemInstruction", "safetySettings", "toolConfig", "cachedContent", "serviceTier"}
    assert set(gen) == {"temperature", "imageConfig"}
    assert {f"generationConfig.{k}" for k in gen} | set(body) <= set(TABLE)


def _parse(**fields: Any) -> Any:
    body = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}], **fields}
    return parse.parse_request(orjson.dumps(body), model="gemini-2.5-flash")


def test_the_edges_top_level_sets_are_the_tables_classes() -> None:
    top = {k for k in TABLE if "." not in k}
    assert top == set(parse._TOP_LEVEL) - {"generationConfig"}
    assert set(parse.PASSED) == {k for k in top if TABLE[k].cls == fidelity.PASSED}
    assert set(parse.SERVING) == {k for k in top if TABLE[k].cls == fidelity.SERVING}


def test_the_generation_config_keys_are_the_tables_classes() -> None:
    gen = {k.split(".", 1)[1]: r.cls for k, r in TABLE.items() if k.startswith("generationConfig.")}
    assert {k for k, c in gen.items() if c == fidelity.REFUSED} == set(options.UNRELAYED_GENERATION) | {
        "candidateCount"
    }
    assert {k for k, c in gen.items() if c in (fidelity.CARRIED, fidelity.TRANSLATED)} == set(
        options.TRANSLATED_GENERATION
    ) - {"candidateCount"}


def test_serving_and_passed_through_fields_are_kept_verbatim_in_their_class() -> None:
    values = {
        "serviceTier": "flex",
        "safetySettings": [{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}],
        "labels": {"team": "a"},
        "modelArmorConfig": {"promptTemplateName": "projects/p/locations/l/templates/t"},
    }
    native = _parse(**values).native
    assert native.api == "gemini"
    assert native.fields == values
    assert native.serving == ["serviceTier"]
    assert sorted(native.paths) == ["labels", "modelArmorConfig", "safetySettings"]


def test_service_tier_in_snake_case_is_the_same_field() -> None:
    assert _parse(service_tier="flex").native.serving == ["serviceTier"]


# ---------------------------------------------------------------------------- nested keys


def test_a_parts_keys_are_read_or_refused_by_name() -> None:
    assert _wire(types.Part) == parse.PART_KEYS | set(parse.REFUSED_PARTS)
    assert _wire(types.Content) == parse.CONTENT_KEYS
    assert _wire(types.Blob) | _wire(types.FileData) == parse.MEDIA_KEYS
    assert _wire(types.FunctionResponseBlob) | _wire(types.FunctionResponseFileData) == parse.MEDIA_KEYS
    assert _wire(types.FunctionResponsePart) == {"inlineData", "fileData"}


def test_function_call_and_response_keys_are_read_or_refused_by_name() -> None:
    assert _wire(types.FunctionCall) == parse.FUNCTION_CALL_KEYS | set(parse.FUNCTION_CALL_REFUSED)
    assert _wire(types.FunctionResponse) == parse.FUNCTION_RESPONSE_KEYS | set(
        parse.FUNCTION_RESPONSE_REFUSED
    )


def test_tool_and_config_keys_are_read_passed_or_refused_by_name() -> None:
    assert _wire(types.FunctionDeclaration) == options.DECLARATION_KEYS | set(options.DECLARATION_REFUSED)
    assert _wire(types.Tool) == {"functionDeclarations"} | options.UNRELAYED_TOOLS | options.PASSED_TOOLS
    assert _wire(types.FunctionCallingConfig) == options.FUNCTION_CALLING_KEYS | set(
        options.FUNCTION_CALLING_REFUSED
    )
    assert _wire(types.ThinkingConfig) == options.THINKING_KEYS
    # toolConfig: functionCallingConfig is read, every other key passed through (the table's row)
    assert "functionCallingConfig" in _wire(types.ToolConfig)


MODEL_CALL = {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {}}}]}


@pytest.mark.parametrize(
    ("fields", "param"),
    [
        (
            {"contents": [{"role": "user", "parts": [{"toolCall": {"id": "x"}}]}]},
            "contents[0].parts[0].toolCall",
        ),
        (
            {"contents": [{"role": "user", "parts": [{"toolResponse": {"id": "x"}}]}]},
            "contents[0].parts[0].toolResponse",
        ),
        (
            {
                "contents": [
                    {"role": "user", "parts": [{"text": "go"}]},
                    {"role": "model", "parts": [{"functionCall": {"name": "f", "partialArgs": [{}]}}]},
                ]
            },
            "contents[1].parts[0].functionCall.partialArgs",
        ),
        (
            {
                "contents": [
                    {"role": "user", "parts": [{"text": "go"}]},
                    {"role": "model", "parts": [{"functionCall": {"name": "f", "willContinue": True}}]},
                ]
            },
            "contents[1].parts[0].functionCall.willContinue",
        ),
        (
            {
                "contents": [
                    {"role": "user", "parts": [{"text": "go"}]},
                    MODEL_CALL,
                    {
                        "role": "user",
                        "parts": [
                            {"functionResponse": {"name": "f", "response": {}, "scheduling": "SILENT"}}
                        ],
                    },
                ]
            },
            "contents[2].parts[0].functionResponse.scheduling",
        ),
        (
            {"toolConfig": {"functionCallingConfig": {"mode": "AUTO", "streamFunctionCallArguments": True}}},
            "toolConfig.functionCallingConfig.streamFunctionCallArguments",
        ),
        (
            {"tools": [{"functionDeclarations": [{"name": "f", "behavior": "NON_BLOCKING"}]}]},
            "tools[0].functionDeclarations[0].behavior",
        ),
        ({"tools": [{"codeExecution": {}}]}, "tools[0].codeExecution"),
        ({"cachedContent": "cachedContents/c1"}, "cachedContent"),
        ({"generationConfig": {"audioTimestamp": True}}, "generationConfig.audioTimestamp"),
    ],
)
def test_a_key_the_edge_does_not_carry_is_refused_by_name(fields: dict[str, Any], param: str) -> None:
    with pytest.raises(InvalidRequest) as exc:
        _parse(**fields)
    assert exc.value.param == param


def test_values_that_ask_for_nothing_are_accepted() -> None:
    contents = [
        {"role": "user", "parts": [{"text": "go"}]},
        {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {}, "willContinue": False}}]},
        {
            "role": "user",
            "parts": [{"functionResponse": {"name": "f", "response": {"output": "ok"}, "scheduling": None}}],
        },
    ]
    req = _parse(
        contents=contents,
        tools=[{"functionDeclarations": [{"name": "f"}]}],
        toolConfig={"functionCallingConfig": {"mode": "AUTO", "streamFunctionCallArguments": False}},
        generationConfig={"enableAffectiveDialog": False, "responseLogprobs": False},
    )
    assert req.native is None
