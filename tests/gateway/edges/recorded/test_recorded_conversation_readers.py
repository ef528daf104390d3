"""Readers of recorded agent conversations (gateway/edges/recorded/*), on real slices in
tests/fixtures/<source>/ (see each ORIGIN.md)."""

from __future__ import annotations

from pathlib import Path

import orjson

from gateway.edges import anthropic_messages, openai_chat
from gateway.edges.recorded import openai_logs, openhands, pi
from gateway.edges.recorded.jsonstream import iter_objects
from gateway.replay.records import Issue
from gateway.schema import AssistantMessage, ToolResultMessage

FIX = Path(__file__).resolve().parents[3] / "fixtures"


def test_pi_session_becomes_anthropic_turns_with_recorded_usage_and_cost() -> None:
    [conv], issues = pi.read(FIX / "pi-mono/large-session-head.jsonl", "large-session-head.jsonl")
    assert issues == []
    assert conv.dialect == "anthropic_messages"
    assert conv.name == "d703a1a9-1b7b-4fb1-b512-c9738b1fe617"
    assert len(conv.turns) == 15
    first = conv.turns[0]  # the aborted gpt-5.1-codex turn: empty content, zero usage
    assert (first.model, first.stop, first.cost_usd) == ("gpt-5.1-codex", "aborted", 0)
    priced = [t for t in conv.turns if t.cost_usd]
    assert priced and all(t.usage and t.usage["output_tokens"] > 0 for t in priced)
    body = orjson.dumps({**conv.head, "messages": conv.request_messages(5)})
    req = anthropic_messages.parse_request(body)
    assert req.messages and not isinstance(req.messages[-1], AssistantMessage)


def test_pi_tool_results_keep_ids_and_error_flag() -> None:
    [conv], _ = pi.read(FIX / "pi-mono/large-session-head.jsonl", "x")
    req = anthropic_messages.parse_request(orjson.dumps({**conv.head, "messages": conv.messages}))
    results = [m for m in req.messages if isinstance(m, ToolResultMessage)]
    calls = {c.id for m in req.messages if isinstance(m, AssistantMessage) for c in m.tool_calls}
    assert results and {r.tool_call_id for r in results} <= calls
    assert any(r.is_error for r in results) or all(not r.is_error for r in results)


def test_two_objects_on_one_line_are_both_read() -> None:
    issues: list[Issue] = []
    text = (FIX / "pi-mono/compact-two-objects.jsonl").read_text()
    objs = list(iter_objects(text, "f", issues))
    assert issues == [] and len(objs) == 3
    assert [line for line, _ in objs] == [1, 2, 2]


def test_malformed_line_is_reported_with_its_number_and_skipped() -> None:
    issues: list[Issue] = []
    objs = list(iter_objects('{"a": 1}\n{not json\n{"b": 2}\n', "f.jsonl", issues))
    assert [o for _, o in objs] == [{"a": 1}, {"b": 2}]
    assert [(i.file, i.line) for i in issues] == [("f.jsonl", 2)]


def test_pi_compaction_entry_makes_later_turns_a_rebuilt_view() -> None:
    [conv], _ = pi.read(FIX / "pi-mono/compact-slice.jsonl", "compact-slice.jsonl")
    assert conv.views, "turns after the compaction entry must get a rebuilt context"
    k = min(conv.views)
    view = conv.request_messages(k)
    assert view[0]["content"][0]["text"].startswith(pi.SUMMARY_PREFIX)
    assert len(view) < conv.turns[k].index + 1


def test_swe_agent_python_repr_tool_calls_are_decoded() -> None:
    data = orjson.loads(
        (FIX / "swe-agent/trajectories/demonstrations/function_calling_simple.traj").read_bytes()
    )
    assert openai_logs.looks_like_swe_agent(data)
    [conv], issues = openai_logs.read_swe_agent(data, "t.traj")
    assert issues == [] and len(conv.turns) == 5
    req = openai_chat.parse_request(orjson.dumps({**conv.head, "messages": conv.messages}))
    calls = [c for m in req.messages if isinstance(m, AssistantMessage) for c in m.tool_calls]
    assert calls[0].id == "call_PbWErNIge3YTrli3fiVvmIid"
    assert calls[0].raw_arguments == '{"file_name":"missing_colon.py"}'


def test_openhands_events_become_assistant_turns_with_usage() -> None:
    data = orjson.loads((FIX / "openhands/tests/runtime/trajs/wrong_initial_state.json").read_bytes())
    assert openhands.looks_like(data)
    conv, issues = openhands.read_history(data, "w.json", "history", openhands.model_of(data))
    assert issues == []
    assert conv.head["model"] == "claude-3-5-sonnet-20241022" or conv.head["model"]
    assert all(t.usage for t in conv.turns)
    roles = [m["role"] for m in conv.messages]
    assert roles.count("tool") == 3


def test_tau_bench_items_are_conversations() -> None:
    data = orjson.loads((FIX / "tau-bench/gpt-4o-airline-first2.json").read_bytes())
    convs, issues = openai_logs.read_tau_bench(data, "tau.json")
    assert issues == [] and len(convs) == 2
    assert sum(len(c.turns) for c in convs) == 20


def test_toolbench_legacy_function_calls_get_deterministic_ids() -> None:
    data = orjson.loads((FIX / "toolbench/G1_answer/10_ChatGPT_DFS_woFilter_w2.json").read_bytes())
    [conv], _ = openai_logs.read_toolbench(data, "tb.json")
    body = orjson.dumps({**conv.head, "messages": conv.messages})
    a, b = openai_chat.parse_request(body), openai_chat.parse_request(body)
    ids = [c.id for m in a.messages if isinstance(m, AssistantMessage) for c in m.tool_calls]
    assert ids and ids == [c.id for m in b.messages if isinstance(m, AssistantMessage) for c in m.tool_calls]
    results = [m.tool_call_id for m in a.messages if isinstance(m, ToolResultMessage)]
    assert results == ids[: len(results)]
    assert a.tools, "the legacy functions become tools"


def test_toolbench_run_without_answer_is_an_issue() -> None:
    convs, issues = openai_logs.read_toolbench(
        {"answer_generation": {"valid_data": False, "train_messages": []}}, "tb.json"
    )
    assert convs == [] and "valid_data is false" in issues[0].message
