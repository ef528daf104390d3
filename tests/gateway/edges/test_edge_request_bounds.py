"""Request bounds at the edge: JSON nesting (every free-form field of both dialects), messages
and content parts. Whatever an edge accepts can be stored and sent upstream; what it refuses
is refused by name, before anything is built from it."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.config import Deployment, ServerConfig
from gateway.edges import anthropic_messages, openai_chat
from gateway.errors import InvalidRequest, PayloadTooLarge
from gateway.providers import anthropic_messages as anthropic_wire
from gateway.providers import gemini as gemini_wire
from gateway.providers import openai_chat as openai_wire
from gateway.transcript import TurnRecord

LIMIT = ServerConfig().max_json_depth
USER_OA = {"role": "user", "content": "hi"}
USER_AN = {"role": "user", "content": "hi"}


def _oa(**extra: Any) -> dict[str, Any]:
    return {"model": "m", "messages": [USER_OA], **extra}


def _an(**extra: Any) -> dict[str, Any]:
    return {"model": "m", "max_tokens": 16, "messages": [USER_AN], **extra}


def _oa_call(arguments: Any) -> dict[str, Any]:
    call = {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": arguments}}
    return _oa(
        messages=[
            USER_OA,
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "call_1", "content": "ok"},
        ]
    )


def _tool_use(dialect_user: dict[str, Any], result: dict[str, Any], value: Any) -> list[dict[str, Any]]:
    block = {"type": "tool_use", "id": "toolu_1", "name": "f", "input": value}
    return [dialect_user, {"role": "assistant", "content": [block]}, result]


# (dialect, the field the error must name, levels above the value, body with the value there)
FIELDS: list[tuple[str, str, int, Callable[[Any], dict[str, Any]]]] = [
    ("openai", "metadata", 1, lambda v: _oa(metadata=v)),
    (
        "openai",
        "tools[0].function.parameters",
        4,
        lambda v: _oa(tools=[{"type": "function", "function": {"name": "f", "parameters": v}}]),
    ),
    ("openai", "functions[0].parameters", 3, lambda v: _oa(functions=[{"name": "f", "parameters": v}])),
    (
        "openai",
        "response_format.json_schema.schema",
        3,
        lambda v: _oa(response_format={"type": "json_schema", "json_schema": {"name": "x", "schema": v}}),
    ),
    ("openai", "messages[1].tool_calls[0].function.arguments", 6, _oa_call),
    ("openai", "messages[1].tool_calls[0].function.arguments", 6, lambda v: _oa_call(json.dumps(v))),
    (
        "openai",
        "messages[1].content[0].input",
        5,
        lambda v: _oa(
            messages=_tool_use(USER_OA, {"role": "tool", "tool_call_id": "toolu_1", "content": "ok"}, v)
        ),
    ),
    (
        "openai",
        "messages[0].content[0].cache_control",
        5,
        lambda v: _oa(
            messages=[{"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": v}]}]
        ),
    ),
    (
        "anthropic",
        "system[0].cache_control",
        3,
        lambda v: _an(system=[{"type": "text", "text": "s", "cache_control": v}]),
    ),
    (
        "anthropic",
        "tools[0].input_schema",
        3,
        lambda v: _an(tools=[{"name": "f", "input_schema": v}]),
    ),
    (
        "anthropic",
        "output_config.format.schema",
        3,
        lambda v: _an(output_config={"format": {"type": "json_schema", "schema": v}}),
    ),
    (
        "anthropic",
        "messages[1].content[0].input",
        5,
        lambda v: _an(
            messages=_tool_use(
                USER_AN,
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}],
                },
                v,
            )
        ),
    ),
    (
        "anthropic",
        "messages[0].content[0].cache_control",
        5,
        lambda v: _an(
            messages=[{"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": v}]}]
        ),
    ),
    (
        "anthropic",
        "tools[0].cache_control",
        3,
        lambda v: _an(tools=[{"name": "f", "input_schema": {}, "cache_control": v}]),
    ),
]
IDS = [f"{d}:{f}:{i}" for i, (d, f, _, _) in enumerate(FIELDS)]
EDGES = {"openai": openai_chat, "anthropic": anthropic_messages}


def _nested(depth: int, shapes: list[bool], filler: bool) -> dict[str, Any]:
    """An object nested ``depth`` levels (itself level 1), the levels between it and the
    innermost object arrays where ``shapes`` says so; ``filler`` adds scalar siblings."""
    value: Any = {"leaf": 1} if filler else {}
    for i in range(depth - 2):
        if shapes[i % len(shapes)]:
            value = [value, 2] if filler else [value]
        else:
            value = {"k": value, "n": "x"} if filler else {"k": value}
    return {"k": value} if depth > 1 else value


def _depth(v: Any) -> int:
    if isinstance(v, dict):
        return 1 + max((_depth(x) for x in v.values()), default=0)
    if isinstance(v, list):
        return 1 + max((_depth(x) for x in v), default=0)
    return 0


def _body(build: Callable[[Any], dict[str, Any]], value: Any) -> bytes:
    return json.dumps(build(value)).encode()  # json, not orjson: it writes any depth


def _deployments() -> list[tuple[Any, Deployment]]:
    return [
        (openai_wire, Deployment(name="o", api="openai_chat", model="gpt-4o", base_url="http://x")),
        (anthropic_wire, Deployment(name="a", api="anthropic_messages", model="claude", base_url="http://x")),
        (gemini_wire, Deployment(name="g", api="gemini", model="gemini-2.5-pro", base_url="http://x")),
    ]


def _assert_storable_and_sendable(req: Any) -> None:
    TurnRecord(
        request_id="r", ts=0.0, client_dialect="d", requested_model="m", stream=False, status=200, request=req
    ).row()
    for wire, dep in _deployments():
        wire.build_request(req, dep, "key")


@pytest.mark.parametrize(("dialect", "field", "above", "build"), FIELDS, ids=IDS)
@settings(max_examples=25, deadline=None)
@given(
    depth=st.one_of(st.integers(1, 12), st.integers(LIMIT - 8, LIMIT + 8), st.integers(250, 400)),
    shapes=st.lists(st.booleans(), min_size=1, max_size=4),
    filler=st.booleans(),
)
def test_free_form_json_is_accepted_and_storable_up_to_the_depth_limit_and_refused_naming_the_field_past_it(
    dialect: str,
    field: str,
    above: int,
    build: Callable[[Any], dict[str, Any]],
    depth: int,
    shapes: list[bool],
    filler: bool,
) -> None:
    value = _nested(depth, shapes, filler)
    assert _depth(value) == depth
    body = _body(build, value)
    edge = EDGES[dialect]
    if above + depth <= LIMIT:
        _assert_storable_and_sendable(edge.parse_request(body))
        return
    with pytest.raises(InvalidRequest) as exc:
        edge.parse_request(body)
    assert type(exc.value) is InvalidRequest and exc.value.status == 400
    assert exc.value.param == field, exc.value.message
    assert exc.value.message.startswith(f"{field}: JSON nested more than {LIMIT} levels")


def test_anthropic_count_tokens_refuses_deep_json_like_messages() -> None:
    body = _body(lambda v: _an(metadata=v), _nested(300, [False], False))
    with pytest.raises(InvalidRequest) as exc:
        anthropic_messages.parse_count_tokens(body)
    assert exc.value.param == "metadata"


def test_a_configured_depth_limit_applies() -> None:
    limits = ServerConfig(max_json_depth=20)
    ok = _body(lambda v: _oa(metadata=v), _nested(19, [False], True))
    deep = _body(lambda v: _oa(metadata=v), _nested(20, [True, False], True))
    openai_chat.parse_request(ok, limits)
    with pytest.raises(InvalidRequest) as exc:
        openai_chat.parse_request(deep, limits)
    assert "more than 20 levels" in exc.value.message


def test_brackets_inside_strings_do_not_count_as_nesting() -> None:
    text = "{[" * 5_000
    req = openai_chat.parse_request(orjson.dumps(_oa(messages=[{"role": "user", "content": text}])))
    assert req.messages[0].content[0].text == text  # type: ignore[union-attr]


# ------------------------------------------------------------------------------ messages, parts


def _many_messages(dialect: str, n: int) -> bytes:
    msgs = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok"}] * (n // 2)
    return orjson.dumps(_oa(messages=msgs) if dialect == "openai" else _an(messages=msgs))


@pytest.mark.parametrize("dialect", ["openai", "anthropic"])
def test_a_request_with_more_messages_than_the_limit_is_413_naming_the_limit(dialect: str) -> None:
    limits = ServerConfig(max_request_messages=100)
    EDGES[dialect].parse_request(_many_messages(dialect, 100), limits)
    with pytest.raises(PayloadTooLarge) as exc:
        EDGES[dialect].parse_request(_many_messages(dialect, 102), limits)
    assert exc.value.status == 413 and exc.value.param == "messages"
    assert "102 messages" in exc.value.message and "server.max_request_messages" in exc.value.message
    assert "at most 100" in exc.value.message


def _parts_body(dialect: str, where: str, n: int) -> bytes:
    text = [{"type": "text", "text": "x"}] * n
    if where == "content":
        return orjson.dumps(
            (_oa if dialect == "openai" else _an)(messages=[{"role": "user", "content": text}])
        )
    if where == "tool_calls":
        calls = [
            {"id": f"c{i}", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            for i in range(n)
        ]
        results = [{"role": "tool", "tool_call_id": f"c{i}", "content": "ok"} for i in range(n)]
        return orjson.dumps(_oa(messages=[USER_OA, {"role": "assistant", "tool_calls": calls}, *results]))
    if where == "tool_result":
        result = {"type": "tool_result", "tool_use_id": "t", "content": text}
        use = {"type": "tool_use", "id": "t", "name": "f", "input": {}}
        return orjson.dumps(
            _an(
                messages=[
                    USER_AN,
                    {"role": "assistant", "content": [use]},
                    {"role": "user", "content": [result]},
                ]
            )
        )
    return orjson.dumps(_an(system=text))


PART_SITES = [
    ("openai", "content"),
    ("openai", "tool_calls"),
    ("anthropic", "content"),
    ("anthropic", "tool_result"),
    ("anthropic", "system"),
]


@pytest.mark.parametrize(("dialect", "where"), PART_SITES, ids=[f"{d}:{w}" for d, w in PART_SITES])
def test_a_request_with_more_content_parts_than_the_limit_is_413_naming_the_limit(
    dialect: str, where: str
) -> None:
    limits = ServerConfig(max_request_parts=50)
    EDGES[dialect].parse_request(_parts_body(dialect, where, 40), limits)
    with pytest.raises(PayloadTooLarge) as exc:
        EDGES[dialect].parse_request(_parts_body(dialect, where, 60), limits)
    assert exc.value.status == 413 and "server.max_request_parts" in exc.value.message
    assert "at most 50" in exc.value.message


def test_a_message_that_is_not_an_object_is_still_named_by_the_edge() -> None:
    with pytest.raises(InvalidRequest) as exc:
        openai_chat.parse_request(orjson.dumps(_oa(messages=[USER_OA, "hello"])))
    assert exc.value.param == "messages[1]"


def _tools_body(dialect: str, schemas: list[dict[str, Any]], *, legacy: bool = False) -> bytes:
    if dialect == "openai":
        fns = [{"name": f"t{i}", "parameters": s} for i, s in enumerate(schemas)]
        if legacy:
            return orjson.dumps(_oa(functions=fns))
        return orjson.dumps(_oa(tools=[{"type": "function", "function": f} for f in fns]))
    return orjson.dumps(_an(tools=[{"name": f"t{i}", "input_schema": s} for i, s in enumerate(schemas)]))


def _schema(properties: int) -> dict[str, Any]:
    """An object schema of ``2 * properties + 3`` JSON nodes (itself, ``type``, ``properties``
    and each property's object and its ``type``)."""
    return {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(properties)}}


TOOL_SITES = [("openai", False), ("openai", True), ("anthropic", False)]
TOOL_IDS = ["openai:tools", "openai:functions", "anthropic:tools"]


@pytest.mark.parametrize(("dialect", "legacy"), TOOL_SITES, ids=TOOL_IDS)
def test_a_request_with_more_tools_than_the_limit_is_413_naming_the_limit(dialect: str, legacy: bool) -> None:
    limits = ServerConfig(max_request_tools=8)
    EDGES[dialect].parse_request(_tools_body(dialect, [_schema(1)] * 8, legacy=legacy), limits)
    with pytest.raises(PayloadTooLarge) as exc:
        EDGES[dialect].parse_request(_tools_body(dialect, [_schema(1)] * 9, legacy=legacy), limits)
    field = "functions" if legacy else "tools"
    assert exc.value.status == 413 and exc.value.param == field
    assert exc.value.message == (
        f"{field}: 9 tools; at most 8 are accepted per request (limit server.max_request_tools)"
    )


@pytest.mark.parametrize(("dialect", "legacy"), TOOL_SITES, ids=TOOL_IDS)
def test_a_tool_schema_past_the_node_limit_is_413_naming_the_tool_and_the_limit(
    dialect: str, legacy: bool
) -> None:
    limits = ServerConfig(max_tool_schema_nodes=1_003)
    EDGES[dialect].parse_request(_tools_body(dialect, [_schema(3), _schema(500)], legacy=legacy), limits)
    with pytest.raises(PayloadTooLarge) as exc:
        EDGES[dialect].parse_request(_tools_body(dialect, [_schema(3), _schema(501)], legacy=legacy), limits)
    field = {"openai": "tools[1].function.parameters", "anthropic": "tools[1].input_schema"}[dialect]
    if legacy:
        field = "functions[1].parameters"
    assert exc.value.status == 413 and exc.value.param == field
    assert exc.value.message == (
        f"{field}: the input schema of tool 't1' has more than 1003 JSON nodes; at most 1003 are "
        "accepted per tool (limit server.max_tool_schema_nodes)"
    )


def test_tool_limits_leave_malformed_tools_for_the_edge_to_name() -> None:
    limits = ServerConfig(max_tool_schema_nodes=1_000)
    body = orjson.dumps(_oa(tools=["x", {"type": "function", "function": "f"}, *[{"p": "q"}] * 500]))
    with pytest.raises(InvalidRequest) as exc:
        openai_chat.parse_request(body, limits)
    assert exc.value.param == "tools[0]" and exc.value.status == 400


def test_count_tool_schema_nodes_counts_every_json_value_and_stops_past_the_limit() -> None:
    from gateway.edges._bounds import schema_nodes

    assert schema_nodes(_schema(2), 100) == 7
    assert schema_nodes({"a": [1, 2, {"b": None}], "c": "x"}, 100) == 7
    assert schema_nodes(_schema(500), 10) > 10  # stops early: any count past the limit
    assert schema_nodes(None, 10) == 1
