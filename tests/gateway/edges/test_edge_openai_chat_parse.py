"""OpenAI Chat Completions request parsing: every message and part kind, handed cases C05,
C07, C08, legacy functions, signature envelopes, and error paths naming the field."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from gateway.edges import openai_chat
from gateway.edges.signatures import wrap_tool_call_id
from gateway.errors import InvalidRequest
from gateway.schema import (
    AssistantMessage,
    ImagePart,
    Provenance,
    SystemMessage,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultMessage,
    UserMessage,
)

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="


def parse(body: dict[str, Any]) -> Any:
    return openai_chat.parse_request(orjson.dumps(body))


def test_messages_of_every_role_and_part_kind_parse_with_src() -> None:
    req = parse(
        {
            "model": "gpt-x",
            "messages": [
                {"role": "system", "content": "sys"},
                {"role": "developer", "content": [{"type": "text", "text": "dev"}]},
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "look"},
                        {"type": "image_url", "image_url": {"url": "https://x/y.png", "detail": "low"}},
                        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
                    ],
                },
                {
                    "role": "assistant",
                    "content": None,
                    "reasoning_content": "thinking...",
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "f", "arguments": '{"a": 1 }'},
                        },
                        {
                            "id": "call_2",
                            "type": "function",
                            "function": {"name": "g", "arguments": '{"cut": ['},
                        },
                    ],
                },
                {"role": "tool", "tool_call_id": "call_1", "content": "one"},
                {"role": "tool", "tool_call_id": "call_2", "content": [{"type": "text", "text": "two"}]},
                {"role": "assistant", "content": "done"},
            ],
        }
    )
    m = req.messages
    assert [type(x).__name__ for x in m] == [
        "SystemMessage",
        "SystemMessage",
        "UserMessage",
        "AssistantMessage",
        "ToolResultMessage",
        "ToolResultMessage",
        "AssistantMessage",
    ]
    assert [x.src for x in m] == [f"messages[{i}]" for i in range(7)]
    assert [m[0].developer, m[1].developer] == [False, True]  # type: ignore[union-attr]
    assert m[2].content == [
        TextPart(text="look"),
        ImagePart(url="https://x/y.png", detail="low"),
        ImagePart(data=PNG, media_type="image/png"),
    ]
    assistant = m[3]
    assert assistant.content[0] == ThinkingPart(text="thinking...")
    c1, c2 = assistant.tool_calls
    assert (c1.id, c1.name, c1.arguments, c1.raw_arguments, c1.src) == (
        "call_1",
        "f",
        {"a": 1},
        '{"a": 1 }',
        "messages[3].tool_calls[0]",
    )
    assert (c2.arguments, c2.raw_arguments) == ({}, '{"cut": [')  # not JSON: kept raw, the guards judge
    assert m[4].tool_call_id == "call_1" and m[4].name == "f" and m[4].content == [TextPart(text="one")]
    assert m[6].content == [TextPart(text="done")]


def test_c08_tool_message_with_text_and_image_parts_keeps_image_bytes() -> None:
    req = parse(
        {
            "model": "m",
            "messages": [
                {"role": "user", "content": "What colour is the screen?"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_s1",
                            "type": "function",
                            "function": {"name": "take_screenshot", "arguments": "{}"},
                        }
                    ],
                },
                {
                    "role": "tool",
                    "tool_call_id": "call_s1",
                    "content": [
                        {"type": "text", "text": "Screenshot captured."},
                        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
                    ],
                },
            ],
        }
    )
    result = req.messages[2]
    assert isinstance(result, ToolResultMessage)
    assert result.content == [
        TextPart(text="Screenshot captured."),
        ImagePart(data=PNG, media_type="image/png"),
    ]


def test_c05_anthropic_style_tool_use_in_assistant_content_is_kept_next_to_tool_calls() -> None:
    req = parse(
        {
            "model": "m",
            "messages": [
                {"role": "user", "content": "What files are here?"},
                {
                    "role": "assistant",
                    "content": [
                        {"type": "tool_use", "id": "toolu_d1", "name": "list_files", "input": {"dir": "."}}
                    ],
                    "tool_calls": [
                        {
                            "id": "toolu_d1",
                            "type": "function",
                            "function": {"name": "list_files", "arguments": '{"dir":"."}'},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": "toolu_d1", "content": "a.txt"},
            ],
        }
    )
    calls = req.messages[1].tool_calls
    assert [(c.id, c.name, c.arguments, c.src) for c in calls] == [
        ("toolu_d1", "list_files", {"dir": "."}, "messages[1].content[0]"),
        ("toolu_d1", "list_files", {"dir": "."}, "messages[1].tool_calls[0]"),
    ]


def test_c07_empty_content_next_to_tool_calls_is_dropped() -> None:
    req = parse(
        {
            "model": "m",
            "messages": [
                {"role": "user", "content": "dog"},
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [
                        {
                            "id": "call_e2",
                            "type": "function",
                            "function": {"name": "type_letter", "arguments": '{"letter":"o"}'},
                        }
                    ],
                },
                {
                    "role": "assistant",
                    "content": [{"type": "text", "text": ""}, {"type": "text", "text": "x"}],
                },
            ],
        }
    )
    assert [type(p).__name__ for p in req.messages[1].content] == ["ToolCallPart"]
    assert req.messages[2].content == [TextPart(text="x")]


def test_legacy_function_call_gets_deterministic_id_and_function_result_pairs_to_it() -> None:
    body = {
        "model": "m",
        "functions": [{"name": "lookup", "parameters": {"type": "object"}}],
        "function_call": {"name": "lookup"},
        "messages": [
            {"role": "user", "content": "q"},
            {
                "role": "assistant",
                "content": None,
                "function_call": {"name": "lookup", "arguments": '{"q":1}'},
            },
            {"role": "function", "name": "lookup", "content": "result"},
        ],
    }
    req = parse(body)
    call = req.messages[1].tool_calls[0]
    assert call.id == openai_chat.legacy_call_id(1, "lookup", '{"q":1}')
    assert call.id.startswith("call_") and len(call.id) == 29
    assert call.src == "messages[1].function_call"
    result = req.messages[2]
    assert isinstance(result, ToolResultMessage)
    assert (result.tool_call_id, result.name) == (call.id, "lookup")
    assert parse(body).messages[1].tool_calls[0].id == call.id
    assert req.tools[0].name == "lookup"
    assert (req.tool_choice.mode, req.tool_choice.name) == ("tool", "lookup")


def test_wrapped_tool_call_ids_are_unwrapped_in_calls_and_results() -> None:
    prov = Provenance(api="gemini", provider="google", model="gemini-2.5-pro")
    wrapped = wrap_tool_call_id("call_1", "SIG_G1_opaque", prov)
    req = parse(
        {
            "model": "m",
            "messages": [
                {"role": "user", "content": "q"},
                {
                    "role": "assistant",
                    "tool_calls": [
                        {"id": wrapped, "type": "function", "function": {"name": "shell", "arguments": "{}"}}
                    ],
                },
                {"role": "tool", "tool_call_id": wrapped, "content": "a.txt"},
            ],
        }
    )
    call = req.messages[1].tool_calls[0]
    assert (call.id, call.signature, call.provenance) == ("call_1", "SIG_G1_opaque", prov)
    assert req.messages[2].tool_call_id == "call_1"


def test_request_options_parse() -> None:
    req = parse(
        {
            "model": "m",
            "messages": [{"role": "user", "content": "q"}],
            "tools": [
                {
                    "type": "function",
                    "function": {
                        "name": "f",
                        "description": "d",
                        "parameters": {"type": "object"},
                        "strict": True,
                    },
                }
            ],
            "tool_choice": "required",
            "parallel_tool_calls": False,
            "max_tokens": 10,
            "max_completion_tokens": 20,
            "temperature": 0.5,
            "top_p": 1,
            "stop": "END",
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": "x", "schema": {"type": "object"}, "strict": True},
            },
            "stream": True,
            "stream_options": {"include_usage": True},
            "user": "u1",
            "metadata": {"k": "v"},
            "reasoning_effort": "low",
            "seed": 3,
            "n": 1,
        }
    )
    assert req.tools[0].model_dump(exclude_none=True) == {
        "name": "f",
        "description": "d",
        "parameters": {"type": "object"},
        "strict": True,
    }
    assert (req.tool_choice.mode, req.tool_choice.parallel) == ("required", False)
    assert req.max_output_tokens == 20
    assert (req.temperature, req.top_p, req.stop) == (0.5, 1, ["END"])
    assert req.response_format.type == "json_schema" and req.response_format.schema_ == {"type": "object"}
    assert req.stream and req.include_usage
    assert (req.user, req.metadata) == ("u1", {"k": "v"})
    assert req.thinking.effort == "low" and req.thinking.enabled


@pytest.mark.parametrize(
    ("choice", "expected"),
    [
        ("auto", ("auto", None)),
        ("none", ("none", None)),
        ({"type": "function", "function": {"name": "f"}}, ("tool", "f")),
    ],
)
def test_tool_choice_forms(choice: Any, expected: tuple[str, str | None]) -> None:
    req = parse({"model": "m", "messages": [{"role": "user", "content": "q"}], "tool_choice": choice})
    assert (req.tool_choice.mode, req.tool_choice.name) == expected


@pytest.mark.parametrize(
    ("effort", "enabled", "level"),
    [("none", False, None), ("xhigh", True, "high"), ("minimal", True, "minimal")],
)
def test_reasoning_effort_maps_to_thinking_config(effort: str, enabled: bool, level: str | None) -> None:
    req = parse({"model": "m", "messages": [{"role": "user", "content": "q"}], "reasoning_effort": effort})
    assert (req.thinking.enabled, req.thinking.effort) == (enabled, level)


def test_null_optional_fields_are_treated_as_absent() -> None:
    req = parse(
        {
            "model": "m",
            "messages": [{"role": "user", "content": "q", "name": None, "tool_calls": None}],
            "stop": None,
        }
    )
    assert req.stop == [] and isinstance(req.messages[0], UserMessage)


def test_system_message_cache_control_is_passed_to_its_text() -> None:
    req = parse(
        {
            "model": "m",
            "messages": [
                {"role": "system", "content": "s", "cache_control": {"type": "ephemeral"}},
                {"role": "user", "content": "q"},
            ],
        }
    )
    assert isinstance(req.messages[0], SystemMessage)
    assert req.messages[0].content[0].cache_control == {"type": "ephemeral"}


def test_assistant_thinking_block_with_wrapped_signature_is_unwrapped() -> None:
    from gateway.edges.signatures import wrap_signature

    prov = Provenance(api="anthropic_messages", provider="anthropic", model="claude-x")
    req = parse(
        {
            "model": "m",
            "messages": [
                {"role": "user", "content": "q"},
                {
                    "role": "assistant",
                    "content": [
                        {"type": "thinking", "thinking": "t", "signature": wrap_signature("S", prov)}
                    ],
                },
            ],
        }
    )
    assert req.messages[1].content[0] == ThinkingPart(text="t", signature="S", provenance=prov)
    assert isinstance(req.messages[1], AssistantMessage)
    assert not isinstance(req.messages[1].content[0], ToolCallPart)


M = [{"role": "user", "content": "q"}]


@pytest.mark.parametrize(
    ("body", "param", "needle"),
    [
        (b"{not json", None, "body is not valid JSON"),
        (b"[1]", None, "JSON object"),
        ({"messages": M}, "model", "field required"),
        ({"model": 3, "messages": M}, "model", "expected a string"),
        ({"model": "m"}, "messages", "field required"),
        ({"model": "m", "messages": []}, "messages", "at least one"),
        ({"model": "m", "messages": "hi"}, "messages", "expected an array"),
        ({"model": "m", "messages": [3]}, "messages[0]", "expected an object"),
        ({"model": "m", "messages": [{"content": "x"}]}, "messages[0].role", "field required"),
        ({"model": "m", "messages": [{"role": "robot", "content": "x"}]}, "messages[0].role", "unknown role"),
        (
            {"model": "m", "messages": [{"role": "user", "content": 5}]},
            "messages[0].content",
            "expected a string or",
        ),
        (
            {
                "model": "m",
                "messages": [{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "video"}]}],
            },
            "messages[0].content[1].type",
            "unknown content part type",
        ),
        (
            {
                "model": "m",
                "messages": [{"role": "user", "content": [{"type": "audio", "audio": {}}]}],
            },
            "messages[0].content[0].type",
            "not supported yet",
        ),
        (
            {
                "model": "m",
                "messages": [
                    {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "ftp://x"}}]}
                ],
            },
            "messages[0].content[0].image_url.url",
            "http(s) URL",
        ),
        (
            {
                "model": "m",
                "messages": [
                    {
                        "role": "user",
                        "content": [{"type": "image_url", "image_url": {"url": "data:image/png,abc"}}],
                    }
                ],
            },
            "messages[0].content[0].image_url.url",
            "base64",
        ),
        (
            {
                "model": "m",
                "messages": [
                    M[0],
                    {"role": "assistant", "tool_calls": [{"type": "function", "function": {"name": "f"}}]},
                ],
            },
            "messages[1].tool_calls[0].id",
            "field required",
        ),
        (
            {
                "model": "m",
                "messages": [
                    M[0],
                    {"role": "assistant", "tool_calls": [{"id": "c", "function": {"arguments": "{}"}}]},
                ],
            },
            "messages[1].tool_calls[0].function.name",
            "field required",
        ),
        (
            {"model": "m", "messages": [{"role": "tool", "content": "x"}]},
            "messages[0].tool_call_id",
            "field required",
        ),
        (
            {"model": "m", "messages": M, "tools": [{"type": "web_search"}]},
            "tools[0].type",
            "not supported yet",
        ),
        (
            {"model": "m", "messages": M, "tools": [{"type": "function", "function": {}}]},
            "tools[0].function.name",
            "required",
        ),
        ({"model": "m", "messages": M, "tool_choice": "always"}, "tool_choice", "expected auto"),
        ({"model": "m", "messages": M, "max_tokens": "10"}, "max_tokens", "expected an integer"),
        ({"model": "m", "messages": M, "max_tokens": 0}, "max_tokens", "at least 1"),
        ({"model": "m", "messages": M, "temperature": True}, "temperature", "expected a number"),
        ({"model": "m", "messages": M, "stop": [1]}, "stop[0]", "expected a string"),
        ({"model": "m", "messages": M, "stream": "yes"}, "stream", "expected a boolean"),
        (
            {"model": "m", "messages": M, "stream_options": {"include_usage": 1}},
            "stream_options.include_usage",
            "boolean",
        ),
        ({"model": "m", "messages": M, "n": 2}, "n", "choices per request are not relayed"),
        ({"model": "m", "messages": M, "reasoning_effort": "extreme"}, "reasoning_effort", "expected none"),
        (
            {"model": "m", "messages": M, "response_format": {"type": "yaml"}},
            "response_format.type",
            "unknown",
        ),
    ],
)
def test_invalid_requests_name_the_field_and_are_400(body: Any, param: str | None, needle: str) -> None:
    raw = body if isinstance(body, bytes) else orjson.dumps(body)
    with pytest.raises(InvalidRequest) as exc:
        openai_chat.parse_request(raw)
    assert exc.value.status == 400
    assert exc.value.param == param
    assert needle in exc.value.message
    if param:
        assert param in exc.value.message


def test_a_json_schema_response_format_description_is_carried() -> None:
    js = {"name": "City", "description": "A city.", "schema": {"type": "object"}}
    rf = parse({"model": "m", "messages": M, "response_format": {"type": "json_schema", "json_schema": js}})
    assert (rf.response_format.name, rf.response_format.description) == ("City", "A city.")


def test_n_above_one_is_refused_by_name_with_the_reason() -> None:
    with pytest.raises(InvalidRequest) as exc:
        parse({"model": "m", "messages": [{"role": "user", "content": "hi"}], "n": 3})
    assert exc.value.param == "n"
    assert "a turn is one answer" in str(exc.value)
    assert parse({"model": "m", "messages": [{"role": "user", "content": "hi"}], "n": 1}).messages


def test_stream_obfuscation_asked_for_is_refused_by_name_as_on_the_responses_edge() -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}
    with pytest.raises(InvalidRequest) as err:
        parse({**body, "stream_options": {"include_obfuscation": True}})
    assert err.value.param == "stream_options.include_obfuscation"
    parse({**body, "stream_options": {"include_obfuscation": False}})
