"""The scripted Claude behind the Claude Code rows (:mod:`compat.agents.claude_code_upstream`),
driven directly with the ``anthropic`` SDK: the same answer whole and streamed, signed thinking
when thinking is on, the web search server tool answered with its blocks, and the Anthropic
API's tool rules (:mod:`compat.agents.claude_code_rules`) refused with the API's error."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import pytest
from compat.agents.claude_code_rules import violation
from compat.agents.claude_code_upstream import PLAIN_ANSWER, PROMPTS, SEARCH_MARKER, ClaudeCodeUpstream
from standins.servers import LoopThread

TOOLS = [
    {"name": "Read", "input_schema": {"type": "object"}},
    {"name": "ToolSearch", "input_schema": {"type": "object"}},
    {"name": "CronList", "input_schema": {"type": "object"}, "defer_loading": True},
]


@pytest.fixture
def claude(tmp_path: Path) -> Iterator[tuple[ClaudeCodeUpstream, anthropic.Anthropic]]:
    loop = LoopThread()
    up = ClaudeCodeUpstream(tmp_path)
    loop.call(up.start())
    try:
        # The SDK sends its key as a bearer token; the real API (and the stand-in) read x-api-key.
        client = anthropic.Anthropic(
            base_url=up.url,
            api_key="sk-ant-test",
            max_retries=0,
            default_headers={"x-api-key": "sk-ant-test"},
        )
        yield up, client
    finally:
        loop.call(up.stop())
        loop.close()


def _ask(client: anthropic.Anthropic, stream: bool, **body: Any) -> Any:
    params: dict[str, Any] = {"model": "claude-opus-5-5", "max_tokens": 100, **body}
    if not stream:
        return client.messages.create(**params)
    with client.messages.stream(**params) as s:
        return s.get_final_message()


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_the_scripted_claude_answers_alike_whole_and_streamed_with_signed_thinking(
    claude: tuple[ClaudeCodeUpstream, anthropic.Anthropic], stream: bool
) -> None:
    up, client = claude
    msgs = [{"role": "user", "content": PROMPTS["read"]}]
    got = _ask(
        client, stream, messages=msgs, tools=TOOLS, thinking={"type": "adaptive", "display": "omitted"}
    )
    thinking, call = got.content
    assert (
        thinking.type == "thinking" and thinking.thinking == "" and thinking.signature.startswith("sig-cc-")
    )
    assert (call.type, call.name, call.input) == (
        "tool_use",
        "Read",
        {"file_path": str(up.plans["read"][0][1]["file_path"])},
    )
    assert got.stop_reason == "tool_use"
    plain = _ask(client, stream, messages=[{"role": "user", "content": PROMPTS["plain"]}], tools=TOOLS)
    assert [b.text for b in plain.content] == [PLAIN_ANSWER]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_the_web_search_server_tool_is_answered_with_its_call_and_result_blocks(
    claude: tuple[ClaudeCodeUpstream, anthropic.Anthropic], stream: bool
) -> None:
    _up, client = claude
    got = _ask(
        client,
        stream,
        messages=[{"role": "user", "content": "Perform a web search for the query: Turnstile gateway"}],
        tools=[{"type": "web_search_20250305", "name": "web_search", "max_uses": 8}],
    )
    call, result, text = got.content
    assert (call.type, call.name, call.input) == (
        "server_tool_use",
        "web_search",
        {"query": "Turnstile gateway"},
    )
    assert result.type == "web_search_tool_result" and result.tool_use_id == call.id
    assert SEARCH_MARKER in result.content[0].title and SEARCH_MARKER in text.text


def test_a_deferred_tool_is_called_only_once_a_tool_reference_loaded_it(
    claude: tuple[ClaudeCodeUpstream, anthropic.Anthropic],
) -> None:
    up, client = claude
    searched = [
        {"role": "user", "content": PROMPTS["tool-search"]},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "ToolSearch", "input": {}}],
        },
    ]
    loaded = [
        {
            "type": "tool_result",
            "tool_use_id": "t1",
            "content": [{"type": "tool_reference", "tool_name": "CronList"}],
        }
    ]
    plain = [{"type": "tool_result", "tool_use_id": "t1", "content": "nothing found"}]
    got = _ask(client, False, messages=[*searched, {"role": "user", "content": loaded}], tools=TOOLS)
    assert [(b.type, getattr(b, "name", None)) for b in got.content] == [("tool_use", "CronList")]
    stuck = _ask(client, False, messages=[*searched, {"role": "user", "content": plain}], tools=TOOLS)
    assert stuck.content[0].type == "text" and up.answered[-1][1:] == ("stuck", "CronList")


@pytest.mark.parametrize(
    ("body", "error"),
    [
        (
            {
                "messages": [
                    {
                        "role": "assistant",
                        "content": [{"type": "tool_use", "id": "t1", "name": "Read", "input": {}}],
                    }
                ]
            },
            "`tool_use` ids were found without `tool_result` blocks immediately after: t1",
        ),
        (
            {
                "messages": [
                    {
                        "role": "user",
                        "content": [{"type": "tool_result", "tool_use_id": "t9", "content": "x"}],
                    }
                ]
            },
            "unexpected `tool_use_id` found in `tool_result` blocks: t9",
        ),
        (
            {
                "tools": TOOLS,
                "messages": [
                    {
                        "role": "assistant",
                        "content": [{"type": "tool_use", "id": "t1", "name": "ToolSearch", "input": {}}],
                    },
                    {
                        "role": "user",
                        "content": [
                            {
                                "type": "tool_result",
                                "tool_use_id": "t1",
                                "content": [{"type": "tool_reference", "tool_name": "Read"}],
                            }
                        ],
                    },
                ],
            },
            "tool_reference names 'Read', which is not a tool of this request with `defer_loading: true`",
        ),
        (
            {"tools": [{"type": "web_search_20250305", "name": "search"}], "messages": []},
            "tools.0.name: Input should be 'web_search'",
        ),
        (
            {
                "tools": [{"type": "web_search_20250305", "name": "web_search", "max_results": 3}],
                "messages": [],
            },
            "tools.0.max_results: Extra inputs are not permitted",
        ),
        (
            {"tools": [TOOLS[2]], "messages": []},
            "at least one tool must not have `defer_loading: true`",
        ),
        (
            {
                "messages": [
                    {
                        "role": "assistant",
                        "content": [
                            {"type": "server_tool_use", "id": "s1", "name": "web_search", "input": {}}
                        ],
                    }
                ]
            },
            "`server_tool_use` s1 has no result block",
        ),
    ],
    ids=[
        "unanswered-tool-use",
        "unmatched-tool-result",
        "reference-not-deferred",
        "web-search-name",
        "web-search-key",
        "all-deferred",
        "server-call-unanswered",
    ],
)
def test_the_anthropic_tool_rules_refuse_what_the_real_api_refuses(body: dict[str, Any], error: str) -> None:
    found = violation(body)
    assert found is not None and error in found


def test_a_refused_request_gets_the_apis_400_and_takes_no_answer(
    claude: tuple[ClaudeCodeUpstream, anthropic.Anthropic],
) -> None:
    up, client = claude
    bad = [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t9", "content": "x"}]}]
    with pytest.raises(anthropic.BadRequestError, match="unexpected `tool_use_id`"):
        _ask(client, False, messages=bad, tools=TOOLS)
    assert up.pending() == []
    assert violation({"tools": TOOLS, "messages": [{"role": "user", "content": PROMPTS["plain"]}]}) is None
