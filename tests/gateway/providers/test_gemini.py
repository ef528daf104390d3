"""Gemini wire module: request building and non-streaming responses (recorded traffic from
vercel-ai, fantasy, simonw-llm; see tests/fixtures/**/ORIGIN.md) and handed cases C17, C19."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from _gemini_helpers import (
    FANTASY_GOOGLE,
    LLM_GEMINI,
    VERCEL_GOOGLE,
    context,
    deployment,
    govcr,
    user_request,
    vcrpy,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.config import Quirks
from gateway.errors import CapabilityError, InvalidRequest, UnknownStopReason, UpstreamProtocolError
from gateway.providers import gemini
from gateway.providers.gemini_common import GEMINI_NAME, GeminiNameMap, usage_from
from gateway.schema import (
    AssistantMessage,
    ImagePart,
    Provenance,
    Request,
    ResponseFormat,
    SystemMessage,
    TextPart,
    ThinkingConfig,
    ThinkingPart,
    ToolCallPart,
    ToolChoice,
    ToolDefinition,
    ToolResultMessage,
    UserMessage,
)

GEMINI_PROV = Provenance(api="gemini", provider="google", model="gemini-2.5-pro")


def body_of(request: Request, **dep: Any) -> dict[str, Any]:
    up, _ = gemini.build_request(request, deployment(**dep), "k")
    return orjson.loads(up.body)


# ---------------------------------------------------------------------------- URL and headers


def test_non_streaming_request_goes_to_generate_content_with_key_header() -> None:
    up, _ = gemini.build_request(user_request(), deployment(), "secret")
    assert up.url == "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-pro:generateContent"
    assert up.headers["x-goog-api-key"] == "secret"
    assert up.stream is False


def test_streaming_request_uses_sse_endpoint_and_custom_base_url() -> None:
    dep = deployment(model="models/gemini-2.5-flash", base_url="http://127.0.0.1:9/v1beta/")
    up, _ = gemini.build_request(user_request(stream=True), dep, None)
    assert up.url == "http://127.0.0.1:9/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    assert "x-goog-api-key" not in up.headers
    assert up.stream is True


def test_extra_headers_from_quirks_are_sent() -> None:
    up, _ = gemini.build_request(user_request(), deployment(quirks=Quirks(extra_headers={"x-a": "1"})), "k")
    assert up.headers["x-a"] == "1"


# ---------------------------------------------------------------------------- request body


def test_system_messages_are_joined_into_system_instruction() -> None:
    req = Request(
        model="m",
        messages=[
            SystemMessage(content=[TextPart(text="Be brief.")]),
            SystemMessage(content=[TextPart(text="Answer in French.")]),
            UserMessage(content=[TextPart(text="hi")]),
        ],
    )
    body = body_of(req)
    assert body["systemInstruction"] == {"parts": [{"text": "Be brief.\n\nAnswer in French."}]}
    assert body["contents"] == [{"role": "user", "parts": [{"text": "hi"}]}]


def test_generation_config_carries_sampling_stop_and_json_schema() -> None:
    req = user_request(
        max_output_tokens=100,
        temperature=0.2,
        top_p=0.9,
        top_k=40,
        stop=["END"],
        response_format=ResponseFormat(
            type="json_schema",
            schema={"type": "object", "additionalProperties": False, "properties": {"a": {"type": "string"}}},
        ),
    )
    gen = body_of(req, model="gemini-2.0-flash")["generationConfig"]  # takes responseSchema only
    assert gen == {
        "maxOutputTokens": 100,
        "temperature": 0.2,
        "topP": 0.9,
        "topK": 40,
        "stopSequences": ["END"],
        "responseMimeType": "application/json",
        "responseSchema": {
            "type": "object",
            "properties": {"a": {"type": "string"}},
            "description": "Also: no other properties are allowed.",
        },
    }


def test_thinking_budget_becomes_thinking_config_with_thoughts_included() -> None:
    gen = body_of(user_request(thinking=ThinkingConfig(budget_tokens=128)))["generationConfig"]
    assert gen["thinkingConfig"] == {"includeThoughts": True, "thinkingBudget": 128}


def test_thinking_effort_on_gemini3_pro_becomes_a_supported_level() -> None:
    gen = body_of(user_request(thinking=ThinkingConfig(effort="medium")), model="gemini-3-pro-preview")[
        "generationConfig"
    ]
    assert gen["thinkingConfig"] == {"includeThoughts": True, "thinkingLevel": "high"}


def test_tools_become_function_declarations_with_what_gemini_cannot_check_described() -> None:
    schema = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "path": {"type": "string", "format": "uri", "title": "Path"},
            "mode": {"const": "r"},
            "size": {"type": ["integer", "null"], "exclusiveMinimum": 0},
            "opts": {"$ref": "#/$defs/Opts"},
        },
        "required": ["path", "missing"],
        "$defs": {"Opts": {"type": "object", "properties": {"deep": {"type": "boolean"}}}},
    }
    req = user_request(
        tools=[ToolDefinition(name="read", description="Read a file", parameters=schema)],
        tool_choice=ToolChoice(mode="tool", name="read"),
    )
    body = body_of(req)
    assert body["tools"] == [
        {
            "functionDeclarations": [
                {
                    "name": "read",
                    "description": "Read a file",
                    "parameters": {
                        "type": "object",
                        "properties": {
                            "path": {"type": "string", "title": "Path", "description": 'Also: format "uri".'},
                            "mode": {"type": "string", "enum": ["r"]},
                            "size": {
                                "type": "integer",
                                "nullable": True,
                                "description": "Also: greater than 0.",
                            },
                            "opts": {"type": "object", "properties": {"deep": {"type": "boolean"}}},
                        },
                        "required": ["path"],
                        "description": 'Also: requires "missing" too; no other properties are allowed.',
                    },
                }
            ]
        }
    ]
    assert body["toolConfig"] == {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["read"]}}


def test_tool_without_parameters_has_no_parameters_field() -> None:
    req = user_request(tools=[ToolDefinition(name="get_time")], tool_choice=ToolChoice(mode="none"))
    body = body_of(req)
    assert body["tools"] == [{"functionDeclarations": [{"name": "get_time"}]}]
    assert body["toolConfig"] == {"functionCallingConfig": {"mode": "NONE"}}


def test_recursive_ref_is_cut_instead_of_looping() -> None:
    schema = {
        "type": "object",
        "properties": {"node": {"$ref": "#/$defs/Node"}},
        "$defs": {"Node": {"type": "object", "properties": {"child": {"$ref": "#/$defs/Node"}}}},
    }
    params = body_of(user_request(tools=[ToolDefinition(name="t", parameters=schema)]))["tools"][0][
        "functionDeclarations"
    ][0]["parameters"]
    cut = {"type": "object", "description": "The structure of Node repeats here (cut after 2 levels)"}
    assert params["properties"]["node"] == {
        "type": "object",
        "properties": {"child": {"type": "object", "properties": {"child": cut}}},
    }


def test_images_become_inline_data_or_file_data() -> None:
    req = Request(
        model="m",
        messages=[
            UserMessage(
                content=[
                    ImagePart(data="iVBORw0K", media_type="image/png"),
                    ImagePart(url="data:image/jpeg;base64,/9j/4AAQ"),
                    ImagePart(url="https://example.com/cat.webp?x=1"),
                ]
            )
        ],
    )
    assert body_of(req)["contents"][0]["parts"] == [
        {"inlineData": {"mimeType": "image/png", "data": "iVBORw0K"}},
        {"inlineData": {"mimeType": "image/jpeg", "data": "/9j/4AAQ"}},
        {"fileData": {"fileUri": "https://example.com/cat.webp?x=1", "mimeType": "image/webp"}},
    ]


def test_image_url_without_known_media_type_is_a_capability_error() -> None:
    msg = UserMessage(content=[ImagePart(url="https://example.com/picture")], src="messages[0]")
    with pytest.raises(CapabilityError) as err:
        gemini.build_request(Request(model="m", messages=[msg]), deployment(), "k")
    assert err.value.param == "messages[0].content[0]"


def test_c19_results_returned_out_of_order_are_sent_in_call_order_paired_by_id() -> None:
    calls = [
        ToolCallPart(id=f"toolu_r{i}", name="read_file", arguments={"path": f"{c}.txt"})
        for i, c in ((1, "a"), (2, "b"), (3, "c"))
    ]
    req = Request(
        model="gemini-2.5-flash",
        tools=[ToolDefinition(name="read_file", parameters={"type": "object", "properties": {"path": {}}})],
        messages=[
            UserMessage(content=[TextPart(text="Read a.txt, b.txt and c.txt.")]),
            AssistantMessage(content=list(calls)),
            ToolResultMessage(tool_call_id="toolu_r2", content=[TextPart(text="B")]),
            ToolResultMessage(tool_call_id="toolu_r3", content=[TextPart(text="C")]),
            ToolResultMessage(tool_call_id="toolu_r1", content=[TextPart(text="A")]),
        ],
    )
    contents = body_of(req, model="gemini-2.5-flash")["contents"]
    assert [p["functionCall"]["id"] for p in contents[1]["parts"]] == ["toolu_r1", "toolu_r2", "toolu_r3"]
    assert contents[2] == {
        "role": "user",
        "parts": [
            {"functionResponse": {"id": "toolu_r1", "name": "read_file", "response": {"output": "A"}}},
            {"functionResponse": {"id": "toolu_r2", "name": "read_file", "response": {"output": "B"}}},
            {"functionResponse": {"id": "toolu_r3", "name": "read_file", "response": {"output": "C"}}},
        ],
    }


def test_a_results_text_parts_are_joined_by_a_newline_as_toward_openai() -> None:
    req = Request(
        model="m",
        tools=[ToolDefinition(name="f", parameters={"type": "object"})],
        messages=[
            UserMessage(content=[TextPart(text="go")]),
            AssistantMessage(content=[ToolCallPart(id="c1", name="f")]),
            ToolResultMessage(tool_call_id="c1", content=[TextPart(text="A"), TextPart(text="B")]),
        ],
    )
    (part,) = body_of(req)["contents"][2]["parts"]
    assert part["functionResponse"]["response"] == {"output": "A\nB"}


def test_error_result_uses_error_key_and_images_follow_the_responses() -> None:
    req = Request(
        model="m",
        messages=[
            UserMessage(content=[TextPart(text="go")]),
            AssistantMessage(content=[ToolCallPart(id="c1", name="shot")]),
            ToolResultMessage(
                tool_call_id="c1",
                is_error=True,
                content=[TextPart(text="partial"), ImagePart(data="AAAA", media_type="image/png")],
            ),
            UserMessage(content=[TextPart(text="and now?")]),
        ],
    )
    contents = body_of(req)["contents"]
    assert contents[2] == {
        "role": "user",
        "parts": [
            {"functionResponse": {"id": "c1", "name": "shot", "response": {"error": "partial"}}},
            {"inlineData": {"mimeType": "image/png", "data": "AAAA"}},
            {"text": "and now?"},
        ],
    }


def test_result_name_comes_from_tool_result_when_no_call_is_known() -> None:
    req = Request(
        model="m",
        messages=[
            UserMessage(content=[TextPart(text="x")]),
            ToolResultMessage(tool_call_id="z", name="lookup"),
        ],
    )
    (turn,) = body_of(req)["contents"]  # consecutive user turns are merged
    assert turn["parts"][1]["functionResponse"]["name"] == "lookup"


def test_result_without_call_or_name_is_rejected_naming_its_location() -> None:
    res = ToolResultMessage(tool_call_id="ghost", src="messages[1]")
    with pytest.raises(InvalidRequest) as err:
        gemini.build_request(
            Request(model="m", messages=[UserMessage(content=[TextPart(text="x")]), res]), deployment(), "k"
        )
    assert err.value.param == "messages[1]"
    assert "ghost" in err.value.message


def test_foreign_thinking_is_not_sent_and_gemini_thinking_is() -> None:
    req = Request(
        model="m",
        messages=[
            UserMessage(content=[TextPart(text="x")]),
            AssistantMessage(
                content=[
                    ThinkingPart(text="mine", signature="S1", provenance=GEMINI_PROV),
                    ThinkingPart(
                        text="theirs", signature="A1", provenance=Provenance(api="anthropic_messages")
                    ),
                    TextPart(text="done"),
                ]
            ),
        ],
    )
    assert body_of(req)["contents"][1]["parts"] == [
        {"text": "mine", "thought": True, "thoughtSignature": "S1"},
        {"text": "done"},
    ]


def test_gemini3_call_without_signature_gets_documented_sentinel_on_first_call_only() -> None:
    req = Request(
        model="m",
        messages=[
            UserMessage(content=[TextPart(text="x")]),
            AssistantMessage(content=[ToolCallPart(id="a", name="f"), ToolCallPart(id="b", name="f")]),
            ToolResultMessage(tool_call_id="a"),
            ToolResultMessage(tool_call_id="b"),
        ],
    )
    parts = body_of(req, model="gemini-3-pro-preview")["contents"][1]["parts"]
    assert parts[0]["thoughtSignature"] == "skip_thought_signature_validator"
    assert "thoughtSignature" not in parts[1]
    assert "thoughtSignature" not in body_of(req, model="gemini-2.5-pro")["contents"][1]["parts"][0]


# ---------------------------------------------------------------------------- names


def test_tool_names_gemini_rejects_are_rewritten_and_mapped_back() -> None:
    req = user_request(tools=[ToolDefinition(name="9lives"), ToolDefinition(name="mcp/read file")])
    up, ctx = gemini.build_request(req, deployment(), "k")
    names = [d["name"] for d in orjson.loads(up.body)["tools"][0]["functionDeclarations"]]
    assert all(GEMINI_NAME.match(n) for n in names)
    assert names[0].startswith("_9lives_")
    assert [ctx.names.from_upstream_name(n) for n in names] == ["9lives", "mcp/read file"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(min_size=1, max_size=80), min_size=1, max_size=12, unique=True))
def test_name_rewriting_is_injective_valid_and_restorable(names: list[str]) -> None:
    nm = GeminiNameMap()
    out = [nm.to_upstream_name(n) for n in names]
    assert len(set(out)) == len(out)
    assert all(GEMINI_NAME.match(o) for o in out)
    assert [nm.from_upstream_name(o) for o in out] == names
    assert [nm.to_upstream_name(n) for n in names] == out  # deterministic


# ---------------------------------------------------------------------------- responses


def test_recorded_gemini3_function_call_response_keeps_signature_on_the_call() -> None:
    body = (VERCEL_GOOGLE / "google-tool-call-gemini3.json").read_bytes()
    resp = gemini.parse_response(body, context(deployment("gemini-3-pro-preview")))
    (call,) = resp.message.content
    assert isinstance(call, ToolCallPart)
    assert call.name == "weather"
    assert call.arguments == {"location": "San Francisco"}
    assert call.raw_arguments == '{"location":"San Francisco"}'
    assert call.signature == orjson.loads(body)["candidates"][0]["content"]["parts"][0]["thoughtSignature"]
    assert call.provenance == Provenance(api="gemini", provider="google", model="gemini-3-pro-preview")
    assert call.id.startswith("call_") and len(call.id) == 29
    assert resp.id == "JniLacKqGqH0xs0P0O776As"
    assert resp.model == "gemini-3-pro-preview"
    assert resp.stop_reason == "tool_use"
    assert resp.usage.input_tokens == 29
    assert resp.usage.output_tokens == 15 + 1801
    assert resp.usage.reasoning_tokens == 1801


def test_recorded_text_with_signature_keeps_signature_as_empty_thinking_after_text() -> None:
    body = (VERCEL_GOOGLE / "google-text.json").read_bytes()
    resp = gemini.parse_response(body, context(deployment("gemini-3-pro-preview")))
    text, sig = resp.message.content
    assert isinstance(text, TextPart) and isinstance(sig, ThinkingPart)
    assert text.text.startswith("There are **3** r's in strawberry.")
    assert sig.text == ""
    assert sig.signature is not None and sig.signature.startswith("EtoFCtcFAb4+9vtfe4MXRxQjw48U1WKrR")
    assert resp.stop_reason == "stop"
    # and it goes back onto the text part it came from
    req = Request(model="m", messages=[UserMessage(content=[TextPart(text="q")]), resp.message])
    assert body_of(req)["contents"][1]["parts"] == [{"text": text.text, "thoughtSignature": sig.signature}]


def test_recorded_thinking_response_then_turn2_request_matches_fantasy_recording() -> None:
    turn1, turn2 = govcr(FANTASY_GOOGLE / "TestGoogleThinking/gemini-2.5-flash/thinking.yaml")
    dep = deployment("gemini-2.5-flash")
    resp = gemini.parse_response(turn1["body"].encode(), context(dep))
    thinking, call = resp.message.content
    assert isinstance(thinking, ThinkingPart) and isinstance(call, ToolCallPart)
    assert thinking.text.startswith("**Analyzing the Weather Query**")
    assert thinking.signature is None
    assert call.arguments == {"location": "Florence, Italy"}
    assert resp.usage.model_dump(include={"input_tokens", "output_tokens", "reasoning_tokens"}) == {
        "input_tokens": 54,
        "output_tokens": 69,
        "reasoning_tokens": 54,
    }
    # turn 2: the recorded request carries the same functionCall with the same signature
    req = Request(
        model="m",
        messages=[
            UserMessage(content=[TextPart(text="What's the weather in Florence, Italy?")]),
            resp.message,
            ToolResultMessage(tool_call_id=call.id, content=[TextPart(text="40 C")]),
        ],
        tools=[ToolDefinition(name="weather", parameters={"type": "object", "properties": {"location": {}}})],
    )
    sent = body_of(req, model="gemini-2.5-flash")["contents"][1]["parts"]
    recorded = turn2["request"]["contents"][1]["parts"][0]
    assert sent[1]["functionCall"]["args"] == recorded["functionCall"]["args"]
    assert sent[1]["thoughtSignature"] == recorded["thoughtSignature"]


def test_c17_signature_survives_round_trip_byte_identical() -> None:
    turn1 = {
        "candidates": [
            {
                "content": {
                    "role": "model",
                    "parts": [
                        {
                            "thought": True,
                            "text": "I should list files first.",
                            "thoughtSignature": "SIG_G1_opaque",
                        },
                        {"functionCall": {"name": "shell", "args": {"command": "ls"}}},
                    ],
                },
                "finishReason": "STOP",
            }
        ]
    }
    tools = [ToolDefinition(name="shell", parameters={"type": "object", "properties": {"command": {}}})]
    first = Request(
        model="gemini-2.5-pro",
        messages=[UserMessage(content=[TextPart(text="List the files.")])],
        tools=tools,
    )
    _, ctx = gemini.build_request(first, deployment(), "k")
    resp = gemini.parse_response(orjson.dumps(turn1), ctx)
    assert resp.stop_reason == "tool_use"
    call = resp.message.tool_calls[0]
    second = first.model_copy(
        update={
            "messages": [
                *first.messages,
                AssistantMessage.model_validate(resp.message.model_dump()),  # echoed by the client
                ToolResultMessage(tool_call_id=call.id, content=[TextPart(text="a.txt")]),
            ]
        }
    )
    contents = body_of(second)["contents"]
    assert contents[1] == {
        "role": "model",
        "parts": [
            {"text": "I should list files first.", "thought": True, "thoughtSignature": "SIG_G1_opaque"},
            {"functionCall": {"name": "shell", "args": {"command": "ls"}, "id": call.id}},
        ],
    }
    assert contents[2]["parts"] == [
        {"functionResponse": {"id": call.id, "name": "shell", "response": {"output": "a.txt"}}}
    ]


def test_llm_gemini_turn2_request_shape_is_what_we_send() -> None:
    turn1, turn2 = vcrpy(LLM_GEMINI / "test_tools_with_gemini_3_thought_signatures.yaml")
    dep = deployment("gemini-3-flash-preview")
    resp = gemini.parse_response(turn1["body"], context(dep))  # a JSON array stream body
    (call,) = resp.message.content
    assert isinstance(call, ToolCallPart)
    assert call.raw_arguments == '{"y":3,"x":5}'
    req = Request(
        model="m",
        messages=[
            UserMessage(content=[TextPart(text="What is 5 times 3?")]),
            resp.message,
            ToolResultMessage(tool_call_id=call.id, content=[TextPart(text="15")]),
        ],
    )
    ours = body_of(req, model="gemini-3-flash-preview")["contents"]
    theirs = turn2["request"]["contents"]
    assert ours[1]["parts"][0]["thoughtSignature"] == theirs[1]["parts"][1]["thoughtSignature"]
    assert (
        ours[2]["parts"][0]["functionResponse"]["response"]
        == theirs[2]["parts"][0]["function_response"]["response"]
    )
    answer = gemini.parse_response(turn2["body"], context(dep))
    assert answer.message.text == "5 times 3 is 15."
    assert answer.usage.input_tokens == 121


def test_prompt_blocked_without_candidates_is_content_filter() -> None:
    body = orjson.dumps(
        {"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": {"promptTokenCount": 7}}
    )
    resp = gemini.parse_response(body, context())
    assert resp.stop_reason == "content_filter"
    assert resp.message.content == []
    assert resp.usage.input_tokens == 7


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("STOP", "stop"),
        ("MAX_TOKENS", "length"),
        ("SAFETY", "content_filter"),
        ("RECITATION", "content_filter"),
        ("BLOCKLIST", "content_filter"),
        ("PROHIBITED_CONTENT", "content_filter"),
        ("SPII", "content_filter"),
        ("MALFORMED_FUNCTION_CALL", "error"),
        ("OTHER", "error"),
        ("FINISH_REASON_UNSPECIFIED", "error"),
    ],
)
def test_finish_reasons_map_to_internal_stop_reasons(raw: str, expected: str) -> None:
    assert gemini.map_stop_reason(raw) == expected


def test_unknown_finish_reason_raises() -> None:
    with pytest.raises(UnknownStopReason):
        gemini.map_stop_reason("SOMETHING_NEW")
    body = orjson.dumps({"candidates": [{"content": {"parts": [{"text": "x"}]}, "finishReason": "NEW"}]})
    with pytest.raises(UnknownStopReason):
        gemini.parse_response(body, context())


def test_max_tokens_with_function_call_stays_length() -> None:
    body = orjson.dumps(
        {
            "candidates": [
                {
                    "content": {"parts": [{"functionCall": {"name": "f", "args": {}}}]},
                    "finishReason": "MAX_TOKENS",
                }
            ]
        }
    )
    assert gemini.parse_response(body, context()).stop_reason == "length"


def test_response_without_finish_reason_or_not_json_is_a_protocol_error() -> None:
    with pytest.raises(UpstreamProtocolError):
        gemini.parse_response(
            orjson.dumps({"candidates": [{"content": {"parts": [{"text": "x"}]}}]}), context()
        )
    with pytest.raises(UpstreamProtocolError):
        gemini.parse_response(b"<html>", context())


def test_usage_splits_cached_tokens_out_of_prompt() -> None:
    u = usage_from(
        {
            "promptTokenCount": 1000,
            "cachedContentTokenCount": 600,
            "candidatesTokenCount": 50,
            "thoughtsTokenCount": 20,
        }
    )
    assert (u.input_tokens, u.cache_read_tokens, u.output_tokens, u.reasoning_tokens) == (400, 600, 70, 20)


def test_error_message_reads_google_error_body() -> None:
    body = (
        b'{"error": {"code": 429, "message": "Resource has been exhausted", "status": "RESOURCE_EXHAUSTED"}}'
    )
    assert gemini.error_message(429, body) == "RESOURCE_EXHAUSTED: Resource has been exhausted"
    assert gemini.error_message(500, b"[" + body + b"]") == "RESOURCE_EXHAUSTED: Resource has been exhausted"
    assert gemini.error_message(502, b"") == "HTTP 502 from Gemini"


# ---------------------------------------------------------------------------- native fields


def test_native_gemini_fields_are_laid_over_the_body() -> None:
    from gateway.schema import NativeFields

    req = user_request().model_copy(
        update={
            "temperature": 0.3,
            "tools": [ToolDefinition(name="f")],
            "native": NativeFields(
                api="gemini",
                fields={
                    "safetySettings": [{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}],
                    "tools": [{"googleSearch": {}}],
                    "generationConfig": {"seed": 7},
                },
                paths=["safetySettings", "tools[1].googleSearch", "generationConfig.seed"],
            ),
        }
    )
    body = body_of(req)
    assert body["safetySettings"] == [{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}]
    assert body["tools"][1] == {"googleSearch": {}}
    assert "functionDeclarations" in body["tools"][0]
    assert body["generationConfig"]["seed"] == 7
    assert body["generationConfig"]["temperature"] == 0.3


def test_a_clients_response_json_schema_replaces_the_translated_response_schema() -> None:
    from gateway.schema import NativeFields

    schema = {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": False}
    req = user_request(response_format=ResponseFormat(type="json_schema", schema=schema)).model_copy(
        update={
            "native": NativeFields(api="gemini", fields={"generationConfig": {"responseJsonSchema": schema}})
        }
    )
    gen = body_of(req)["generationConfig"]
    assert gen["responseJsonSchema"] == schema
    assert "responseSchema" not in gen
    assert gen["responseMimeType"] == "application/json"


def test_a_clients_thinking_config_is_sent_unless_the_guard_turned_thinking_off() -> None:
    from gateway.schema import NativeFields

    own = {"thinkingLevel": "LOW", "includeThoughts": False}
    native = NativeFields(api="gemini", fields={"generationConfig": {"thinkingConfig": own}})
    asked = user_request().model_copy(update={"thinking": ThinkingConfig(effort="low"), "native": native})
    assert body_of(asked)["generationConfig"]["thinkingConfig"] == own
    off = asked.model_copy(update={"thinking": ThinkingConfig(enabled=False, effort="low")})
    assert body_of(off)["generationConfig"].get("thinkingConfig") != own


def test_a_clients_function_response_object_is_sent_for_its_result() -> None:
    from gateway.schema import OwnKeys

    own = OwnKeys(api="gemini", keys={"response": {"temp": 21}})
    req = Request(
        model="m",
        messages=[
            UserMessage(content=[TextPart(text="weather?")]),
            AssistantMessage(content=[ToolCallPart(id="c1", name="weather", arguments={})]),
            ToolResultMessage(tool_call_id="c1", content=[TextPart(text='{"temp":21}')], own=own),
        ],
    )
    body = body_of(req)
    parts = [p["functionResponse"] for c in body["contents"] for p in c["parts"] if "functionResponse" in p]
    assert [p["response"] for p in parts] == [{"temp": 21}]


def test_another_apis_own_keys_on_a_result_are_not_sent_to_gemini() -> None:
    from gateway.schema import OwnKeys

    own = OwnKeys(api="openai_responses", keys={"response": {"temp": 21}, "status": "completed"})
    req = Request(
        model="m",
        messages=[
            UserMessage(content=[TextPart(text="weather?")]),
            AssistantMessage(content=[ToolCallPart(id="c1", name="weather", arguments={})]),
            ToolResultMessage(tool_call_id="c1", content=[TextPart(text="21 C")], own=own),
        ],
    )
    parts = [
        p["functionResponse"] for c in body_of(req)["contents"] for p in c["parts"] if "functionResponse" in p
    ]
    assert [p["response"] for p in parts] == [{"output": "21 C"}]


def test_a_format_description_becomes_the_response_schema_description() -> None:
    fmt = ResponseFormat(
        type="json_schema", description="A city.", schema={"type": "object", "properties": {}}
    )
    gen = body_of(user_request(response_format=fmt), model="gemini-2.0-flash")["generationConfig"]
    assert gen["responseSchema"]["description"] == "A city."
    gen = body_of(user_request(response_format=fmt))["generationConfig"]
    assert gen["responseJsonSchema"]["description"] == "A city."


SCHEMA = {
    "type": "object",
    "properties": {"a": {"anyOf": [{"type": "string"}, {"$ref": "#/$defs/B"}]}},
    "$defs": {"B": {"type": "integer"}},
    "required": ["a"],
    "additionalProperties": False,
}


@pytest.mark.parametrize(
    ("model", "slot"),
    [
        ("gemini-3-pro-preview", "responseJsonSchema"),
        ("gemini-2.5-flash", "responseJsonSchema"),
        ("models/gemini-2.5-pro", "responseJsonSchema"),
        ("gemini-2.0-flash-001", "responseSchema"),
        ("gemini-1.5-pro", "responseSchema"),
    ],
)
def test_structured_output_goes_in_the_slot_the_models_family_takes(model: str, slot: str) -> None:
    fmt = ResponseFormat(type="json_schema", schema=SCHEMA)
    gen = body_of(user_request(response_format=fmt), model=model)["generationConfig"]
    assert [k for k in gen if k.startswith("response")] == ["responseMimeType", slot]
    if slot == "responseJsonSchema":
        assert gen[slot] == SCHEMA  # JSON Schema as it is: nothing converted away


@pytest.mark.parametrize(
    ("model", "thinking", "sent"),
    [
        (
            "gemini-2.5-pro",
            ThinkingConfig(budget_tokens=50),
            {"thinkingBudget": 128, "includeThoughts": True},
        ),
        (
            "gemini-2.5-pro",
            ThinkingConfig(budget_tokens=64000),
            {"thinkingBudget": 32768, "includeThoughts": True},
        ),
        (
            "gemini-2.5-flash",
            ThinkingConfig(budget_tokens=64000),
            {"thinkingBudget": 24576, "includeThoughts": True},
        ),
        (
            "gemini-2.5-flash-lite",
            ThinkingConfig(effort="minimal"),
            {"thinkingBudget": 512, "includeThoughts": True},
        ),
        ("gemini-2.5-flash", ThinkingConfig(enabled=False), {"thinkingBudget": 0}),
        ("gemini-2.5-pro", ThinkingConfig(enabled=False), None),  # 2.5 Pro cannot turn thinking off
        (
            "gemini-3-pro-preview",
            ThinkingConfig(effort="medium"),
            {"thinkingLevel": "high", "includeThoughts": True},
        ),
        (
            "gemini-3-flash-preview",
            ThinkingConfig(effort="medium"),
            {"thinkingLevel": "medium", "includeThoughts": True},
        ),
        ("gemini-2.0-flash", ThinkingConfig(effort="high"), None),  # does not think
    ],
)
def test_thinking_is_sent_within_the_models_limits(model: str, thinking: ThinkingConfig, sent: Any) -> None:
    gen = body_of(user_request().model_copy(update={"thinking": thinking}), model=model).get(
        "generationConfig", {}
    )
    assert gen.get("thinkingConfig") == sent


def test_a_gemini_clients_json_schema_reaches_an_older_model_as_its_response_schema() -> None:
    from gateway.schema import NativeFields

    native = NativeFields(api="gemini", fields={"generationConfig": {"responseJsonSchema": SCHEMA}})
    req = user_request(response_format=ResponseFormat(type="json_schema", schema=SCHEMA)).model_copy(
        update={"native": native}
    )
    gen = body_of(req, model="gemini-2.0-flash")["generationConfig"]
    assert "responseJsonSchema" not in gen and gen["responseSchema"]["type"] == "object"
    assert body_of(req, model="gemini-2.5-flash")["generationConfig"]["responseJsonSchema"] == SCHEMA
