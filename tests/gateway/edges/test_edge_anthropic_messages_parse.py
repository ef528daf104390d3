"""Anthropic Messages request parsing: every block kind, handed cases C04, C07, C09, C16,
signature envelopes, count_tokens, and error paths naming the field."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from gateway.edges import anthropic_messages
from gateway.edges.signatures import wrap_signature, wrap_tool_call_id
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
    ToolResultMessage,
    UserMessage,
)

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
TOOL = {"name": "list_dir", "description": "d", "input_schema": {"type": "object"}}


def parse(body: dict[str, Any]) -> Any:
    return anthropic_messages.parse_request(orjson.dumps({"model": "claude", "max_tokens": 100, **body}))


def test_c04_tool_results_come_before_the_turns_text() -> None:
    req = parse(
        {
            "tools": [TOOL],
            "messages": [
                {"role": "user", "content": "List the current folder."},
                {
                    "role": "assistant",
                    "content": [
                        {"type": "tool_use", "id": "toolu_l1", "name": "list_dir", "input": {"path": "."}}
                    ],
                },
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "Here is the listing:"},
                        {"type": "tool_result", "tool_use_id": "toolu_l1", "content": "a.txt\nb.txt"},
                    ],
                },
            ],
        }
    )
    m = req.messages
    assert [type(x).__name__ for x in m] == [
        "UserMessage",
        "AssistantMessage",
        "ToolResultMessage",
        "UserMessage",
    ]
    result = m[2]
    assert (result.tool_call_id, result.name, result.src) == (
        "toolu_l1",
        "list_dir",
        "messages[2].content[1]",
    )
    assert result.content == [TextPart(text="a.txt\nb.txt")]
    assert m[3].content == [TextPart(text="Here is the listing:")] and m[3].src == "messages[2]"
    call = m[1].tool_calls[0]
    assert (call.id, call.arguments, call.raw_arguments, call.src) == (
        "toolu_l1",
        {"path": "."},
        '{"path":"."}',
        "messages[1].content[0]",
    )


def test_c07_empty_text_block_next_to_tool_use_is_dropped() -> None:
    req = parse(
        {
            "messages": [
                {"role": "user", "content": "dog"},
                {
                    "role": "assistant",
                    "content": [
                        {"type": "text", "text": ""},
                        {
                            "type": "tool_use",
                            "id": "toolu_e1",
                            "name": "type_letter",
                            "input": {"letter": "d"},
                        },
                    ],
                },
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": "toolu_e1", "content": "OK"}],
                },
            ]
        }
    )
    assert [type(p).__name__ for p in req.messages[1].content] == ["ToolCallPart"]
    assert [type(x).__name__ for x in req.messages] == [
        "UserMessage",
        "AssistantMessage",
        "ToolResultMessage",
    ]


def test_c09_tool_result_with_text_and_image_blocks() -> None:
    req = parse(
        {
            "messages": [
                {"role": "user", "content": "Open shot.png"},
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "toolu_i1", "name": "read_image", "input": {}}],
                },
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": "toolu_i1",
                            "is_error": False,
                            "content": [
                                {"type": "text", "text": "Image loaded."},
                                {
                                    "type": "image",
                                    "source": {"type": "base64", "media_type": "image/png", "data": PNG},
                                },
                            ],
                        }
                    ],
                },
            ]
        }
    )
    result = req.messages[2]
    assert isinstance(result, ToolResultMessage)
    assert result.content == [TextPart(text="Image loaded."), ImagePart(data=PNG, media_type="image/png")]
    assert result.is_error is False


def test_c16_raw_signature_gets_native_provenance_and_wrapped_one_its_own() -> None:
    prov = Provenance(api="gemini", provider="google", model="gemini-2.5-pro")
    req = parse(
        {
            "thinking": {"type": "enabled", "budget_tokens": 1024},
            "messages": [
                {"role": "user", "content": "Price of SKU X1?"},
                {
                    "role": "assistant",
                    "content": [
                        {"type": "thinking", "thinking": "Need the price tool.", "signature": "SIG_A_opaque"},
                        {"type": "thinking", "thinking": "other", "signature": wrap_signature("SIG_G", prov)},
                        {"type": "redacted_thinking", "data": "ENC"},
                        {"type": "tool_use", "id": "toolu_k1", "name": "get_price", "input": {"sku": "X1"}},
                    ],
                },
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": "toolu_k1", "content": "9.99"}],
                },
            ],
        }
    )
    parts = req.messages[1].content
    assert parts[0] == ThinkingPart(
        text="Need the price tool.", signature="SIG_A_opaque", provenance=anthropic_messages.NATIVE
    )
    assert parts[1] == ThinkingPart(text="other", signature="SIG_G", provenance=prov)
    assert parts[2] == RedactedThinkingPart(data="ENC", provenance=anthropic_messages.NATIVE)
    assert req.thinking.budget_tokens == 1024 and req.thinking.enabled


def test_c17_signature_carried_in_tool_use_id_is_unwrapped_in_call_and_result() -> None:
    prov = Provenance(api="gemini", provider="google", model="gemini-2.5-pro")
    wrapped = wrap_tool_call_id("call_1", "SIG_G1_opaque", prov)
    req = parse(
        {
            "messages": [
                {"role": "user", "content": "List the files."},
                {
                    "role": "assistant",
                    "content": [
                        {"type": "tool_use", "id": wrapped, "name": "shell", "input": {"command": "ls"}}
                    ],
                },
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": wrapped, "content": "a.txt"}],
                },
            ]
        }
    )
    call = req.messages[1].tool_calls[0]
    assert (call.id, call.signature, call.provenance) == ("call_1", "SIG_G1_opaque", prov)
    assert req.messages[2].tool_call_id == "call_1" and req.messages[2].name == "shell"


def test_system_options_and_images_parse() -> None:
    req = parse(
        {
            "system": [{"type": "text", "text": "sys", "cache_control": {"type": "ephemeral"}}],
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {"type": "image", "source": {"type": "url", "url": "https://x/y.png"}},
                        {"type": "text", "text": "what?"},
                    ],
                },
                {"role": "assistant", "content": "prefill"},
                {"role": "system", "content": "mid-conversation"},
            ],
            "tools": [{**TOOL, "cache_control": {"type": "ephemeral"}, "strict": True}],
            "tool_choice": {"type": "any", "disable_parallel_tool_use": True},
            "temperature": 0.2,
            "top_p": 0.9,
            "top_k": 5,
            "stop_sequences": ["X"],
            "metadata": {"user_id": "u9"},
            "stream": True,
            "output_config": {
                "effort": "max",
                "format": {"type": "json_schema", "schema": {"type": "object"}},
            },
        }
    )
    m = req.messages
    assert isinstance(m[0], SystemMessage) and m[0].src == "system"
    assert m[0].content == [TextPart(text="sys", cache_control={"type": "ephemeral"})]
    assert isinstance(m[1], UserMessage) and m[1].content[0] == ImagePart(url="https://x/y.png")
    assert isinstance(m[2], AssistantMessage) and m[2].text == "prefill"
    assert isinstance(m[3], SystemMessage) and m[3].src == "messages[2]"
    assert req.tools[0].parameters == {"type": "object"} and req.tools[0].strict is True
    assert (req.tool_choice.mode, req.tool_choice.parallel) == ("required", False)
    assert (req.temperature, req.top_p, req.top_k, req.stop) == (0.2, 0.9, 5, ["X"])
    assert (req.user, req.metadata) == ("u9", {"user_id": "u9"})
    assert req.stream and req.include_usage and req.max_output_tokens == 100
    assert req.thinking.effort == "high"
    assert req.response_format.type == "json_schema"


@pytest.mark.parametrize(
    ("choice", "expected"),
    [
        ({"type": "auto"}, ("auto", None, None)),
        ({"type": "none"}, ("none", None, None)),
        ({"type": "tool", "name": "f", "disable_parallel_tool_use": False}, ("tool", "f", True)),
    ],
)
def test_tool_choice_forms(choice: dict[str, Any], expected: tuple[Any, ...]) -> None:
    req = parse({"messages": [{"role": "user", "content": "q"}], "tool_choice": choice})
    assert (req.tool_choice.mode, req.tool_choice.name, req.tool_choice.parallel) == expected


@pytest.mark.parametrize(
    ("thinking", "enabled"),
    [({"type": "disabled"}, False), ({"type": "adaptive"}, True), ({"type": "between_tools"}, True)],
)
def test_thinking_forms(thinking: dict[str, Any], enabled: bool) -> None:
    req = parse({"messages": [{"role": "user", "content": "q"}], "thinking": thinking})
    assert req.thinking.enabled is enabled


def test_count_tokens_does_not_need_max_tokens() -> None:
    req = anthropic_messages.parse_count_tokens(
        orjson.dumps({"model": "c", "messages": [{"role": "user", "content": "q"}]})
    )
    assert req.max_output_tokens is None
    assert anthropic_messages.render_count_tokens(7) == {"input_tokens": 7}


U = [{"role": "user", "content": "q"}]


@pytest.mark.parametrize(
    ("body", "param", "needle"),
    [
        ({"model": "c", "messages": U}, "max_tokens", "field required"),
        ({"max_tokens": 5, "messages": U}, "model", "field required"),
        ({"model": "c", "max_tokens": 5, "messages": []}, "messages", "at least one"),
        ({"model": "c", "max_tokens": 5.5, "messages": U}, "max_tokens", "expected an integer"),
        (
            {"model": "c", "max_tokens": 5, "messages": [{"role": "tool", "content": "x"}]},
            "messages[0].role",
            "unknown role",
        ),
        (
            {
                "model": "c",
                "max_tokens": 5,
                "messages": [
                    {"role": "user", "content": "q"},
                    {"role": "user", "content": "q"},
                    {"role": "user", "content": "q"},
                    {
                        "role": "user",
                        "content": [
                            {"type": "text", "text": "see"},
                            {
                                "type": "search_result",
                                "source": "https://example.com",
                            },
                        ],
                    },
                ],
            },
            "messages[3].content[1].type",
            "not supported yet",
        ),
        (
            {
                "model": "c",
                "max_tokens": 5,
                "messages": [
                    {
                        "role": "user",
                        "content": [{"type": "image", "source": {"type": "base64", "data": "x"}}],
                    }
                ],
            },
            "messages[0].content[0].source.media_type",
            "field required",
        ),
        (
            {
                "model": "c",
                "max_tokens": 5,
                "messages": [
                    {
                        "role": "user",
                        "content": [{"type": "image", "source": {"type": "clay", "file_id": "f"}}],
                    }
                ],
            },
            "messages[0].content[0].source.type",
            "not supported yet",
        ),
        (
            {
                "model": "c",
                "max_tokens": 5,
                "messages": [{"role": "user", "content": [{"type": "tool_result", "content": "x"}]}],
            },
            "messages[0].content[0].tool_use_id",
            "field required",
        ),
        (
            {
                "model": "c",
                "max_tokens": 5,
                "messages": [
                    {
                        "role": "user",
                        "content": [
                            {"type": "tool_result", "tool_use_id": "t", "content": [{"type": "video"}]}
                        ],
                    }
                ],
            },
            "messages[0].content[0].content[0].type",
            "unknown content block type",
        ),
        (
            {
                "model": "c",
                "max_tokens": 5,
                "messages": [
                    {
                        "role": "assistant",
                        "content": [{"type": "tool_use", "id": "t", "name": "n", "input": []}],
                    }
                ],
            },
            "messages[0].content[0].input",
            "expected an object",
        ),
        (
            {
                "model": "c",
                "max_tokens": 5,
                "messages": [
                    {
                        "role": "assistant",
                        "content": [{"type": "thinking", "thinking": "x", "signature": "tsig1.@@.s"}],
                    }
                ],
            },
            "messages[0].content[0].signature",
            "damaged",
        ),
        (
            {
                "model": "c",
                "max_tokens": 5,
                "messages": U,
                "tools": [{"type": "web_search", "name": "web_search"}],
            },
            "tools[0].type",
            "unknown tool type 'web_search'",
        ),
        (
            {"model": "c", "max_tokens": 5, "messages": U, "tools": [{"name": "f"}]},
            "tools[0].input_schema",
            "field required",
        ),
        (
            {"model": "c", "max_tokens": 5, "messages": U, "tool_choice": {"type": "maybe"}},
            "tool_choice.type",
            "expected auto",
        ),
        (
            {"model": "c", "max_tokens": 5, "messages": U, "tool_choice": {"type": "tool"}},
            "tool_choice.name",
            "field required",
        ),
        (
            {"model": "c", "max_tokens": 5, "messages": U, "thinking": {"type": "enabled"}},
            "thinking.budget_tokens",
            "required",
        ),
        (
            {"model": "c", "max_tokens": 5, "messages": U, "stop_sequences": ["a", 1]},
            "stop_sequences[1]",
            "expected a string",
        ),
        (
            {"model": "c", "max_tokens": 5, "messages": U, "system": [{"type": "image"}]},
            "system[0].type",
            "unknown content block",
        ),
        (
            {"model": "c", "max_tokens": 5, "messages": U, "diagnostics": {"previous_message_id": "m"}},
            "diagnostics",
            "not supported yet",
        ),
    ],
)
def test_invalid_requests_name_the_field_and_are_400(body: dict[str, Any], param: str, needle: str) -> None:
    with pytest.raises(InvalidRequest) as exc:
        anthropic_messages.parse_request(orjson.dumps(body))
    assert exc.value.status == 400
    assert exc.value.param == param
    assert needle in exc.value.message and param in exc.value.message


def test_malformed_json_is_invalid_request() -> None:
    with pytest.raises(InvalidRequest, match="body is not valid JSON"):
        anthropic_messages.parse_request(b'{"model": ')


def _with(**extra: Any) -> dict[str, Any]:
    return {"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}], **extra}


def test_the_beta_top_level_output_format_is_the_same_response_format() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    beta = parse(_with(output_format={"type": "json_schema", "schema": schema}))
    ga = parse(_with(output_config={"format": {"type": "json_schema", "schema": schema}}))
    assert beta.response_format == ga.response_format
    assert beta.response_format.schema_ == schema


def test_output_format_beside_output_config_format_is_refused_by_name() -> None:
    fmt = {"type": "json_schema", "schema": {"type": "object"}}
    with pytest.raises(InvalidRequest) as err:
        parse(_with(output_format=fmt, output_config={"format": fmt}))
    assert err.value.param == "output_format"
    with pytest.raises(InvalidRequest) as err:
        parse(_with(output_format={"type": "text"}))
    assert err.value.param == "output_format.type"


SEARCH_TOOL = {"type": "web_search_20250305", "name": "web_search", "max_uses": 2}
SERVER_CALL = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "x"}}
SERVER_RESULT = {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []}
TOOL_REF = {"type": "tool_reference", "tool_name": "Read"}
TOOL_SEARCH_BODY: dict[str, Any] = {
    "model": "c",
    "max_tokens": 5,
    "tools": [
        {"name": "ToolSearch", "input_schema": {"type": "object"}},
        {"name": "Read", "input_schema": {"type": "object"}, "defer_loading": True},
        SEARCH_TOOL,
    ],
    "messages": [
        {"role": "user", "content": "q"},
        {
            "role": "assistant",
            "content": [
                SERVER_CALL,
                SERVER_RESULT,
                {"type": "tool_use", "id": "toolu_1", "name": "ToolSearch", "input": {"query": "read"}},
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": [TOOL_REF]}],
        },
    ],
}
"""Claude Code's tool search (``tool_reference`` in a tool result, deferred tools) beside a web
search round trip in the history."""


def test_server_tools_server_blocks_and_tool_references_are_native_and_classed() -> None:
    req = anthropic_messages.parse_request(orjson.dumps(TOOL_SEARCH_BODY))
    assert [t.name for t in req.tools] == ["ToolSearch", "Read"]
    assert req.native is not None and req.native.api == "anthropic_messages"
    assert req.native.fields["server_tools"] == [SEARCH_TOOL]
    assert req.native.fields["server_tool_at"] == [2]  # after ToolSearch and Read, as sent
    assert req.native.fields["tool_fields"] == {"Read": {"defer_loading": True}}
    asst = req.messages[1]
    assert isinstance(asst, AssistantMessage)
    assert [p.type for p in asst.content] == ["native", "native", "tool_call"]
    assert [p.block for p in asst.content[:2]] == [SERVER_CALL, SERVER_RESULT]  # type: ignore[union-attr]
    assert [c.id for c in asst.tool_calls] == ["toolu_1"]  # the server's own call is not one
    result = req.messages[2]
    assert isinstance(result, ToolResultMessage)
    assert result.content[0].block == TOOL_REF  # type: ignore[union-attr]
    assert result.content[0].text == "Tool loaded: Read"  # type: ignore[union-attr]
    assert req.native.paths == [
        "messages[1].content[0] (server_tool_use)",
        "messages[1].content[1] (web_search_tool_result)",
        "tools[2] (web_search_20250305 'web_search')",
    ]
    assert req.native.serving == ["tools[1].defer_loading"]
    assert req.native.translated == ["messages[2].content[0].content[0] (tool_reference)"]


def test_a_tool_reference_without_its_tool_name_is_refused_by_name() -> None:
    body = {**TOOL_SEARCH_BODY}
    body["messages"] = [
        *TOOL_SEARCH_BODY["messages"][:2],
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "tool_reference"}]}
            ],
        },
    ]
    with pytest.raises(InvalidRequest) as exc:
        anthropic_messages.parse_request(orjson.dumps(body))
    assert exc.value.param == "messages[2].content[0].content[0].tool_name"


def test_text_citations_are_kept_verbatim_and_named_serving() -> None:
    cite = {
        "type": "web_search_result_location",
        "url": "https://x",
        "cited_text": "c",
        "encrypted_index": "E",
    }
    body = {
        **TOOL_SEARCH_BODY,
        "messages": [
            *TOOL_SEARCH_BODY["messages"][:2],
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "r"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "It rains.", "citations": [cite]}]},
            {"role": "user", "content": "thanks"},
        ],
    }
    req = anthropic_messages.parse_request(orjson.dumps(body))
    assert req.messages[3].content[0].citations == [cite]  # type: ignore[union-attr]
    assert req.native is not None
    assert req.native.serving == ["messages[3].content[0].citations", "tools[1].defer_loading"]


def test_a_messages_own_keys_are_kept_on_it_for_an_anthropic_upstream() -> None:
    """Claude Code 2.1.332 sends its per-turn effort on the mid-conversation system message
    (``per-turn-control-2026-07-01``): kept on the message (``own``, so the session log keeps
    it too), dropped (named by path) toward other wire APIs."""
    req = parse(
        {
            "messages": [
                {"role": "user", "content": "q"},
                {"role": "system", "content": "# Environment", "output_config": {"effort": "medium"}},
            ]
        }
    )
    assert isinstance(req.messages[1], SystemMessage) and req.messages[1].src == "messages[1]"
    assert req.native is not None and req.native.api == "anthropic_messages"
    assert req.messages[1].own == OwnKeys(
        api="anthropic_messages", keys={"output_config": {"effort": "medium"}}
    )
    assert req.messages[0].own is None
    assert req.native.serving == ["messages[1].output_config"] and req.native.paths == []


def test_a_messages_unknown_own_key_is_refused_toward_other_apis_by_its_path() -> None:
    req = parse({"messages": [{"role": "user", "content": "q", "future_key": 1}]})
    assert req.native is not None
    assert req.messages[0].own == OwnKeys(api="anthropic_messages", keys={"future_key": 1})
    assert req.native.paths == ["messages[0].future_key"]


def test_every_message_made_of_one_client_message_carries_its_own_keys() -> None:
    req = parse(
        {
            "messages": [
                {"role": "user", "content": "q"},
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {}}],
                },
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": "t1", "content": "r"},
                        {"type": "text", "text": "go"},
                    ],
                    "future_key": 1,
                },
            ]
        }
    )
    result, user = req.messages[2:]
    assert result.own == user.own == OwnKeys(api="anthropic_messages", keys={"future_key": 1})


@pytest.mark.parametrize("key", ["betas", "workspace_id", "user_profile_id"])
def test_an_sdk_header_parameter_in_the_body_is_refused_by_name(key: str) -> None:
    body = {"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}], key: ["x"]}
    with pytest.raises(InvalidRequest) as err:
        anthropic_messages.parse_request(orjson.dumps(body))
    assert err.value.param == key and "header" in str(err.value)
