"""Tool-call ids an upstream sends that the edge would refuse from a client are replaced on the
way out by the truncation guard (gateway.guards.upstream_ids), the same streamed and whole."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given
from hypothesis import strategies as st
from structlog.testing import capture_logs

from gateway.call_id_rule import unusable_call_id
from gateway.guards.upstream_ids import escaped, replace_unusable, safe_call_id
from gateway.invariants import StreamTruncationGuard, check_truncation, collect
from gateway.schema import (
    AssistantMessage,
    MessageEnd,
    MessageStart,
    PartDelta,
    PartEnd,
    PartStart,
    Response,
    StopReason,
    StreamEvent,
    TextPart,
    ToolCallPart,
    WithheldToolCall,
)
from gateway.tool_loop_ids import TurnCallIds

EVIL = "a\r\nX-Evil: 1\x00"
EVIL_SAFE = "call_" + hashlib.sha256(EVIL.encode()).hexdigest()[:24]
ARGS = '{"city": "Paris"}'


def _calls(*ids: str, raw: str = '{"city": "Paris"}') -> list[ToolCallPart]:
    return [ToolCallPart(id=i, name="get_weather", raw_arguments=raw) for i in ids]


def _whole(ids: list[str], stop: StopReason = "tool_use", raw: str = '{"city": "Paris"}') -> Response:
    content: list[TextPart | ToolCallPart] = [TextPart(text="checking"), *_calls(*ids, raw=raw)]
    return Response(id="r", model="m", message=AssistantMessage(content=content), stop_reason=stop)


def _events(
    ids: list[str], stop: StopReason = "tool_use", raw: str = '{"city": "Paris"}'
) -> list[StreamEvent]:
    events: list[StreamEvent] = [
        MessageStart(id="r", model="m"),
        PartStart(index=0, kind="text"),
        PartDelta(index=0, text="checking"),
        PartEnd(index=0),
    ]
    for n, cid in enumerate(ids, start=1):
        events += [
            PartStart(index=n, kind="tool_call", id=cid, name="get_weather"),
            PartDelta(index=n, arguments=raw),
            PartEnd(index=n),
        ]
    return [*events, MessageEnd(stop_reason=stop)]


def _streamed(ids: list[str], stop: StopReason = "tool_use", raw: str = '{"city": "Paris"}') -> Response:
    guard = StreamTruncationGuard(deployment="dep-a")
    return collect([out for ev in _events(ids, stop, raw) for out in guard.feed(ev)])


def _ids(resp: Response) -> list[str]:
    return [c.id for c in resp.message.tool_calls]


def test_the_safe_id_is_call_and_24_hex_of_the_sha256_of_the_upstream_id() -> None:
    assert safe_call_id(EVIL) == EVIL_SAFE
    assert len(EVIL_SAFE) == 29 and unusable_call_id(EVIL_SAFE) is None


@pytest.mark.parametrize("path", ["whole", "stream"])
def test_an_id_the_edge_would_refuse_is_replaced_and_the_original_kept_in_the_answer(path: str) -> None:
    resp = check_truncation(_whole([EVIL])) if path == "whole" else _streamed([EVIL])

    assert _ids(resp) == [EVIL_SAFE]
    assert [r.model_dump() for r in resp.replaced_call_ids] == [
        {"id": EVIL_SAFE, "upstream_id": EVIL, "reason": "holds control character U+000D"}
    ]
    assert resp.message.tool_calls[0].raw_arguments == '{"city": "Paris"}', "nothing else changes"


@pytest.mark.parametrize("path", ["whole", "stream"])
def test_usable_ids_are_kept_and_nothing_is_noted(path: str) -> None:
    ids = ["call_1", "toolu_01A", "调用_1", "call.with.dots"]
    resp = check_truncation(_whole(ids)) if path == "whole" else _streamed(ids)

    assert _ids(resp) == ids
    assert resp.replaced_call_ids == []


def test_an_answer_with_only_usable_ids_is_returned_as_it_is() -> None:
    resp = _whole(["call_1"])
    assert check_truncation(resp) is resp


UNUSABLE = ["", " ", "\u200b", EVIL, "x\ny", "\U0001f600" * 70, "c" * 300]


@pytest.mark.parametrize("upstream_id", UNUSABLE)
def test_every_kind_the_edge_refuses_is_replaced_by_an_id_the_edge_takes(upstream_id: str) -> None:
    assert unusable_call_id(upstream_id) is not None
    (new,) = _ids(check_truncation(_whole([upstream_id])))
    assert new == safe_call_id(upstream_id)
    assert unusable_call_id(new) is None


def test_two_calls_with_one_unsafe_id_get_two_ids() -> None:
    resp = check_truncation(_whole(["", ""]))
    assert _ids(resp) == [safe_call_id(""), safe_call_id("") + "_2"]


def test_a_replacement_never_takes_a_usable_id_of_the_same_answer_even_a_later_one() -> None:
    ids = [EVIL, EVIL_SAFE, "x\ny", EVIL_SAFE + "_2"]
    for resp in (check_truncation(_whole(ids)), _streamed(ids)):
        got = _ids(resp)
        assert got[1] == EVIL_SAFE and got[3] == EVIL_SAFE + "_2", "usable ids are never renamed"
        assert got[0] == EVIL_SAFE + "_3"
        assert got[2] == safe_call_id("x\ny")
        assert len(set(got)) == len(got)


@pytest.mark.parametrize("path", ["whole", "stream"])
def test_withheld_calls_get_the_replacement_too(path: str) -> None:
    raw = '{"city": "Par'
    resp = (
        check_truncation(_whole([EVIL], "length", raw))
        if path == "whole"
        else _streamed([EVIL], "length", raw)
    )

    assert resp.message.tool_calls == []
    assert [w.id for w in resp.withheld_tool_calls] == [EVIL_SAFE]
    assert [w.raw_arguments for w in resp.withheld_tool_calls] == [raw]
    assert [r.upstream_id for r in resp.replaced_call_ids] == [EVIL]


def test_calls_already_withheld_are_judged_after_the_answers_calls() -> None:
    prior = WithheldToolCall(id=EVIL_SAFE, name="w", raw_arguments="{", reason="r")
    resp = _whole([EVIL]).model_copy(update={"withheld_tool_calls": [prior]})

    out = check_truncation(resp)

    assert [w.id for w in out.withheld_tool_calls] == [EVIL_SAFE], "a usable withheld id is kept"
    assert _ids(out) == [EVIL_SAFE + "_2"]


@given(st.lists(st.text(max_size=12) | st.sampled_from([*UNUSABLE, "call_1"]), min_size=1, max_size=6))
def test_stream_and_whole_give_the_same_ids_all_usable_and_distinct_where_the_upstreams_were(
    ids: list[str],
) -> None:
    whole = check_truncation(_whole(ids))
    streamed = _streamed(ids)

    assert _ids(whole) == _ids(streamed)
    assert whole.replaced_call_ids == streamed.replaced_call_ids
    assert all(unusable_call_id(i) is None for i in _ids(whole))
    kept = [i for i in ids if unusable_call_id(i) is None]
    new = [r.id for r in whole.replaced_call_ids]
    assert len(set(new)) == len(new) and not set(new) & set(kept), "no replacement meets another id"
    assert [r.upstream_id for r in whole.replaced_call_ids] == [i for i in ids if unusable_call_id(i)]


def test_each_replacement_is_logged_once_escaped_with_the_deployment() -> None:
    with capture_logs() as logs:
        check_truncation(_whole([EVIL, "ok", "\u200b"]), deployment="dep-a")

    lines = [e for e in logs if e["event"] == "upstream_tool_call_id_replaced"]
    assert [(e["upstream_id"], e["id"], e["deployment"]) for e in lines] == [
        ('"a\\r\\nX-Evil: 1\\u0000"', EVIL_SAFE, "dep-a"),
        ('"\\u200b"', safe_call_id("\u200b"), "dep-a"),
    ]
    assert all(e["log_level"] == "warning" for e in lines)


def test_a_long_upstream_id_is_shown_cut_in_the_log() -> None:
    shown = escaped("\n" * 1000)
    assert shown.endswith('"...') and shown.count("\\n") == 256


def test_no_log_line_and_no_work_when_every_id_is_usable() -> None:
    with capture_logs() as logs:
        assert replace_unusable(["call_1", "调用"], "dep-a") is None
    assert logs == []


def test_the_tool_loop_renames_a_replaced_id_reused_in_a_later_step() -> None:
    ids = TurnCallIds([])
    step1 = ids.claim_response(check_truncation(_whole([EVIL])), 1)
    step2 = ids.claim_response(check_truncation(_whole([EVIL])), 2)

    assert _ids(step1) == [EVIL_SAFE]
    assert _ids(step2) == [EVIL_SAFE + "_s2"]
    assert unusable_call_id(EVIL_SAFE + "_s2") is None
