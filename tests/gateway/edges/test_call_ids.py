"""Which client tool-call ids no upstream could take, and how both edges refuse them."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.edges import anthropic_messages_parse, openai_chat_parse
from gateway.edges.call_ids import MAX_CALL_ID_BYTES, unusable_call_id
from gateway.errors import InvalidRequest


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("", "is empty"),
        ("   ", "is whitespace only"),
        ("\u3000", "is whitespace only"),
        ("call\r\n1", "holds control character U+000D"),
        ("call\x00", "holds control character U+0000"),
        ("call\u2028", "holds control character U+2028"),
        ("x" * (MAX_CALL_ID_BYTES + 1), "is 257 bytes long in UTF-8 (at most 256)"),
        ("\U0001f600" * 200, "is 800 bytes long in UTF-8 (at most 256)"),
        ("\u00e9" * 129, "is 258 bytes long in UTF-8 (at most 256)"),
        ("\u200b", "is invisible characters only (U+200B ZERO WIDTH SPACE)"),
        ("\u200b\u200d\ufeff", "is invisible characters only (U+200B ZERO WIDTH SPACE)"),
        ("\u00a0\u2060", "is invisible characters only (U+2060 WORD JOINER)"),
        ("\ufe0f", "is invisible characters only (U+FE0F VARIATION SELECTOR-16)"),
        ("\u3164\u115f", "is invisible characters only (U+3164 HANGUL FILLER)"),
        ("\U000e0041\U000e0042", "is invisible characters only (U+E0041 TAG LATIN CAPITAL LETTER A)"),
    ],
)
def test_ids_no_upstream_accepts_are_named_with_the_reason(value: str, reason: str) -> None:
    assert unusable_call_id(value) == reason


@pytest.mark.parametrize(
    "value",
    [
        "call_abc123",
        "toolu_01A",
        "call.with.dots",
        "调用_1",
        " padded ",
        "x" * MAX_CALL_ID_BYTES,
        "a/b:c",
        "call\u200b1",
        "\U0001f600" * 64,
        "\u00e9" * 128,
    ],
)
def test_ids_some_upstream_takes_after_its_rewrite_pass(value: str) -> None:
    assert unusable_call_id(value) is None


@given(st.text(alphabet=st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=1, max_size=256))
def test_every_printable_ascii_id_within_the_bound_passes(value: str) -> None:
    assert unusable_call_id(value) is None


def test_the_openai_edge_names_every_location_in_one_error() -> None:
    body = {
        "model": "m",
        "messages": [
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "tool_calls": [
                    {"id": "", "type": "function", "function": {"name": "a", "arguments": "{}"}},
                    {"id": "ok", "type": "function", "function": {"name": "b", "arguments": "{}"}},
                    {"id": "x\ny", "type": "function", "function": {"name": "c", "arguments": "{}"}},
                ],
            },
            {"role": "tool", "tool_call_id": "", "content": "1"},
            {"role": "tool", "tool_call_id": "ok", "content": "2"},
            {"role": "tool", "tool_call_id": "x\ny", "content": "3"},
        ],
    }
    with pytest.raises(InvalidRequest) as exc:
        openai_chat_parse.parse_request(json.dumps(body).encode())
    err = exc.value
    assert err.param == "messages[1].tool_calls[0].id"
    assert [d["location"] for d in err.details] == [
        "messages[1].tool_calls[0].id",
        "messages[1].tool_calls[2].id",
        "messages[2].tool_call_id",
        "messages[4].tool_call_id",
    ]
    assert "messages[1].tool_calls[1]" not in err.message


def test_the_anthropic_edge_names_tool_use_and_tool_result_ids() -> None:
    body = {
        "model": "m",
        "max_tokens": 10,
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": " ", "name": "a", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": " ", "content": "1"}]},
        ],
    }
    with pytest.raises(InvalidRequest) as exc:
        anthropic_messages_parse.parse_request(json.dumps(body).encode())
    assert [d["location"] for d in exc.value.details] == [
        "messages[1].content[0].id",
        "messages[2].content[0].tool_use_id",
    ]
    assert all(d["reason"] == "is whitespace only" for d in exc.value.details)
