"""Gemini request bodies -> the internal schema: every field carried, translated or refused by
name; functionResponse pairing by id, then by name and order; thought signatures unwrapped."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from gateway.edges import gemini
from gateway.edges.signatures import wrap_b64_signature
from gateway.errors import InvalidRequest
from gateway.schema import (
    AssistantMessage,
    ImagePart,
    OwnKeys,
    Provenance,
    RedactedThinkingPart,
    SystemMessage,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultMessage,
    UserMessage,
)

USER = {"role": "user", "parts": [{"text": "hi"}]}


def parse(body: dict[str, Any], model: str = "gemini-2.5-flash", stream: bool = False) -> Any:
    return gemini.parse_request(orjson.dumps(body), model=model, stream=stream)


def refused(body: dict[str, Any]) -> InvalidRequest:
    with pytest.raises(InvalidRequest) as info:
        parse(body)
    return info.value


def test_model_and_stream_come_from_the_url() -> None:
    req = parse({"contents": [USER]}, model="models/gemini-2.5-pro", stream=True)
    assert req.model == "gemini-2.5-pro"
    assert req.stream is True
    assert req.include_usage is True
    assert req.messages[0].content == [TextPart(text="hi")]
    assert req.messages[0].src == "contents[0]"


def test_system_instruction_and_roles_become_messages() -> None:
    req = parse(
        {
            "systemInstruction": {"parts": [{"text": "be brief"}]},
            "contents": [{"parts": [{"text": "q"}]}, {"role": "model", "parts": [{"text": "a"}]}, USER],
        }
    )
    assert [type(m) for m in req.messages] == [SystemMessage, UserMessage, AssistantMessage, UserMessage]
    assert req.messages[0].content[0].text == "be brief"


def test_inline_and_file_images_become_image_parts() -> None:
    req = parse(
        {
            "contents": [
                {
                    "role": "user",
                    "parts": [
                        {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}},
                        {"fileData": {"mimeType": "image/jpeg", "fileUri": "gs://b/cat.jpg"}},
                    ],
                }
            ]
        }
    )
    assert req.messages[0].content == [
        ImagePart(data="iVBORw0KGgo=", media_type="image/png"),
        ImagePart(url="gs://b/cat.jpg", media_type="image/jpeg"),
    ]


def test_video_inline_data_is_refused_by_name() -> None:
    err = refused({"contents": [{"parts": [{"inlineData": {"mimeType": "video/mp4", "data": "AAAA"}}]}]})
    assert err.param == "contents[0].parts[0].inlineData.mimeType"


CALLS = {
    "role": "model",
    "parts": [
        {"functionCall": {"name": "add", "args": {"a": 2}}},
        {"functionCall": {"name": "add", "args": {"a": 3}}},
        {"functionCall": {"name": "mul", "args": {"a": 4}}},
    ],
}


def _pairs(req: Any) -> dict[str, Any]:
    calls = {c.id: c.arguments for m in req.messages if type(m) is AssistantMessage for c in m.tool_calls}
    return {m.content[0].text: calls[m.tool_call_id] for m in req.messages if type(m) is ToolResultMessage}


def test_function_responses_without_ids_pair_by_name_and_order() -> None:
    results = {
        "role": "user",
        "parts": [
            {"functionResponse": {"name": "mul", "response": {"output": "m"}}},
            {"functionResponse": {"name": "add", "response": {"output": "first add"}}},
            {"functionResponse": {"name": "add", "response": {"output": "second add"}}},
        ],
    }
    req = parse({"contents": [USER, CALLS, results]})
    assert _pairs(req) == {"m": {"a": 4}, "first add": {"a": 2}, "second add": {"a": 3}}


def test_call_ids_without_an_id_are_deterministic() -> None:
    body = {"contents": [USER, CALLS, {"parts": [{"functionResponse": {"name": "mul", "response": {}}}]}]}
    ids = [c.id for c in parse(body).messages[1].tool_calls]
    assert ids == [c.id for c in parse(body).messages[1].tool_calls]
    assert ids[0] == gemini.call_id(1, 0, "add")
    assert len(set(ids)) == 3


def test_a_response_with_a_known_id_pairs_by_id_first() -> None:
    calls = {
        "role": "model",
        "parts": [
            {"functionCall": {"id": "c1", "name": "add", "args": {"a": 1}}},
            {"functionCall": {"id": "c2", "name": "add", "args": {"a": 2}}},
        ],
    }
    results = {
        "role": "user",
        "parts": [
            {"functionResponse": {"id": "c2", "name": "add", "response": {"output": "two"}}},
            {"functionResponse": {"name": "add", "response": {"output": "one"}}},
        ],
    }
    req = parse({"contents": [USER, calls, results]})
    assert _pairs(req) == {"two": {"a": 2}, "one": {"a": 1}}


def test_an_unknown_response_id_falls_back_to_the_name() -> None:
    # Gemini CLI answers a call without an id with an id of its own making
    calls = {"role": "model", "parts": [{"functionCall": {"name": "ls", "args": {}}}]}
    results = {
        "parts": [{"functionResponse": {"id": "ls-1700000000-ab", "name": "ls", "response": {"output": "x"}}}]
    }
    req = parse({"contents": [USER, calls, results]})
    assert req.messages[2].tool_call_id == req.messages[1].tool_calls[0].id


def test_an_orphan_function_response_is_refused_naming_it() -> None:
    err = refused(
        {
            "contents": [
                USER,
                {"role": "model", "parts": [{"text": "hi"}]},
                {"parts": [{"functionResponse": {"name": "add", "response": {}}}]},
            ]
        }
    )
    assert err.param == "contents[2].parts[0].functionResponse"
    assert "'add'" in err.message


def test_error_responses_and_structured_responses() -> None:
    calls = {"role": "model", "parts": [{"functionCall": {"name": "a"}}, {"functionCall": {"name": "b"}}]}
    results = {
        "parts": [
            {"functionResponse": {"name": "a", "response": {"error": "boom"}}},
            {"functionResponse": {"name": "b", "response": {"files": ["x"]}}},
        ]
    }
    req = parse({"contents": [USER, calls, results]})
    a, b = req.messages[2], req.messages[3]
    assert (a.is_error, a.content[0].text) == (True, "boom")
    assert (b.is_error, orjson.loads(b.content[0].text)) == (False, {"files": ["x"]})


def test_results_come_before_the_user_text_of_the_same_turn() -> None:
    calls = {"role": "model", "parts": [{"functionCall": {"name": "a"}}]}
    results = {"parts": [{"text": "and then?"}, {"functionResponse": {"name": "a", "response": {}}}]}
    req = parse({"contents": [USER, calls, results]})
    assert [type(m) for m in req.messages[2:]] == [ToolResultMessage, UserMessage]


PROV = Provenance(api="anthropic_messages", provider="anthropic", model="claude-x")


def test_thought_signatures_are_unwrapped_or_native() -> None:
    wrapped = wrap_b64_signature("SIG", PROV)
    model = {
        "role": "model",
        "parts": [
            {"text": "pondering", "thought": True, "thoughtSignature": wrapped},
            {"text": "answer", "thoughtSignature": "RAWSIG"},
            {"functionCall": {"name": "f", "args": {}}, "thoughtSignature": "RAWFC"},
            {
                "text": "",
                "thought": True,
                "thoughtSignature": wrap_b64_signature("DATA", PROV, redacted=True),
            },
        ],
    }
    req = parse({"contents": [USER, model, {"parts": [{"functionResponse": {"name": "f", "response": {}}}]}]})
    parts = req.messages[1].content
    assert parts[0] == ThinkingPart(text="pondering", signature="SIG", provenance=PROV)
    assert parts[1] == TextPart(text="answer")
    assert parts[2] == ThinkingPart(text="", signature="RAWSIG", provenance=gemini.NATIVE)
    assert isinstance(parts[3], ToolCallPart) and parts[3].signature == "RAWFC"
    assert parts[3].provenance == gemini.NATIVE
    assert parts[4] == RedactedThinkingPart(data="DATA", provenance=PROV)


def test_function_declarations_in_both_schema_forms() -> None:
    req = parse(
        {
            "contents": [USER],
            "tools": [
                {
                    "functionDeclarations": [
                        {
                            "name": "g",
                            "parameters": {
                                "type": "OBJECT",
                                "properties": {
                                    "x": {"type": "STRING", "nullable": True},
                                    "y": {"type": "INTEGER"},
                                },
                                "propertyOrdering": ["y", "x"],
                            },
                        },
                        {
                            "name": "j",
                            "parametersJsonSchema": {"type": "object", "additionalProperties": False},
                        },
                    ]
                }
            ],
        }
    )
    g, j = req.tools
    assert g.parameters == {
        "type": "object",
        "properties": {"y": {"type": "integer"}, "x": {"type": ["string", "null"]}},
    }
    assert j.parameters == {"type": "object", "additionalProperties": False}


def test_snake_case_keys_are_read_like_camel_case() -> None:
    req = parse(
        {
            "contents": [USER],
            "system_instruction": {"parts": [{"text": "s"}]},
            "tools": [
                {"function_declarations": [{"name": "f", "parameters_json_schema": {"type": "object"}}]}
            ],
            "generation_config": {"max_output_tokens": 50, "thinking_config": {"thinking_budget": 0}},
        }
    )
    assert req.max_output_tokens == 50
    assert req.thinking is not None and req.thinking.enabled is False
    assert req.tools[0].name == "f"


@pytest.mark.parametrize(
    ("config", "mode", "name"),
    [
        ({"mode": "AUTO"}, "auto", None),
        ({"mode": "NONE"}, "none", None),
        ({"mode": "ANY"}, "required", None),
        ({"mode": "ANY", "allowedFunctionNames": ["f"]}, "tool", "f"),
    ],
)
def test_function_calling_config_becomes_the_tool_choice(
    config: dict[str, Any], mode: str, name: str | None
) -> None:
    req = parse({"contents": [USER], "toolConfig": {"functionCallingConfig": config}})
    assert req.tool_choice is not None
    assert (req.tool_choice.mode, req.tool_choice.name) == (mode, name)


def test_several_allowed_function_names_are_refused() -> None:
    err = refused(
        {
            "contents": [USER],
            "toolConfig": {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["a", "b"]}},
        }
    )
    assert err.param == "toolConfig.functionCallingConfig.allowedFunctionNames"


def test_generation_config_translated() -> None:
    req = parse(
        {
            "contents": [USER],
            "generationConfig": {
                "temperature": 0.5,
                "topP": 0.9,
                "topK": 40.0,
                "maxOutputTokens": 100,
                "stopSequences": ["END"],
                "candidateCount": 1,
                "responseMimeType": "application/json",
                "responseSchema": {"type": "OBJECT", "properties": {"a": {"type": "STRING"}}},
                "thinkingConfig": {"thinkingBudget": 2048, "includeThoughts": True},
            },
        }
    )
    assert (req.temperature, req.top_p, req.top_k, req.max_output_tokens) == (0.5, 0.9, 40, 100)
    assert req.stop == ["END"]
    assert req.response_format is not None and req.response_format.type == "json_schema"
    assert req.response_format.schema_ == {"type": "object", "properties": {"a": {"type": "string"}}}
    assert req.thinking is not None and req.thinking.budget_tokens == 2048
    assert req.native is not None and req.native.paths == []  # nothing refused toward another API
    assert req.native.fields == {  # a Gemini upstream gets the client's own forms
        "generationConfig": {
            "responseSchema": {"type": "OBJECT", "properties": {"a": {"type": "STRING"}}},
            "thinkingConfig": {"thinkingBudget": 2048, "includeThoughts": True},
        }
    }


def test_thinking_level_becomes_an_effort() -> None:
    req = parse({"contents": [USER], "generationConfig": {"thinkingConfig": {"thinkingLevel": "LOW"}}})
    assert req.thinking is not None and req.thinking.effort == "low"
    assert req.native.fields == {"generationConfig": {"thinkingConfig": {"thinkingLevel": "LOW"}}}
    assert req.native.paths == []


def test_response_json_schema_is_kept_for_a_gemini_upstream_in_its_own_slot() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": False}
    gen = {"responseMimeType": "application/json", "responseJsonSchema": schema}
    req = parse({"contents": [USER], "generationConfig": gen})
    assert req.response_format.schema_ == schema
    assert req.native.fields == {"generationConfig": {"responseJsonSchema": schema}}
    assert req.native.paths == []


def test_validated_mode_is_kept_for_a_gemini_upstream_and_strict_for_others() -> None:
    tool = {"functionDeclarations": [{"name": "f", "parametersJsonSchema": {"type": "object"}}]}
    req = parse(
        {"contents": [USER], "tools": [tool], "toolConfig": {"functionCallingConfig": {"mode": "VALIDATED"}}}
    )
    assert req.tool_choice.mode == "auto" and [t.strict for t in req.tools] == [True]
    assert req.native.fields == {"toolConfig": {"functionCallingConfig": {"mode": "VALIDATED"}}}
    assert req.native.paths == []


def test_a_function_response_object_is_kept_on_its_result_unless_it_is_the_text_form() -> None:
    model = {"role": "model", "parts": [{"functionCall": {"id": "c1", "name": "f", "args": {}}}]}

    def answered(response: dict[str, Any]) -> Any:
        result = {
            "role": "user",
            "parts": [{"functionResponse": {"id": "c1", "name": "f", "response": response}}],
        }
        return parse({"contents": [USER, model, result]})

    req = answered({"temp": 21})
    assert req.messages[2].content == [TextPart(text='{"temp":21}')]
    assert req.messages[2].own == OwnKeys(api="gemini", keys={"response": {"temp": 21}})
    assert req.native is None
    for plain in ({"output": "21 C"}, {"error": "no city"}):
        req = answered(plain)
        assert req.native is None and req.messages[2].own is None


def test_gemini_only_fields_are_carried_natively_with_their_paths() -> None:
    req = parse(
        {
            "contents": [USER],
            "safetySettings": [{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}],
            "tools": [{"googleSearch": {}}],
            "generationConfig": {"mediaResolution": "MEDIA_RESOLUTION_LOW", "temperature": 1.0},
            "labels": {"team": "a"},
        }
    )
    assert req.native is not None and req.native.api == "gemini"
    assert req.native.fields == {
        "tools": [{"googleSearch": {}}],
        "generationConfig": {"mediaResolution": "MEDIA_RESOLUTION_LOW"},
        "safetySettings": [{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}],
        "labels": {"team": "a"},
    }
    assert req.native.paths == [
        "tools[0].googleSearch",
        "generationConfig.mediaResolution",
        "safetySettings",
        "labels",
    ]
    assert req.temperature == 1.0


def test_seed_and_penalties_are_read_into_the_schema() -> None:
    config = {"seed": 7, "presencePenalty": 0.5, "frequencyPenalty": 0}
    req = parse({"contents": [USER], "generationConfig": config})
    assert (req.seed, req.presence_penalty, req.frequency_penalty) == (7, 0.5, None)
    assert req.native is None


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"contents": [USER], "cachedContent": "cachedContents/x"}, "cachedContent"),
        ({"contents": [USER], "generationConfig": {"candidateCount": 2}}, "generationConfig.candidateCount"),
        ({"contents": [USER], "unknownThing": 1}, "unknownThing"),
        (
            {"contents": [{"parts": [{"executableCode": {"code": "1"}}]}]},
            "contents[0].parts[0].executableCode",
        ),
        ({"contents": [{"role": "system", "parts": [{"text": "x"}]}]}, "contents[0].role"),
        ({"contents": []}, "contents"),
        (
            {"contents": [USER], "generationConfig": {"responseMimeType": "text/x.enum"}},
            "generationConfig.responseMimeType",
        ),
    ],
)
def test_fields_without_a_carrier_are_refused_by_name(body: dict[str, Any], param: str) -> None:
    assert refused(body).param == param


def test_count_tokens_reads_a_whole_generate_content_request() -> None:
    body = {"generateContentRequest": {"model": "models/g", "contents": [USER]}}
    req = gemini.parse_count_tokens(orjson.dumps(body), model="g")
    assert req.messages[0].content[0].text == "hi"


def test_a_part_with_two_kinds_of_data_is_refused() -> None:
    err = refused(
        {"contents": [{"parts": [{"text": "x", "inlineData": {"mimeType": "image/png", "data": "AA=="}}]}]}
    )
    assert err.param == "contents[0].parts[0]"


def test_consecutive_model_contents_are_one_turn_for_pairing() -> None:
    req = parse(
        {
            "contents": [
                USER,
                {"role": "model", "parts": [{"functionCall": {"name": "a"}}]},
                {"role": "model", "parts": [{"functionCall": {"name": "b"}}]},
                {
                    "parts": [
                        {"functionResponse": {"name": "a", "response": {}}},
                        {"functionResponse": {"name": "b", "response": {}}},
                    ]
                },
            ]
        }
    )
    ids = [c.id for m in req.messages if type(m) is AssistantMessage for c in m.tool_calls]
    assert [m.tool_call_id for m in req.messages if type(m) is ToolResultMessage] == ids


def test_bounds_count_contents_and_parts_and_name_deep_fields() -> None:
    from gateway.config import ServerConfig
    from gateway.errors import PayloadTooLarge

    limits = ServerConfig.model_construct(max_request_messages=3, max_request_parts=4, max_json_depth=8)
    with pytest.raises(PayloadTooLarge) as many:
        gemini.parse_request(orjson.dumps({"contents": [USER] * 4}), limits, model="g")
    assert many.value.param == "contents"
    parts = {"role": "user", "parts": [{"text": "x"}] * 5}
    with pytest.raises(PayloadTooLarge):
        gemini.parse_request(orjson.dumps({"contents": [parts]}), limits, model="g")
    deep: dict[str, Any] = {"a": {"b": {"c": {"d": {"e": 1}}}}}
    call = {"role": "model", "parts": [{"functionCall": {"name": "f", "args": deep}}]}
    with pytest.raises(InvalidRequest) as too_deep:
        gemini.parse_request(orjson.dumps({"contents": [USER, call]}), limits, model="g")
    assert too_deep.value.param == "contents[1].parts[0].functionCall.args"


def test_streamed_thought_parts_are_one_thinking_part_ended_by_its_signature() -> None:
    model = {
        "role": "model",
        "parts": [
            {"text": "a", "thought": True},
            {"text": "b", "thought": True},
            {"text": "", "thought": True, "thoughtSignature": "S1"},
            {"text": "c", "thought": True},
            {"text": "answer"},
        ],
    }
    req = parse({"contents": [USER, model, USER]})
    assert req.messages[1].content == [
        ThinkingPart(text="ab", signature="S1", provenance=gemini.NATIVE),
        ThinkingPart(text="c", provenance=gemini.NATIVE),  # unsigned: back to a Gemini upstream
        TextPart(text="answer"),
    ]


@pytest.mark.parametrize(
    ("body", "param"),
    [
        (
            {"generationConfig": {"temperature": 0.1}, "generation_config": {"temperature": 0.9}},
            "generation_config",
        ),
        (
            {"generationConfig": {"maxOutputTokens": 5, "max_output_tokens": 9}},
            "generationConfig.max_output_tokens",
        ),
        (
            {"generationConfig": {"thinkingConfig": {"thinkingBudget": 0, "thinking_budget": 9}}},
            "generationConfig.thinkingConfig.thinking_budget",
        ),
        (
            {"toolConfig": {"functionCallingConfig": {}, "function_calling_config": {}}},
            "toolConfig.function_calling_config",
        ),
    ],
)
def test_one_field_in_both_spellings_is_refused_naming_both(body: dict[str, Any], param: str) -> None:
    with pytest.raises(InvalidRequest) as err:
        parse({"contents": [{"role": "user", "parts": [{"text": "hi"}]}], **body})
    assert err.value.param == param
    assert "two spellings" in str(err.value)


def test_snake_case_alone_is_read_as_camel_case() -> None:
    req = parse(
        {
            "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
            "generation_config": {"max_output_tokens": 7},
        }
    )
    assert req.max_output_tokens == 7
