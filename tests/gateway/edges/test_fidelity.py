"""The fidelity rule (issue 14 item 1): every request field of each dialect's official SDK types
has one class in :mod:`gateway.edges.fidelity`, the edges read exactly the fields the table
says they read, ``docs/fidelity.md`` is the table, and each class lands where it says
(``Request.native`` paths or serving, or a refusal naming the field)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from anthropic.types import message_create_params as anthropic_params
from anthropic.types.beta import message_create_params as anthropic_beta_params
from openai.types.chat import completion_create_params as openai_params

from gateway.edges import anthropic_messages_parse, fidelity, openai_chat_parse
from gateway.errors import InvalidRequest

DOC = Path(__file__).parents[3] / "docs" / "fidelity.md"


def _sdk_fields(*types: Any) -> set[str]:
    """Every request field the SDK types declare, plus ``stream`` (declared on the streaming /
    non-streaming subclasses only)."""
    return {name for t in types for name in t.__annotations__} | {"stream"}


OPENAI_SDK = _sdk_fields(openai_params.CompletionCreateParamsBase)
ANTHROPIC_SDK = _sdk_fields(
    anthropic_params.MessageCreateParamsBase, anthropic_beta_params.MessageCreateParamsBase
)


@pytest.mark.parametrize(
    ("sdk", "table"), [(OPENAI_SDK, fidelity.OPENAI_CHAT), (ANTHROPIC_SDK, fidelity.ANTHROPIC_MESSAGES)]
)
def test_every_documented_request_field_has_a_class(sdk: set[str], table: dict[str, fidelity.Rule]) -> None:
    assert sorted(sdk - table.keys()) == []
    assert {r.cls for r in table.values()} <= set(fidelity.CLASSES)


@pytest.mark.parametrize(
    ("read", "table"),
    [
        (openai_chat_parse._READ, fidelity.OPENAI_CHAT),
        (anthropic_messages_parse._READ, fidelity.ANTHROPIC_MESSAGES),
    ],
)
def test_the_fields_an_edge_reads_itself_are_the_carried_translated_and_refused_ones(
    read: frozenset[str], table: dict[str, fidelity.Rule]
) -> None:
    native = fidelity.serving_fields(table) | fidelity.passed_fields(table)
    assert not read & native
    assert {
        k for k in read if table[k].cls in (fidelity.CARRIED, fidelity.TRANSLATED, fidelity.REFUSED)
    } == read


def test_docs_fidelity_md_is_the_table() -> None:
    assert DOC.read_text() == fidelity.markdown()


def _openai(**fields: Any) -> Any:
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], **fields}
    return openai_chat_parse.parse_request(orjson.dumps(body))


def _anthropic(**fields: Any) -> Any:
    body = {"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}], **fields}
    return anthropic_messages_parse.parse_request(orjson.dumps(body))


OPENAI_VALUES: dict[str, Any] = {
    "service_tier": "flex",
    "store": True,
    "prompt_cache_key": "pk",
    "prompt_cache_options": {"ttl": "1h"},
    "prompt_cache_retention": "24h",
    "safety_identifier": "sid",
    "prediction": {"type": "content", "content": "x"},
    "logit_bias": {"50256": -100},
    "verbosity": "low",
    "web_search_options": {"search_context_size": "low"},
    "moderation": {"mode": "block"},
}
ANTHROPIC_VALUES: dict[str, Any] = {
    "cache_control": {"type": "ephemeral"},
    "service_tier": "standard_only",
    "speed": "fast",
    "inference_geo": "us",
    "context_management": {"edits": [{"type": "clear_tool_uses_20250919"}]},
    "fallback_credit_token": "tok",
    "container": "container_1",
    "mcp_servers": [{"type": "url", "url": "https://mcp.example/sse", "name": "ex"}],
    "fallbacks": "default",
}


@pytest.mark.parametrize(
    ("parse", "values", "table"),
    [
        (_openai, OPENAI_VALUES, fidelity.OPENAI_CHAT),
        (_anthropic, ANTHROPIC_VALUES, fidelity.ANTHROPIC_MESSAGES),
    ],
)
def test_serving_and_passed_through_fields_are_kept_verbatim_in_their_class(
    parse: Any, values: dict[str, Any], table: dict[str, fidelity.Rule]
) -> None:
    assert set(values) == fidelity.serving_fields(table) | fidelity.passed_fields(table)
    native = parse(**values).native
    assert native.fields == values
    assert set(native.serving) == fidelity.serving_fields(table)
    assert set(native.paths) == fidelity.passed_fields(table)


def test_values_that_ask_for_nothing_carry_nothing() -> None:
    req = _openai(
        n=1,
        logprobs=False,
        top_logprobs=0,
        frequency_penalty=0,
        logit_bias={},
        modalities=["text"],
        audio=None,
    )
    assert req.native is None


def test_a_vendor_extension_is_passed_through() -> None:
    native = _openai(repetition_penalty=1.1, enable_thinking=False).native
    assert native.fields == {"repetition_penalty": 1.1, "enable_thinking": False}
    assert native.paths == ["repetition_penalty", "enable_thinking"]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("n", 2),
        ("logprobs", True),
        ("top_logprobs", 3),
        ("audio", {"voice": "alloy"}),
        ("modalities", ["text", "audio"]),
    ],
)
def test_openai_fields_the_gateway_cannot_relay_are_refused_by_name(field: str, value: Any) -> None:
    with pytest.raises(InvalidRequest) as exc:
        _openai(**{field: value})
    assert exc.value.param == field
    assert field in str(exc.value)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("diagnostics", {"previous_message_id": "msg_1"}),
        ("compaction", {"type": "compaction"}),
        ("billing_policy", {"type": "billing_policy", "bill_to": "user_profile"}),
    ],
)
def test_anthropic_fields_the_gateway_cannot_relay_are_refused_by_name(field: str, value: Any) -> None:
    with pytest.raises(InvalidRequest) as exc:
        _anthropic(**{field: value})
    assert exc.value.param == field


def test_anthropic_thinking_and_effort_are_kept_verbatim_beside_the_schema_form() -> None:
    req = _anthropic(thinking={"type": "adaptive", "display": "omitted"}, output_config={"effort": "max"})
    assert req.native.fields == {
        "thinking": {"type": "adaptive", "display": "omitted"},
        "output_config": {"effort": "max"},
    }
    assert req.native.paths == []
    assert req.native.serving == ["thinking.display"]  # no other wire API has it: dropped and named there
    assert req.thinking is not None and req.thinking.enabled and req.thinking.effort == "high"


def test_anthropic_tool_keys_are_carried_on_the_tool_by_class() -> None:
    tools = [
        {"name": "a", "input_schema": {"type": "object"}, "defer_loading": True},
        {"name": "b", "input_schema": {"type": "object"}, "input_examples": [{"x": 1}]},
    ]
    native = _anthropic(tools=tools).native
    assert native.fields == {
        "tool_fields": {"a": {"defer_loading": True}, "b": {"input_examples": [{"x": 1}]}}
    }
    assert native.serving == ["tools[0].defer_loading"]
    assert native.paths == ["tools[1].input_examples"]


def test_seed_and_penalties_are_read_into_the_schema_not_passed_through() -> None:
    req = _openai(seed=7, presence_penalty=0.5, frequency_penalty=0)
    assert (req.seed, req.presence_penalty, req.frequency_penalty) == (7, 0.5, None)
    assert req.native is None


def test_openai_message_names_and_developer_are_read_into_the_schema() -> None:
    body = {
        "model": "m",
        "messages": [
            {"role": "developer", "content": "rules", "name": "ops"},
            {"role": "user", "content": "hi", "name": "alice"},
            {"role": "assistant", "content": "yo", "name": "bot"},
        ],
    }
    dev, user, assistant = openai_chat_parse.parse_request(orjson.dumps(body)).messages
    assert (dev.role, dev.developer, dev.name) == ("system", True, "ops")  # type: ignore[union-attr]
    assert (user.name, assistant.name) == ("alice", "bot")  # type: ignore[union-attr]


def test_an_anthropic_tool_use_caller_is_carried_and_named_for_the_refusal_elsewhere() -> None:
    caller = {"type": "code_execution_20250825", "tool_id": "srvtoolu_1"}
    messages = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {}, "caller": caller}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]},
    ]
    body = {"model": "m", "max_tokens": 10, "messages": messages}
    req = anthropic_messages_parse.parse_request(orjson.dumps(body))
    assert req.messages[1].content[0].caller == caller  # type: ignore[union-attr]
    assert req.native is not None and req.native.paths == ["messages[1].content[0].caller (tool_use caller)"]
