"""gateway/edges/anthropic_messages_blocks.py through the Anthropic parser: SDK-typed block keys
land on the schema's parts with their paths in ``NativeFields.serving``; unknown keys are
refused naming the path; plain blocks take the fast path and name nothing."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from gateway.edges import anthropic_messages
from gateway.errors import InvalidRequest
from gateway.schema import AssistantMessage, ImagePart, ToolCallPart, ToolResultMessage, UserMessage

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
IMAGE = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}


def _parse(**body: Any) -> Any:
    return anthropic_messages.parse_request(orjson.dumps({"model": "m", "max_tokens": 64, **body}))


def _loop(call: dict[str, Any], result: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": [{"type": "text", "text": "go"}, IMAGE]},
        {"role": "assistant", "content": [call]},
        {"role": "user", "content": [result]},
    ]


CALL = {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}
RESULT = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}


def test_plain_blocks_name_nothing() -> None:
    req = _parse(messages=_loop(CALL, RESULT))
    assert req.native is None


def test_toolset_names_and_transformations_are_on_the_parts_and_named_as_serving() -> None:
    image = {**IMAGE, "transformations": {"oversized_image": "error"}}
    messages = _loop({**CALL, "toolset_name": "fs"}, {**RESULT, "toolset_name": "fs"})
    messages[0]["content"][1] = image
    req = _parse(messages=messages)
    user, assistant, result = req.messages
    assert type(user) is UserMessage and type(user.content[1]) is ImagePart
    assert user.content[1].transformations == {"oversized_image": "error"}
    assert type(assistant) is AssistantMessage and type(assistant.content[0]) is ToolCallPart
    assert assistant.content[0].toolset_name == "fs"
    assert type(result) is ToolResultMessage and result.toolset_name == "fs"
    assert req.native.paths == []
    assert sorted(req.native.serving) == [
        "messages[0].content[1].transformations",
        "messages[1].content[0].toolset_name",
        "messages[2].content[0].toolset_name",
    ]


@pytest.mark.parametrize(
    ("messages", "param"),
    [
        (_loop({**CALL, "toolset": 1}, RESULT), "messages[1].content[0].toolset"),
        (_loop(CALL, {**RESULT, "toolset": 1}), "messages[2].content[0].toolset"),
        ([{"role": "user", "content": [{**IMAGE, "detail": "low"}]}], "messages[0].content[0].detail"),
        (
            [{"role": "user", "content": [{**IMAGE, "source": {**IMAGE["source"], "name": "a"}}]}],
            "messages[0].content[0].source.name",
        ),
        (
            [{"role": "user", "content": [{"type": "text", "text": "x", "id": "1"}]}],
            "messages[0].content[0].id",
        ),
        (
            [
                {"role": "user", "content": "x"},
                {"role": "assistant", "content": [{"type": "redacted_thinking", "data": "d", "x": 1}]},
            ],
            "messages[1].content[0].x",
        ),
    ],
)
def test_an_unknown_block_key_is_refused_naming_its_path(messages: list[dict[str, Any]], param: str) -> None:
    with pytest.raises(InvalidRequest) as exc:
        _parse(messages=messages)
    assert exc.value.param == param


@pytest.mark.parametrize(
    ("body", "param"),
    [
        (
            {"tool_choice": {"type": "none", "disable_parallel_tool_use": True}},
            "tool_choice.disable_parallel_tool_use",
        ),
        ({"thinking": {"type": "disabled", "budget_tokens": 1024}}, "thinking.budget_tokens"),
        ({"metadata": {"user_id": "u", "team": "t"}}, "metadata.team"),
        ({"output_config": {"effort": "low", "verbosity": "low"}}, "output_config.verbosity"),
    ],
)
def test_an_unknown_key_of_a_nested_object_is_refused_naming_its_path(
    body: dict[str, Any], param: str
) -> None:
    with pytest.raises(InvalidRequest) as exc:
        _parse(messages=[{"role": "user", "content": "x"}], **body)
    assert exc.value.param == param


def test_count_tokens_refuses_an_unlisted_top_level_field_and_takes_a_listed_one() -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "x"}]}
    anthropic_messages.parse_count_tokens(orjson.dumps({**body, "service_tier": "auto", "max_tokens": 9}))
    with pytest.raises(InvalidRequest) as exc:
        anthropic_messages.parse_count_tokens(orjson.dumps({**body, "repetition_penalty": 1.1}))
    assert exc.value.param == "repetition_penalty"


def _sdk_keys(*params: Any) -> frozenset[str]:
    return frozenset(k for p in params for k in p.__required_keys__ | p.__optional_keys__)


def test_the_key_sets_are_the_sdk_types_keys() -> None:
    """An SDK upgrade that adds a key fails here, so the new key gets a class (carried or
    refused) instead of being refused unnoticed."""
    from anthropic.types import (
        DocumentBlockParam,
        ImageBlockParam,
        MetadataParam,
        OutputConfigParam,
        RedactedThinkingBlockParam,
        TextBlockParam,
        ThinkingBlockParam,
        ToolResultBlockParam,
        ToolUseBlockParam,
    )
    from anthropic.types import beta as b

    from gateway.edges import anthropic_messages_blocks as blocks

    assert _sdk_keys(TextBlockParam, b.BetaTextBlockParam) == blocks.TEXT_KEYS
    assert _sdk_keys(ImageBlockParam, b.BetaImageBlockParam) == blocks.IMAGE_KEYS
    assert _sdk_keys(DocumentBlockParam) == blocks.DOCUMENT_KEYS
    assert _sdk_keys(ToolUseBlockParam, b.BetaToolUseBlockParam) == blocks.TOOL_USE_KEYS
    assert _sdk_keys(ToolResultBlockParam, b.BetaToolResultBlockParam) == blocks.TOOL_RESULT_KEYS
    assert _sdk_keys(ThinkingBlockParam, b.BetaThinkingBlockParam) == blocks.THINKING_KEYS
    assert _sdk_keys(RedactedThinkingBlockParam, b.BetaRedactedThinkingBlockParam) == blocks.REDACTED_KEYS
    assert _sdk_keys(MetadataParam, b.BetaMetadataParam) == blocks.METADATA_KEYS
    assert _sdk_keys(OutputConfigParam, b.BetaOutputConfigParam) == blocks.OUTPUT_CONFIG_KEYS
