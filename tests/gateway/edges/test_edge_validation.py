"""The edges check every field by hand, assemble the request as plain dicts and validate it
once (gateway/edges/_common.py ``validate_request``). A pydantic ValidationError the hand
checks did not foresee must still come out as an InvalidRequest naming the client's field."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from gateway.edges import anthropic_messages, openai_chat
from gateway.edges._common import validate_request
from gateway.errors import InvalidRequest
from gateway.schema import Request, ThinkingPart, ToolCallPart


def _body(messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"model": "m", "messages": messages, **extra}


def test_assembled_request_is_validated_into_the_schema() -> None:
    req = validate_request(
        _body(
            [
                {"role": "user", "content": [{"type": "text", "text": "hi"}], "src": "messages[0]"},
                {
                    "role": "assistant",
                    "content": [
                        {"type": "thinking", "text": "t"},
                        {"type": "tool_call", "id": "c1", "name": "f", "src": "messages[1].tool_calls[0]"},
                    ],
                    "src": "messages[1]",
                },
            ]
        ),
        {},
    )
    assert isinstance(req, Request)
    thinking, call = req.messages[1].content
    assert isinstance(thinking, ThinkingPart) and isinstance(call, ToolCallPart)
    assert (call.src, call.arguments, call.raw_arguments) == ("messages[1].tool_calls[0]", {}, "{}")


def test_validation_error_in_a_part_names_the_parts_src() -> None:
    data = _body(
        [
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "x"},
                    {
                        "type": "tool_call",
                        "id": "c1",
                        "name": "f",
                        "arguments": [1],
                        "src": "messages[4].content[2]",
                    },
                ],
                "src": "messages[4]",
            }
        ]
    )
    with pytest.raises(InvalidRequest) as err:
        validate_request(data, {})
    assert err.value.param == "messages[4].content[2].arguments"
    assert err.value.message.startswith("messages[4].content[2].arguments: invalid value (")


def test_validation_error_in_a_message_names_the_messages_src() -> None:
    data = _body([{"role": "tool", "tool_call_id": 7, "content": [], "src": "messages[2].content[0]"}])
    with pytest.raises(InvalidRequest) as err:
        validate_request(data, {})
    assert err.value.param == "messages[2].content[0].tool_call_id"


def test_validation_error_at_top_level_uses_the_clients_field_name() -> None:
    data = _body([{"role": "user", "content": [], "src": "messages[0]"}], max_output_tokens="many")
    with pytest.raises(InvalidRequest) as err:
        validate_request(data, {"max_output_tokens": "max_tokens"})
    assert err.value.param == "max_tokens"
    assert err.value.status == 400


@pytest.mark.parametrize(
    ("edge", "body", "param"),
    [
        (
            openai_chat,
            {"model": "m", "messages": [{"role": "user", "content": [{"type": "text"}]}]},
            "messages[0].content[0].text",
        ),
        (
            openai_chat,
            {"model": "m", "messages": [{"role": "tool", "tool_call_id": 3}]},
            "messages[0].tool_call_id",
        ),
        (
            openai_chat,
            {
                "model": "m",
                "messages": [{"role": "assistant", "tool_calls": [{"id": "c", "function": {"name": 1}}]}],
            },
            "messages[0].tool_calls[0].function.name",
        ),
        (
            anthropic_messages,
            {
                "model": "m",
                "max_tokens": 5,
                "messages": [
                    {
                        "role": "assistant",
                        "content": [{"type": "tool_use", "id": "t", "name": "f", "input": 3}],
                    }
                ],
            },
            "messages[0].content[0].input",
        ),
        (
            anthropic_messages,
            {
                "model": "m",
                "max_tokens": 5,
                "messages": [
                    {"role": "assistant", "content": [{"type": "thinking", "thinking": "x", "signature": 5}]}
                ],
            },
            "messages[0].content[0].signature",
        ),
    ],
)
def test_inline_fast_paths_fall_back_to_the_field_checks(edge: Any, body: dict[str, Any], param: str) -> None:
    """The common shapes are checked inline; a wrong one still gets the error naming it."""
    with pytest.raises(InvalidRequest) as err:
        edge.parse_request(orjson.dumps(body))
    assert err.value.param == param
