"""The OpenAI Responses dialect's fidelity (issue 14 item 1): every field of the ``openai``
SDK's ``ResponseCreateParams`` has one class in :mod:`gateway.edges.fidelity_responses`, the
edge's field sets are the table's classes, each class lands where it says, and every key the
SDK's input item, content part, tool and option types define is read or refused by name."""

from __future__ import annotations

import collections.abc
import typing
from typing import Any, Literal, Union, get_args, get_origin

import orjson
import pytest
from openai.types import shared_params
from openai.types.responses import (
    ResponseCustomToolCallOutputParam,
    ResponseFormatTextConfigParam,
    ResponseInputContentParam,
    ResponseInputItemParam,
    ResponseTextConfigParam,
    ToolParam,
    namespace_tool_param,
    response_input_item_param,
    response_output_message_param,
    response_reasoning_item_param,
)
from openai.types.responses import custom_tool_param as custom_param
from openai.types.responses import response_create_params as params

from gateway.edges import fidelity
from gateway.edges import openai_responses_input as rs_input
from gateway.edges import openai_responses_parse as rs_parse
from gateway.edges import openai_responses_tools as rs_tools
from gateway.edges.fidelity_responses import OPENAI_RESPONSES
from gateway.errors import InvalidRequest
from gateway.schema import OwnKeys

TABLE = OPENAI_RESPONSES


def _keys(*types: Any) -> frozenset[str]:
    """Every key the TypedDicts ``types`` declare."""
    return frozenset(k for t in types for k in t.__required_keys__ | t.__optional_keys__)


def _members(tp: Any) -> list[Any]:
    """The TypedDicts of a type alias (unions and ``Iterable[...]`` / ``List[...]`` opened)."""
    out: list[Any] = []
    stack = [tp]
    while stack:
        t = stack.pop()
        origin = get_origin(t)
        if origin in (Union, list, collections.abc.Iterable):
            stack.extend(get_args(t))
        elif hasattr(t, "__required_keys__"):
            out.append(t)
    return out


def _types(td: Any) -> tuple[str, ...]:
    """The ``type`` literal(s) of a TypedDict (``()`` when it has no ``type`` key)."""
    hint = typing.get_type_hints(td).get("type")
    while get_origin(hint) in (typing.Required, typing.NotRequired, Union):
        hint = next(a for a in get_args(hint) if a is not type(None))
    return tuple(get_args(hint)) if get_origin(hint) is Literal else ()


def _by_type(tp: Any) -> dict[str, frozenset[str]]:
    """``type`` literal -> the union of the keys of the TypedDicts of ``tp`` with that type."""
    out: dict[str, frozenset[str]] = {}
    for td in _members(tp):
        for name in _types(td):
            out[name] = out.get(name, frozenset()) | _keys(td)
    return out


# ---------------------------------------------------------------------------- top-level fields

SDK_FIELDS = _keys(params.ResponseCreateParamsStreaming, params.ResponseCreateParamsNonStreaming)


def test_every_documented_request_field_has_a_class() -> None:
    assert sorted(SDK_FIELDS - TABLE.keys()) == []
    assert sorted(TABLE.keys() - SDK_FIELDS) == ["client_metadata"]  # Codex CLI's extension
    assert {r.cls for r in TABLE.values()} <= set(fidelity.CLASSES)


def test_the_edges_field_sets_are_the_tables_classes() -> None:
    assert fidelity.serving_fields(TABLE) == rs_parse.SERVING
    assert fidelity.passed_fields(TABLE) == rs_parse.PASSED
    refused = {k for k, r in TABLE.items() if r.cls == fidelity.REFUSED}
    assert rs_parse.REFUSED | {"stream_options"} == refused  # read, refused for one value
    assert set(TABLE) == rs_parse._HANDLED | rs_parse.REFUSED


def _parse(**fields: Any) -> Any:
    body = {"model": "m", "input": "hi", **fields}
    return rs_parse.parse_request(orjson.dumps(body))


SERVING_VALUES: dict[str, Any] = {
    "prompt_cache_key": "pk",
    "prompt_cache_retention": "24h",
    "prompt_cache_options": {"ttl": "12h"},
    "service_tier": "flex",
    "client_metadata": {"client": "codex"},
    "image": {"context_compression": "enabled"},
    "truncation": "auto",
}
PASSED_VALUES: dict[str, Any] = {
    "moderation": {"model": "omni-moderation-latest"},
    "access_programs": {"cyber": "standard"},
}


def test_serving_and_passed_through_fields_are_kept_verbatim_in_their_class() -> None:
    assert set(SERVING_VALUES) == fidelity.serving_fields(TABLE)
    assert set(PASSED_VALUES) == fidelity.passed_fields(TABLE)
    native = _parse(**SERVING_VALUES, **PASSED_VALUES).native
    assert native.api == "openai_responses"
    assert native.fields == {**SERVING_VALUES, **PASSED_VALUES}
    assert set(native.serving) == set(SERVING_VALUES)
    assert native.paths == sorted(PASSED_VALUES)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("background", True),
        ("background_options", {"completion_window": "2h"}),
        ("conversation", "conv_1"),
        ("prompt", {"id": "pmpt_1"}),
        ("max_tool_calls", 3),
        ("context_management", [{"type": "compaction"}]),
        ("top_logprobs", 2),
    ],
)
def test_fields_the_gateway_cannot_relay_are_refused_by_name(field: str, value: Any) -> None:
    with pytest.raises(InvalidRequest) as exc:
        _parse(**{field: value})
    assert exc.value.param == field


def test_values_that_ask_for_nothing_carry_nothing() -> None:
    req = _parse(
        background=False,
        background_options={},
        top_logprobs=0,
        truncation="disabled",
        stream_options={"include_obfuscation": False},
        moderation=None,
        access_programs={},
        conversation=None,
    )
    assert req.native is None


def test_an_unknown_top_level_field_is_refused_by_name() -> None:
    with pytest.raises(InvalidRequest) as exc:
        _parse(repetition_penalty=1.1)
    assert exc.value.param == "repetition_penalty"


# ---------------------------------------------------------------------------- nested keys

ITEM_EXTRAS = {
    "function_call": {"parsed_arguments"},  # the SDK's parse() echo of arguments
    "custom_tool_call": {"status"},  # as the answer's output items carry it (Codex CLI)
    "custom_tool_call_output": {"namespace", "status"},
}
"""Keys the edge reads beside an SDK item type's (documented in fidelity_responses.RESPONSES_NESTED)."""


def test_every_sdk_input_item_type_is_read_or_refused_by_name() -> None:
    sdk = _by_type(ResponseInputItemParam)
    read = set(rs_input._ITEM_KEYS) | {"additional_tools"}
    refused = set(rs_input._HOSTED_ITEMS) | set(rs_input._REFUSED_ITEMS) | {"item_reference"}
    assert sorted(set(sdk) - read - refused) == []
    assert not read & refused


@pytest.mark.parametrize("kind", sorted(rs_input._ITEM_KEYS))
def test_an_input_items_keys_are_the_sdk_types_keys(kind: str) -> None:
    sdk = _by_type(ResponseInputItemParam)[kind]
    assert rs_input._ITEM_KEYS[kind] - sdk == ITEM_EXTRAS.get(kind, set())
    assert sdk <= rs_input._ITEM_KEYS[kind]


def test_an_additional_tools_items_keys_are_the_sdk_types_keys() -> None:
    assert _keys(response_input_item_param.AdditionalTools) == {"type", "id", "role", "tools"}


@pytest.mark.parametrize(
    "tp",
    [
        ResponseInputContentParam,
        typing.get_type_hints(response_input_item_param.FunctionCallOutput)["output"],
        typing.get_type_hints(ResponseCustomToolCallOutputParam)["output"],
        typing.get_type_hints(response_output_message_param.ResponseOutputMessageParam)["content"],
    ],
    ids=["message input", "function output", "custom output", "assistant output"],
)
def test_a_content_parts_keys_are_the_sdk_types_keys(tp: Any) -> None:
    for kind, sdk in _by_type(tp).items():
        extra = {"parsed"} if kind == "output_text" else set()  # the SDK's parse() echo of text
        assert rs_input._PART_KEYS[kind] == sdk | extra, kind


def test_reasoning_summary_and_content_parts_keys_are_the_sdk_types_keys() -> None:
    hints = typing.get_type_hints(response_reasoning_item_param.ResponseReasoningItemParam)
    assert _keys(*_members(hints["summary"]), *_members(hints["content"])) == rs_input._SUMMARY_KEYS


def test_every_sdk_tool_type_is_read_or_refused_by_name() -> None:
    sdk = _by_type(ToolParam)
    read = {"function", "custom", "namespace", "mcp"}
    assert sorted(set(sdk) - read - set(rs_tools.HOSTED_TOOLS)) == []


def test_a_tools_keys_are_the_sdk_types_keys() -> None:
    sdk = _by_type(ToolParam)
    assert sdk["function"] == rs_tools._FUNCTION_KEYS
    assert sdk["custom"] == rs_tools._CUSTOM_KEYS
    assert sdk["namespace"] == rs_tools._NAMESPACE_KEYS
    mcp = rs_tools.MCP_READ | set(rs_tools.MCP_REFUSED) | set(rs_tools.MCP_REFUSED_OPTIONS)
    assert sdk["mcp"] == mcp
    members = _by_type(typing.get_type_hints(namespace_tool_param.NamespaceToolParam)["tools"])
    assert (members["function"], members["custom"]) == (rs_tools._FUNCTION_KEYS, rs_tools._CUSTOM_KEYS)
    formats = _by_type(typing.get_type_hints(custom_param.CustomToolParam)["format"])
    assert (formats["grammar"], formats["text"]) == (rs_tools._GRAMMAR_KEYS, rs_tools._TEXT_FORMAT_KEYS)


def test_the_option_objects_keys_are_the_sdk_types_keys() -> None:
    assert _keys(ResponseTextConfigParam) == rs_parse.TEXT_KEYS
    assert _keys(shared_params.Reasoning) == rs_parse.REASONING_KEYS
    assert _keys(params.StreamOptions) == rs_parse.STREAM_OPTIONS_KEYS
    assert _by_type(ResponseFormatTextConfigParam) == rs_parse.FORMAT_KEYS
    choices = _by_type(params.ToolChoice)
    assert choices["function"] | {"namespace"} == rs_tools.CHOICE_KEYS  # a namespace member by name
    assert choices["custom"] | {"namespace"} == rs_tools.CHOICE_KEYS


def test_every_other_sdk_tool_choice_type_is_refused_by_name() -> None:
    tools = [{"type": "function", "name": "f", "parameters": {"type": "object"}}]
    for kind in sorted(set(_by_type(params.ToolChoice)) - {"function", "custom", "allowed_tools"}):
        with pytest.raises(InvalidRequest) as exc:
            _parse(tools=tools, tool_choice={"type": kind})
        assert exc.value.param == "tool_choice.type", kind


FN = {"type": "function", "name": "f", "parameters": {"type": "object"}}


@pytest.mark.parametrize(
    ("fields", "param"),
    [
        ({"tools": [{**FN, "colour": 1}]}, "tools[0].colour"),
        ({"tools": [{"type": "namespace", "name": "ns", "tools": [FN], "colour": 1}]}, "tools[0].colour"),
        (
            {"tools": [{"type": "namespace", "name": "ns", "tools": [{**FN, "colour": 1}]}]},
            "tools[0].tools[0].colour",
        ),
        ({"tools": [{"type": "mcp", "server_label": "fs", "colour": 1}]}, "tools[0].colour"),
        ({"tools": [{"type": "mcp", "server_label": "fs", "tunnel_id": "t"}]}, "tools[0].tunnel_id"),
        ({"tools": [{"type": "mcp", "server_label": "fs", "defer_loading": True}]}, "tools[0].defer_loading"),
        (
            {"tools": [{"type": "mcp", "server_label": "fs", "allowed_callers": ["direct"]}]},
            "tools[0].allowed_callers",
        ),
        (
            {"tools": [{"type": "custom", "name": "c", "format": {"type": "text", "colour": 1}}]},
            "tools[0].format.colour",
        ),
        (
            {"tools": [FN], "tool_choice": {"type": "function", "name": "f", "colour": 1}},
            "tool_choice.colour",
        ),
        ({"tools": [{"type": "programmatic_tool_calling"}]}, "tools[0].type"),
        ({"text": {"format": {"type": "json_object", "colour": 1}}}, "text.format.colour"),
        (
            {"text": {"format": {"type": "json_schema", "name": "x", "schema": {}, "colour": 1}}},
            "text.format.colour",
        ),
        ({"input": [{"type": "program", "call_id": "p", "code": "x"}]}, "input[0].type"),
        ({"input": [{"type": "program_output", "call_id": "p", "result": "x"}]}, "input[0].type"),
        ({"input": [{"type": "compaction_trigger"}]}, "input[0].type"),
        ({"input": [{"type": "configuration_update", "text": {}}]}, "input[0].type"),
    ],
)
def test_a_nested_key_the_edge_does_not_carry_is_refused_by_name(fields: dict[str, Any], param: str) -> None:
    with pytest.raises(InvalidRequest) as exc:
        _parse(**fields)
    assert exc.value.param == param


PROGRAM = {"type": "program", "caller_id": "prog_1"}


def test_call_items_caller_and_async_are_carried_on_the_call_and_its_result() -> None:
    items = [
        {"role": "user", "content": "go"},
        {
            "type": "function_call",
            "call_id": "c1",
            "name": "f",
            "arguments": "{}",
            "caller": PROGRAM,
            "async": True,
        },
        {
            "type": "function_call",
            "call_id": "c2",
            "name": "f",
            "arguments": "{}",
            "caller": {"type": "direct"},
        },
        {"type": "function_call_output", "call_id": "c1", "output": "ok", "caller": PROGRAM},
        {"type": "function_call_output", "call_id": "c2", "output": "ok", "async": None},
    ]
    req = _parse(input=items, tools=[FN])
    calls = req.messages[1].tool_calls
    assert [c.own_keys for c in calls] == [{"async": True, "caller": PROGRAM}, None]
    assert req.messages[1].own == OwnKeys(api="openai_responses")
    assert [m.own for m in req.messages[2:]] == [
        OwnKeys(api="openai_responses", keys={"caller": PROGRAM}),
        None,
    ]
    # a program caller changes what the call means (refused elsewhere); async only how it ran
    assert req.native.serving == ["input[1].async"]
    assert req.native.paths == ["input[1].caller", "input[3].caller"]
