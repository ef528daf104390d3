"""Claude Code (pinned, npm) headless (``claude -p --output-format json``) through the gateway
process to an Anthropic Messages upstream, the scripted Claude
(:mod:`compat.agents.claude_code_upstream`), with its tool search on (``ENABLE_TOOL_SEARCH=true``).

Each scenario compares what Claude Code sent (the tap in front of the gateway) with what reached
the upstream: the ``anthropic-beta`` names and Claude Code's own headers, the tools (deferred
ones with ``defer_loading``, the web search server tool) and the blocks of the conversation
(``tool_reference`` results, the answered server tool blocks), and checks the final answer
Claude Code printed. One scenario routes Claude Code to an OpenAI Chat Completions upstream
instead and checks what the gateway names as dropped.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from e2e.npm_tools import Tools
from standins.agent_upstream import MARKER

from .claude_code_harness import MODELS, OPENAI_MODEL, TOOL_SEARCH_BETA, VIA_OPENAI, ClaudeCodeRig, betas
from .claude_code_upstream import (
    FOUND_TOOL,
    PLAIN_ANSWER,
    PROMPTS,
    SEARCH_MARKER,
    SEARCH_URL,
    tool_results,
)

API = "anthropic_messages"
CLAUDE_CODE_HEADERS = ("x-claude-code-session-id", "x-app")
"""Claude Code's own headers the gateway forwards to an Anthropic upstream (``anthropic.forward``)."""


def tools_of(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The request's tools by name."""
    return {str(t.get("name")): t for t in body.get("tools") or []}


def _blocks(content: Any) -> list[dict[str, Any]]:
    """``content`` as the list of blocks it means: a string is one text block (none when empty),
    a tool result's string content one text block, and a thinking signature without the
    gateway's envelope (``tsig1.<provenance>.<signature>``: it signs what it hands out)."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    out = []
    for block in content:
        block = dict(block)
        if block.get("type") == "tool_result" and "content" in block:
            block["content"] = _blocks(block["content"])
        if block.get("type") == "thinking":
            block["signature"] = re.sub(r"^tsig1\.[^.]+\.", "", block["signature"])
        out.append(block)
    return out


def assert_carried(cc: ClaudeCodeRig) -> list[tuple[Any, Any]]:
    """Every Messages request reached the upstream once, on a model Claude Code asked for, with
    every top-level field, its betas, tools, thinking, output_config, context_management and
    metadata as sent, its system blocks and its messages in place with their blocks (cache
    marks, tool results, ``tool_reference``, signed thinking: :func:`_blocks`) and their own
    keys (mid-conversation ``system`` messages and their per-turn ``output_config``
    included). Returns the pairs."""
    pairs = cc.pairs()
    assert pairs, f"Claude Code sent no Messages request\n{cc.diagnosis()}"
    for sent, got in pairs:
        assert sent.model in MODELS and got.model == sent.model
        assert set(betas(sent)) <= set(betas(got)), (betas(sent), betas(got))
        for header in CLAUDE_CODE_HEADERS:
            assert got.headers.get(header) == sent.headers[header], header
        assert got.body.get("tools") == sent.body.get("tools")
        assert set(sent.body) <= set(got.body), set(sent.body) - set(got.body)
        for key in ("thinking", "output_config", "context_management", "tool_choice", "metadata", "stream"):
            assert got.body.get(key) == sent.body.get(key), key
        keys = [sorted(m) for m in sent.body["messages"]]
        assert [sorted(m) for m in got.body["messages"]] == keys
        assert [_blocks(m["content"]) for m in got.body["messages"]] == [
            _blocks(m["content"]) for m in sent.body["messages"]
        ]
        assert _blocks(got.body.get("system", [])) == _blocks(sent.body.get("system", []))
        own = [{k: v for k, v in m.items() if k != "content"} for m in sent.body["messages"]]
        assert [{k: v for k, v in m.items() if k != "content"} for m in got.body["messages"]] == own
    return pairs


@pytest.mark.compat(
    client="claude-code",
    scenario="claude -p (plain prompt)",
    checks="the prompt, adaptive thinking, effort, context_management, the mid-conversation system "
    "message with its per-turn output_config, the anthropic-beta names and the x-claude-code-session-id "
    "and x-app headers reach the upstream as sent; the answer is printed",
    api=API,
)
def test_claude_code_plain_prompt_is_answered_through_the_gateway(
    cc: ClaudeCodeRig, claude_code: Tools
) -> None:
    _run, result = cc.run(claude_code, PROMPTS["plain"])

    assert result["result"] == PLAIN_ANSWER
    ((sent, got),) = assert_carried(cc)
    assert "claude-code-20250219" in betas(got)
    assert PROMPTS["plain"] in json.dumps(got.body["messages"][0])
    (system,) = [m for m in got.body["messages"] if m["role"] == "system"]
    assert system.get("output_config") == sent.body["messages"][1].get("output_config") is not None
    assert got.body["thinking"] == sent.body["thinking"] and sent.body["thinking"]["type"] == "adaptive"
    cc.e2e.assert_offline()


@pytest.mark.compat(
    client="claude-code",
    scenario="claude -p: Read tool loop",
    checks="the Read tool_use goes back with its tool_result (the note) to the upstream; "
    "the answer quotes it",
    api=API,
)
def test_claude_code_reads_the_note_and_quotes_it(cc: ClaudeCodeRig, claude_code: Tools) -> None:
    _run, result = cc.run(claude_code, PROMPTS["read"])

    assert MARKER in result["result"], cc.diagnosis()
    pairs = assert_carried(cc)
    assert [a[1:] for a in cc.upstream.answered] == [("tool_use", "Read"), ("final", result["result"])]
    (read,) = tool_results(pairs[-1][1].body)
    assert MARKER in json.dumps(read["content"]) and not read.get("is_error")
    cc.e2e.assert_tool_round_trip("Read")
    cc.e2e.assert_offline()


@pytest.mark.compat(
    client="claude-code",
    scenario="claude -p: tool search (ToolSearch, deferred tools)",
    checks="defer_loading tools, the advanced-tool-use beta and the tool_reference result reach the "
    "upstream verbatim; Claude Code then calls the found tool and its result goes up",
    api=API,
)
def test_claude_code_tool_search_loads_a_deferred_tool_and_calls_it(
    cc: ClaudeCodeRig, claude_code: Tools
) -> None:
    _run, result = cc.run(claude_code, PROMPTS["tool-search"])

    pairs = assert_carried(cc)
    assert [a[1:3] for a in cc.upstream.answered][:2] == [
        ("tool_use", "ToolSearch"),
        ("tool_use", FOUND_TOOL),
    ], cc.diagnosis()
    first, loaded, last = pairs[0][1].body, pairs[1][1].body, pairs[-1][1].body
    assert "ToolSearch" in tools_of(first) and FOUND_TOOL not in tools_of(first)
    assert any(t.get("defer_loading") is True for t in first["tools"])
    assert tools_of(loaded)[FOUND_TOOL]["defer_loading"] is True
    search_result = tool_results(loaded)[0]
    assert search_result["content"] == [{"type": "tool_reference", "tool_name": FOUND_TOOL}]
    assert search_result == tool_results(pairs[1][0].body)[0]
    assert all(TOOL_SEARCH_BETA in betas(got) for _sent, got in pairs[:2])
    found = tool_results(last)[-1]
    assert not found.get("is_error"), found
    assert result["result"].startswith("The result says: ")
    cc.e2e.assert_offline()


@pytest.mark.compat(
    client="claude-code",
    scenario="claude -p: WebSearch (web_search server tool)",
    checks="the web_search_20250305 server tool reaches the upstream verbatim; the server_tool_use and "
    "web_search_tool_result blocks reach Claude Code, whose answer quotes the result",
    api=API,
)
def test_claude_code_web_search_server_tool_round_trips(cc: ClaudeCodeRig, claude_code: Tools) -> None:
    _run, result = cc.run(claude_code, PROMPTS["web-search"], "--allowedTools", "WebSearch")

    pairs = assert_carried(cc)
    rules = [a[1:3] for a in cc.upstream.answered]
    assert ("web_search", "Turnstile gateway") in rules, cc.diagnosis()
    searches = [
        (sent, got)
        for sent, got in pairs
        if any(str(t.get("type", "")).startswith("web_search_") for t in got.body.get("tools") or [])
    ]
    ((sent, got),) = searches
    (tool,) = got.body["tools"]
    assert (
        tool == sent.body["tools"][0]
        and tool["type"] == "web_search_20250305"
        and tool["name"] == "web_search"
    )
    web = [r for r in tool_results(pairs[-1][1].body) if SEARCH_MARKER in json.dumps(r)]
    assert web and SEARCH_URL in json.dumps(web[0]), cc.diagnosis()
    assert SEARCH_MARKER in result["result"]
    cc.e2e.assert_offline()


@pytest.mark.compat(
    client="claude-code",
    scenario="claude -p (plain prompt) to a non-Anthropic upstream",
    checks="the prompt and the mid-conversation system message in place, every tool as a function; "
    "the Anthropic-only fields (defer_loading, context_management, any per-turn output_config, the "
    "betas, cache marks) dropped and named in x-turnstile-dropped; the answer is printed",
    api="openai_chat",
)
def test_claude_code_plain_prompt_reaches_an_openai_upstream_with_the_anthropic_only_fields_named(
    cc: ClaudeCodeRig, claude_code: Tools
) -> None:
    _run, result = cc.run(claude_code, PROMPTS["plain"], "--model", VIA_OPENAI)

    assert result["result"] == PLAIN_ANSWER
    ((sent, got),) = cc.pairs("openai_chat")
    assert sent.model == VIA_OPENAI and got.model == OPENAI_MODEL
    assert PROMPTS["plain"] in json.dumps(got.body["messages"])
    assert [m["role"] for m in got.body["messages"]] == [
        "system",
        *[m["role"] for m in sent.body["messages"]],
    ]
    assert [t["function"]["name"] for t in got.body["tools"]] == [t["name"] for t in sent.body["tools"]]
    (answer,) = [h for r, h in zip(cc.tap.received, cc.tap.answers, strict=True) if r.path == "/v1/messages"]
    dropped = answer["x-turnstile-dropped"].split(",")
    deferred = [i for i, t in enumerate(sent.body["tools"]) if t.get("defer_loading")]
    assert deferred and {f"tools[{i}].defer_loading" for i in deferred} <= set(dropped), dropped
    per_turn = {
        f"messages[{i}].output_config" for i, m in enumerate(sent.body["messages"]) if "output_config" in m
    }
    serving = {k for k in ("context_management", "cache_control") if k in sent.body}
    assert {"anthropic-beta", *serving, *per_turn} <= set(dropped), dropped
    text = json.dumps(got.body)
    assert "defer_loading" not in text and "output_config" not in text and "context_management" not in text
    assert not set(CLAUDE_CODE_HEADERS) & set(got.headers)
    cc.e2e.assert_offline()
