"""OpenAI Responses request bodies -> the internal schema: input items, tools, options, what is
carried for a Responses upstream, and what is refused by name."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from edges_testkit import CORPUS, iter_recorded_requests

from gateway.edges import openai_responses
from gateway.edges.openai_responses import NATIVE, parse_request
from gateway.edges.signatures import wrap_signature
from gateway.errors import InvalidRequest, PayloadTooLarge
from gateway.schema import (
    AssistantMessage,
    ImagePart,
    Provenance,
    RedactedThinkingPart,
    SystemMessage,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultMessage,
    UserMessage,
)


def _parse(**body: Any) -> Any:
    body.setdefault("model", "m")
    body.setdefault("input", "hi")
    return parse_request(orjson.dumps(body))


def _refused(**body: Any) -> InvalidRequest:
    with pytest.raises(InvalidRequest) as err:
        _parse(**body)
    return err.value


def test_a_string_input_is_one_user_message_and_instructions_the_system_message() -> None:
    req = _parse(input="hello", instructions="be brief")
    assert [type(m) for m in req.messages] == [SystemMessage, UserMessage]
    assert req.messages[0].content[0].text == "be brief"
    assert req.messages[1].content == [TextPart(text="hello")]


def test_message_items_of_every_role_and_part_type() -> None:
    req = _parse(
        input=[
            {"role": "developer", "content": "rules"},
            {"type": "message", "role": "system", "content": [{"type": "input_text", "text": "more"}]},
            {
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "look"},
                    {"type": "input_image", "image_url": "data:image/png;base64,AAAA"},
                    {"type": "input_image", "image_url": "https://x/y.png", "detail": "auto"},
                ],
            },
            {"role": "assistant", "content": [{"type": "output_text", "text": "seen", "annotations": []}]},
        ]
    )
    system, system2, user, assistant = req.messages
    assert isinstance(system, SystemMessage) and isinstance(system2, SystemMessage)
    assert user.content == [
        TextPart(text="look"),
        ImagePart(data="AAAA", media_type="image/png"),
        ImagePart(url="https://x/y.png"),
    ]
    assert isinstance(assistant, AssistantMessage) and assistant.text == "seen"


def test_function_calls_and_outputs_become_tool_calls_and_results_of_one_assistant_turn() -> None:
    req = _parse(
        input=[
            {"role": "user", "content": "go"},
            {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "think"}]},
            {"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "a", "arguments": '{"x": 1}'},
            {"type": "function_call", "call_id": "c2", "name": "b", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "one"},
            {
                "type": "function_call_output",
                "call_id": "c2",
                "output": [{"type": "input_text", "text": "two"}],
            },
        ]
    )
    _, assistant, r1, r2 = req.messages
    assert isinstance(assistant, AssistantMessage)
    assert [type(p) for p in assistant.content] == [ThinkingPart, ToolCallPart, ToolCallPart]
    call = assistant.tool_calls[0]
    assert (call.id, call.name, call.raw_arguments, call.arguments) == ("c1", "a", '{"x": 1}', {"x": 1})
    assert isinstance(r1, ToolResultMessage) and (r1.tool_call_id, r1.name) == ("c1", "a")
    assert r2.content == [TextPart(text="two")]


def test_encrypted_reasoning_keeps_its_signer() -> None:
    prov = Provenance(api="anthropic_messages", provider="anthropic", model="claude-x")
    wrapped = wrap_signature("SIG", prov)
    req = _parse(
        input=[
            {"role": "user", "content": "go"},
            {
                "type": "reasoning",
                "summary": [{"type": "summary_text", "text": "t"}],
                "encrypted_content": wrapped,
            },
            {"type": "reasoning", "summary": [], "encrypted_content": "raw-openai"},
            {"role": "assistant", "content": "done"},
        ]
    )
    thinking, redacted, text = req.messages[1].content
    assert thinking == ThinkingPart(text="t", signature="SIG", provenance=prov)
    assert redacted == RedactedThinkingPart(data="raw-openai", provenance=NATIVE)
    assert text == TextPart(text="done")


def test_custom_tools_are_emulated_as_a_function_with_one_string_argument() -> None:
    req = _parse(
        tools=[
            {
                "type": "custom",
                "name": "patch",
                "format": {"type": "grammar", "syntax": "regex", "definition": "a+"},
            }
        ],
        input=[
            {"role": "user", "content": "go"},
            {"type": "custom_tool_call", "call_id": "c1", "name": "patch", "input": "aaa"},
            {"type": "custom_tool_call_output", "call_id": "c1", "output": "ok"},
        ],
    )
    (tool,) = req.tools
    assert tool.parameters["properties"]["input"] == {
        "type": "string",
        "description": "The tool's free-form input.",
        "pattern": "a+",
    }
    assert tool.parameters["required"] == ["input"]
    assert "regex grammar" in (tool.description or "")
    assert tool.freeform == {
        "type": "grammar",
        "syntax": "regex",
        "definition": "a+",
    }  # for a Responses upstream
    call = req.messages[1].tool_calls[0]
    assert call.arguments == {"input": "aaa"}
    assert req.echo["custom_tools"] == {"patch"}


def test_options_are_translated_as_chat_translates_them() -> None:
    req = _parse(
        tools=[{"type": "function", "name": "f", "parameters": {"type": "object"}, "strict": True}],
        tool_choice={"type": "function", "name": "f"},
        parallel_tool_calls=False,
        text={"format": {"type": "json_schema", "name": "s", "schema": {"type": "object"}, "strict": True}},
        reasoning={"effort": "xhigh"},
        max_output_tokens=100,
        temperature=0.5,
        top_p=0.9,
        metadata={"k": "v"},
        user="u1",
        stream=True,
    )
    assert req.tools[0].strict is True
    assert (req.tool_choice.mode, req.tool_choice.name, req.tool_choice.parallel) == ("tool", "f", False)
    assert req.response_format.type == "json_schema" and req.response_format.schema_ == {"type": "object"}
    assert req.thinking.effort == "high"
    assert (req.max_output_tokens, req.temperature, req.top_p) == (100, 0.5, 0.9)
    assert req.metadata == {"k": "v"} and req.user == "u1"
    assert req.stream and req.include_usage


def test_hints_for_a_responses_upstream_are_carried_verbatim() -> None:
    req = _parse(
        prompt_cache_key="k",
        service_tier="flex",
        truncation="auto",
        text={"verbosity": "low"},
        reasoning={"effort": "low", "summary": "auto"},
        safety_identifier="s",
        user="u",
        include=["reasoning.encrypted_content"],
        store=False,
    )
    assert req.native is not None and req.native.api == "openai_responses"
    assert req.native.fields == {
        "prompt_cache_key": "k",
        "service_tier": "flex",
        "truncation": "auto",
        "text": {"verbosity": "low"},
        "reasoning": {"summary": "auto"},
        "safety_identifier": "s",
    }
    assert sorted(req.native.serving) == sorted(
        [
            "prompt_cache_key",
            "service_tier",
            "truncation",
            "text.verbosity",
            "reasoning.summary",
            "safety_identifier",
        ]
    )
    assert req.echo["include_encrypted"] is True
    assert "echo" not in req.model_dump()


def test_safety_identifier_is_the_user_when_no_user_is_given() -> None:
    assert _parse(safety_identifier="s").user == "s"


@pytest.mark.parametrize(
    ("body", "param", "words"),
    [
        ({"tools": [{"type": "web_search"}]}, "tools[0].type", "web_search"),
        (
            {"tools": [{"type": "mcp", "server_label": "x", "server_url": "https://m"}]},
            "tools[0].server_url",
            "mcp",
        ),
        ({"include": ["file_search_call.results"]}, "include[0]", "file_search_call.results"),
        ({"conversation": "conv_1"}, "conversation", "conversation"),
        ({"prompt": {"id": "p"}}, "prompt", "prompt"),
        ({"background": True}, "background", "background"),
        ({"top_logprobs": 2}, "top_logprobs", "top_logprobs"),
        (
            {"stream_options": {"include_obfuscation": True}},
            "stream_options.include_obfuscation",
            "obfuscation",
        ),
        ({"frobnicate": 1}, "frobnicate", "unknown field"),
        ({"input": [{"type": "item_reference", "id": "msg_1"}]}, "input[0].type", "item_reference"),
        ({"input": [{"type": "web_search_call", "id": "ws"}]}, "input[0].type", "web_search_call"),
        (
            {"input": [{"role": "user", "content": [{"type": "input_file", "filename": "x.pdf"}]}]},
            "input[0].content[0]",
            "exactly one of file_data, file_url or file_id",
        ),
        (
            {"input": [{"role": "user", "content": [{"type": "input_image", "file_id": "file_1"}]}]},
            "input[0].content[0].file_id",
            "file_id",
        ),
        ({"input": [{"role": "tool", "content": "x"}]}, "input[0].role", "role"),
        (
            {"tools": [{"type": "function", "name": "f"}, {"type": "custom", "name": "f"}]},
            "tools[1].name",
            "'f'",
        ),
    ],
)
def test_what_cannot_be_carried_is_refused_by_name(body: dict[str, Any], param: str, words: str) -> None:
    err = _refused(**body)
    assert err.param == param, err.message
    assert words in err.message


def test_a_json_schema_format_description_is_carried() -> None:
    fmt = {"type": "json_schema", "name": "City", "description": "A city.", "schema": {"type": "object"}}
    rf = _parse(text={"format": fmt}).response_format
    assert (rf.name, rf.description, rf.schema_) == ("City", "A city.", {"type": "object"})


def test_background_false_and_previous_response_id_null_are_accepted() -> None:
    _parse(background=False, previous_response_id=None, top_logprobs=0)


def test_store_defaults_to_true_and_previous_response_id_is_read() -> None:
    assert openai_responses.store_intent(_parse()) == (True, None)
    assert openai_responses.store_intent(_parse(store=False, previous_response_id="resp_1")) == (
        False,
        "resp_1",
    )


def test_with_history_puts_the_stored_chain_between_instructions_and_new_items() -> None:
    req = _parse(instructions="sys", input="new")
    history = [UserMessage(content=[TextPart(text="old")]), AssistantMessage(content=[TextPart(text="ans")])]
    out = openai_responses.with_history(req, history, response_id="resp_abc", stored=True)
    assert [type(m) for m in out.messages] == [SystemMessage, UserMessage, AssistantMessage, UserMessage]
    assert out.messages[-1].content[0].text == "new"
    assert out.echo["response_id"] == "resp_abc" and out.echo["store"] is True
    assert req.echo.get("response_id") is None, "the parsed request is not changed"


def test_unusable_call_ids_are_refused_naming_every_place() -> None:
    err = _refused(
        input=[
            {"role": "user", "content": "go"},
            {"type": "function_call", "call_id": "", "name": "a", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "", "output": "x"},
        ]
    )
    assert "input[1].call_id" in err.message and "input[2].call_id" in err.message


def test_too_many_items_is_payload_too_large() -> None:
    with pytest.raises(PayloadTooLarge) as err:
        _parse(input=[{"role": "user", "content": "x"}] * 20_000)
    assert err.value.param == "input"


def test_tokens_count_body_parses_like_a_response_body() -> None:
    req = openai_responses.parse_input_tokens(b'{"model": "m", "input": "count me"}')
    assert req.messages[0].content[0].text == "count me"


@pytest.mark.skipif(not CORPUS.is_dir(), reason="corpus not present (TURNSTILE_CORPUS)")
def test_every_recorded_responses_request_parses_or_is_refused_by_name() -> None:
    parsed = 0
    refused: list[str] = []
    for rel, i, url, body, _status in iter_recorded_requests():
        if not url.split("?", 1)[0].endswith("/responses"):
            continue
        try:
            assert parse_request(body).messages, f"{rel}#{i}"
            parsed += 1
        except InvalidRequest as exc:
            assert exc.param, f"{rel}#{i}: {exc.message}"
            refused.append(exc.param)
    assert parsed >= 90
    # hosted tools, background and conversation objects, logprobs, moderation, OpenRouter's provider
    allowed = {"background", "conversation", "include[0]", "moderation", "provider", "tools[0].type"}
    assert set(refused) <= allowed, refused


def test_more_tools_than_the_limit_is_refused_naming_the_limit() -> None:
    tools = [{"type": "function", "name": f"t{i}", "parameters": {"type": "object"}} for i in range(513)]
    body = orjson.dumps({"model": "m", "input": "hi", "tools": tools})
    with pytest.raises(PayloadTooLarge) as err:
        parse_request(body)
    assert "max_request_tools" in err.value.message


def test_a_tool_schema_past_the_node_limit_is_refused_naming_the_tool() -> None:
    props = {f"p{i}": {"type": "string"} for i in range(6000)}
    tools = [{"type": "function", "name": "big", "parameters": {"type": "object", "properties": props}}]
    with pytest.raises(PayloadTooLarge) as err:
        parse_request(orjson.dumps({"model": "m", "input": "hi", "tools": tools}))
    assert "'big'" in err.value.message and "max_tool_schema_nodes" in err.value.message


@pytest.mark.parametrize(
    ("metadata", "named"),
    [
        ({"a": 1}, "metadata.a"),
        ({f"k{i}": "v" for i in range(17)}, "metadata"),
        ({"k" * 65: "v"}, "metadata"),
        ({"a": "v" * 513}, "metadata.a"),
    ],
    ids=["non-string value", "17 pairs", "long key", "long value"],
)
def test_metadata_past_openais_bounds_is_refused_naming_the_entry(metadata: dict, named: str) -> None:
    with pytest.raises(InvalidRequest) as err:
        parse_request(orjson.dumps({"model": "m", "input": "hi", "metadata": metadata}))
    assert err.value.param == named


def test_metadata_within_bounds_is_carried() -> None:
    req = parse_request(orjson.dumps({"model": "m", "input": "hi", "metadata": {"team": "a"}}))
    assert req.metadata == {"team": "a"}


def test_an_allowed_tools_choice_is_read_as_the_allowed_names() -> None:
    req = parse_request(
        orjson.dumps(
            {
                "model": "m",
                "input": "hi",
                "tools": [{"type": "function", "name": "f", "parameters": {"type": "object"}}],
                "tool_choice": {
                    "type": "allowed_tools",
                    "mode": "required",
                    "tools": [{"type": "function", "name": "f"}],
                },
            }
        )
    )
    assert req.tool_choice is not None
    assert (req.tool_choice.mode, req.tool_choice.allowed) == ("required", ["f"])
