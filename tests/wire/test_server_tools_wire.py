"""Anthropic server tools and tool search through the gateway (issue 14 item 4), with the
official anthropic SDK: toward a Claude deployment the server tool definitions, deferred tools,
``tool_reference`` blocks and the history's server tool calls and results reach the upstream
verbatim, and the answer's server blocks come back exact, whole and streamed; toward another
wire API the request is a 400 naming each of them, with no upstream call."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import pytest
from standins import recordings
from standins.tool_answers import text_answer
from standins.upstream import UpstreamStandin, replay

WEB_SEARCH = (
    "anthropic-sdk-python/tests/lib/tools/__inline_snapshot__/test_runners/TestSyncRunTools/"
    "32da0815-2270-4d29-87be-3b5b63ab42e2.json"
)
WEB_SEARCH_STREAM = "vercel-ai/packages/anthropic/src/__fixtures__/anthropic-web-search-tool.1.chunks.txt"

SEARCH_TOOL = {"type": "web_search_20250305", "name": "web_search"}
TOOLS: list[dict[str, Any]] = [
    {"name": "ToolSearch", "description": "Find tools.", "input_schema": {"type": "object"}},
    {
        "name": "Read",
        "description": "Read a file.",
        "input_schema": {"type": "object"},
        "defer_loading": True,
    },
    SEARCH_TOOL,
]
SERVER_CALL = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "x"}}
SERVER_RESULT = {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []}
TOOL_REF = {"type": "tool_reference", "tool_name": "Read"}
HISTORY: list[dict[str, Any]] = [
    {"role": "user", "content": "What is the weather in SF? Then read notes.txt."},
    {
        "role": "assistant",
        "content": [
            SERVER_CALL,
            SERVER_RESULT,
            {"type": "tool_use", "id": "toolu_1", "name": "ToolSearch", "input": {"query": "read"}},
        ],
    },
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": [TOOL_REF]}]},
]


def _server(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [b for b in blocks if b["type"] == "server_tool_use" or b["type"].endswith("_tool_result")]


def test_tool_search_and_web_search_reach_claude_verbatim_and_the_server_blocks_come_back(
    upstream: UpstreamStandin, ant: anthropic.Anthropic
) -> None:
    (exchange,) = recordings.inline_snapshot(WEB_SEARCH)
    upstream.script(replay(exchange))
    raw = ant.messages.with_raw_response.create(
        model="an",
        max_tokens=1024,
        messages=HISTORY,  # type: ignore[arg-type]
        tools=TOOLS,  # type: ignore[arg-type]
    )
    assert raw.http_response.status_code == 200
    assert "x-turnstile-dropped" not in raw.headers
    (got,) = upstream.requests()
    assert got.body["tools"] == TOOLS
    assert got.body["messages"][1]["content"][:2] == [SERVER_CALL, SERVER_RESULT]
    assert got.body["messages"][2]["content"][0]["content"] == [TOOL_REF]
    recorded = json.loads(exchange.body)
    body = json.loads(raw.http_response.content)
    assert _server(body["content"]) == _server(recorded["content"]) and _server(recorded["content"])
    assert body["content"] == recorded["content"]  # the text's citations too
    message = raw.parse()
    assert [b.type for b in message.content][:2] == ["server_tool_use", "web_search_tool_result"]
    assert message.stop_reason == "end_turn"


def test_a_streamed_web_search_answer_reaches_the_client_with_its_server_blocks(
    upstream: UpstreamStandin, ant: anthropic.Anthropic
) -> None:
    upstream.script(replay(recordings.vercel_chunks(WEB_SEARCH_STREAM, "anthropic_messages")))
    with ant.messages.stream(
        model="an",
        max_tokens=1024,
        messages=[{"role": "user", "content": "What's new in tech today?"}],
        tools=[SEARCH_TOOL],  # type: ignore[list-item]
    ) as stream:
        message = stream.get_final_message()
    (got,) = upstream.requests()
    assert got.body["tools"] == [SEARCH_TOOL]
    blocks = [b.model_dump(exclude_none=True) for b in message.content]
    calls = [b for b in blocks if b["type"] == "server_tool_use"]
    assert [c["input"] for c in calls] == [{"query": "tech news today September 26 2025"}]
    results = [b for b in blocks if b["type"] == "web_search_tool_result"]
    assert [r["tool_use_id"] for r in results] == [c["id"] for c in calls]
    recorded = [
        json.loads(line)
        for line in (recordings.FIXTURES / WEB_SEARCH_STREAM).read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    (start,) = [
        e["content_block"]
        for e in recorded
        if e["type"] == "content_block_start" and e["content_block"]["type"] == "web_search_tool_result"
    ]
    pick = ("url", "title", "encrypted_content")
    (result,) = results
    assert [{k: r[k] for k in pick} for r in result["content"]] == [
        {k: r[k] for k in pick} for r in start["content"]
    ]  # whole, as recorded
    assert len(start["content"]) > 1
    assert message.stop_reason == "end_turn" and any(b.get("text") for b in blocks)
    cited = [
        e["delta"]["citation"]
        for e in recorded
        if e["type"] == "content_block_delta" and e["delta"]["type"] == "citations_delta"
    ]
    got_cited = [c for b in blocks if b["type"] == "text" for c in b.get("citations") or []]
    assert [c["encrypted_index"] for c in got_cited] == [c["encrypted_index"] for c in cited] and cited


def test_server_tools_and_tool_references_toward_another_wire_api_are_refused_by_name(
    upstream: UpstreamStandin, ant: anthropic.Anthropic
) -> None:
    with pytest.raises(anthropic.BadRequestError) as exc:
        ant.messages.create(
            model="oa",
            max_tokens=64,
            messages=HISTORY,  # type: ignore[arg-type]
            tools=TOOLS,  # type: ignore[arg-type]
        )
    assert exc.value.status_code == 400
    message = exc.value.message
    for named in (
        "messages[1].content[0] (server_tool_use)",
        "messages[1].content[1] (web_search_tool_result)",
        "tools[2] (web_search_20250305 'web_search')",
        "openai_chat",
    ):
        assert named in message
    assert exc.value.body["error"]["type"] == "invalid_request_error"  # type: ignore[index]
    assert upstream.requests() == []


def test_citations_in_the_history_toward_another_wire_api_are_dropped_and_named(
    upstream: UpstreamStandin, ant: anthropic.Anthropic
) -> None:
    upstream.script(replay(text_answer("openai_chat", "ok", stream=False)))
    cite = {
        "type": "web_search_result_location",
        "url": "https://x",
        "cited_text": "c",
        "encrypted_index": "E",
    }
    raw = ant.messages.with_raw_response.create(
        model="oa",
        max_tokens=64,
        messages=[
            {"role": "user", "content": "weather?"},
            {"role": "assistant", "content": [{"type": "text", "text": "It rains.", "citations": [cite]}]},
            {"role": "user", "content": "thanks"},
        ],  # type: ignore[list-item]
    )
    assert raw.http_response.status_code == 200
    assert raw.headers["x-turnstile-dropped"] == "messages[1].content[0].citations"
    (got,) = upstream.requests()
    assert "encrypted_index" not in json.dumps(got.body)


def test_citations_on_system_blocks_toward_another_wire_api_are_dropped_and_named(
    upstream: UpstreamStandin, ant: anthropic.Anthropic
) -> None:
    upstream.script(replay(text_answer("openai_chat", "ok", stream=False)))
    cite = {
        "type": "char_location",
        "cited_text": "c",
        "document_index": 0,
        "start_char_index": 0,
        "end_char_index": 1,
    }
    raw = ant.messages.with_raw_response.create(
        model="oa",
        max_tokens=64,
        system=[{"type": "text", "text": "Rules.", "citations": [cite]}],  # type: ignore[list-item]
        messages=[
            {"role": "user", "content": "hi"},
            {"role": "system", "content": [{"type": "text", "text": "Env.", "citations": [cite]}]},  # type: ignore[typeddict-item, misc]
        ],
    )
    assert raw.headers["x-turnstile-dropped"] == "system[0].citations,messages[1].content[0].citations"
    (got,) = upstream.requests()
    assert "char_location" not in json.dumps(got.body)


def test_a_tool_search_result_toward_another_wire_api_is_text_and_the_deferred_tool_a_function(
    upstream: UpstreamStandin, ant: anthropic.Anthropic
) -> None:
    """Claude Code's tool search (its ToolSearch tool answers with ``tool_reference`` blocks
    naming ``defer_loading`` tools) toward an OpenAI upstream: every tool is a function there,
    the reference the text ``Tool loaded: <name>``; only ``defer_loading`` is named dropped."""
    upstream.script(replay(text_answer("openai_chat", "ok", stream=False)))
    search = {"type": "tool_use", "id": "toolu_1", "name": "ToolSearch", "input": {"query": "read"}}
    result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": [TOOL_REF]}
    raw = ant.messages.with_raw_response.create(
        model="oa",
        max_tokens=64,
        messages=[
            {"role": "user", "content": "Read notes.txt."},
            {"role": "assistant", "content": [search]},
            {"role": "user", "content": [result]},
        ],  # type: ignore[list-item]
        tools=TOOLS[:2],  # type: ignore[arg-type]
    )
    assert raw.http_response.status_code == 200
    assert raw.headers["x-turnstile-dropped"] == "tools[1].defer_loading"
    (got,) = upstream.requests()
    assert [t["function"]["name"] for t in got.body["tools"]] == ["ToolSearch", "Read"]
    assert got.body["messages"][2] == {
        "role": "tool",
        "tool_call_id": "toolu_1",
        "content": "Tool loaded: Read",
    }
