"""The gateway's /mcp endpoint end to end: real upstream servers, the ``mcp`` SDK client.

Covers handed cases C24 (long names), C26 (two servers' ``search``), C28 (6 MB result) and the
fault cases of issue 6 (killed mid-call, hung, odd names, no annotations, destructive calls).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult, ElicitResult, InputRequiredResult, TextContent
from mcp_harness import McpGateway

from mcp_servers.naming import EXPOSED_NAME, exposed_name

LONG_TOOL = "a_tool_name_that_is_deliberately_much_longer_than_sixty_four_characters_in_total"


def _text(result: Any) -> str:
    return "".join(b.text for b in result.content if isinstance(b, TextContent))


async def _tools(gw: McpGateway) -> dict[str, Any]:
    async with Client(gw.mcp_url) as client:
        return {t.name: t for t in (await client.list_tools()).tools}


async def test_lists_every_servers_tools_under_valid_unique_names(gw: McpGateway) -> None:
    tools = await _tools(gw)
    assert "time__get_current_time" in tools and "github__echo" in tools
    assert all(EXPOSED_NAME.match(name) for name in tools)
    origins = {
        (t.meta["io.turnstile/origin"]["server"], t.meta["io.turnstile/origin"]["tool"])
        for t in tools.values()
    }
    assert len(origins) == len(tools)


async def test_c24_long_names_fit_and_route_to_the_original_tool(gw: McpGateway) -> None:
    server, tool = "enterprise-knowledge-base-prod", "search_documents_by_semantic_similarity"
    name = exposed_name(server, tool)
    assert len(name) <= 64 and EXPOSED_NAME.match(name)
    tools = await _tools(gw)
    assert name in tools and tools[name].input_schema["required"] == ["query"]
    async with Client(gw.mcp_url) as client:
        result = await client.call_tool(name, {"query": "onboarding"})
    assert not result.is_error
    assert _text(result) == "enterprise-knowledge-base-prod found documents for onboarding"


async def test_c26_two_servers_search_are_distinct_and_calls_reach_only_their_server(gw: McpGateway) -> None:
    tools = await _tools(gw)
    assert set(tools["github__search"].input_schema["properties"]) == {"query"}
    assert set(tools["jira__search"].input_schema["properties"]) == {"jql"}
    async with Client(gw.mcp_url) as client:
        jira = await client.call_tool("jira__search", {"jql": "project = DEMO"})
        github = await client.call_tool("github__search", {"query": "turnstile"})
    assert _text(jira) == "jira searched jql=project = DEMO"
    assert _text(github) == "github searched query=turnstile"


async def test_c28_six_megabyte_result_is_capped_with_marker(gw: McpGateway) -> None:
    async with Client(gw.mcp_url) as client:
        result = await client.call_tool("github__exec", {"cmd": "cat build.log"})
    text = _text(result)
    assert len(text.encode()) <= 128 * 1024
    m = re.search(r"\[turnstile: tool result truncated: (\d+) bytes in all, (\d+) bytes omitted\]", text)
    assert m and int(m.group(1)) > 5_000_000
    assert text.startswith("line 0: compiling module") and text.endswith(
        "line 154999: compiling module m90.c ...\n"
    )
    origin = result.meta["io.turnstile/origin"]
    assert origin["truncated"] and origin["untrusted"] and origin["server"] == "github"
    assert result.structured_content is None


async def test_results_carry_the_gateways_server_info_not_the_upstreams(gw: McpGateway) -> None:
    async with Client(gw.mcp_url) as client:
        assert client.server_info is not None and client.server_info.name == "turnstile"
        result = await client.call_tool("time__get_current_time", {"timezone": "UTC"})
    assert not result.is_error and result.structured_content["timezone"] == "UTC"
    assert result.meta["io.modelcontextprotocol/serverInfo"]["name"] == "turnstile"


async def test_names_with_dots_slashes_and_overlength_are_exposed_and_callable(gw: McpGateway) -> None:
    weird, long = exposed_name("github", "weird.name/with.dots"), exposed_name("github", LONG_TOOL)
    tools = await _tools(gw)
    assert weird in tools and long in tools and len(long) <= 64
    async with Client(gw.mcp_url) as client:
        assert _text(await client.call_tool(weird, {})) == "weird ok"
        assert _text(await client.call_tool(long, {})) == "long ok"


async def test_unknown_tool_is_a_protocol_error(gw: McpGateway) -> None:
    async with Client(gw.mcp_url) as client:
        with pytest.raises(MCPError, match="unknown tool"):
            await client.call_tool("nobody__nothing", {})


async def test_hung_tool_times_out_with_an_error_naming_the_server(gw: McpGateway) -> None:
    up = gw.registry.upstream("enterprise-knowledge-base-prod")
    restarts = up.restarts
    async with Client(gw.mcp_url) as client:
        result = await client.call_tool("enterprise-knowledge-base-prod__hang", {})
        assert (
            result.is_error and "'enterprise-knowledge-base-prod'" in _text(result) and "1 s" in _text(result)
        )
        # the upstream stays usable after a timeout: its liveness probe answered, no restart
        echo = await client.call_tool("enterprise-knowledge-base-prod__echo", {"text": "still here"})
        assert _text(echo) == "still here"
    assert up.state == "ready" and up.restarts == restarts and up.consecutive_failures == 0


async def test_tool_without_annotations_counts_as_worst_case(gw: McpGateway) -> None:
    tools = await _tools(gw)
    assert tools["github__untagged"].meta["io.turnstile/origin"]["trust"] == "confirm"
    assert tools["github__echo"].meta["io.turnstile/origin"]["trust"] == "allow"
    assert tools["github__write_note"].meta["io.turnstile/origin"]["trust"] == "allow_in_workspace"


async def test_destructive_call_without_eliciting_client_says_what_needs_approval(gw: McpGateway) -> None:
    async with Client(gw.mcp_url) as client:
        result = await client.call_tool("github__delete_file", {"path": "/srv/app/data.db"})
    text = _text(result)
    assert result.is_error
    assert 'will run tool "delete_file" of MCP server "github" with path="/srv/app/data.db"' in text
    assert "trust: {delete_file: allow}" in text


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_destructive_call_asks_with_the_exact_action(gw: McpGateway, mode: str) -> None:
    asked: list[str] = []

    async def approve(ctx: Any, params: Any) -> ElicitResult:
        asked.append(params.message)
        return ElicitResult(action="accept", content={"approve": True})

    async with Client(gw.mcp_url, mode=mode, elicitation_callback=approve) as client:
        result = await client.call_tool("github__delete_file", {"path": "/srv/app/data.db"})
    assert not result.is_error and _text(result) == "deleted /srv/app/data.db"
    assert len(asked) == 1
    assert 'will run tool "delete_file" of MCP server "github" with path="/srv/app/data.db"' in asked[0]
    assert "destructive" in asked[0]


async def test_a_replayed_approval_does_not_run_twice(gw: McpGateway) -> None:
    async def unused(ctx: Any, params: Any) -> ElicitResult:  # declares elicitation; rounds are manual
        raise AssertionError("a 2026-07-28 client is asked through InputRequiredResult")

    async with Client(gw.mcp_url, mode="auto", elicitation_callback=unused) as client:
        args = {"path": "/tmp/turnstile-replay-test"}
        asked = await client.session.call_tool("github__delete_file", args, allow_input_required=True)
        assert isinstance(asked, InputRequiredResult) and list(asked.input_requests or {}) == [
            "turnstile_confirm"
        ]
        approve: dict[str, Any] = {
            "turnstile_confirm": ElicitResult(action="accept", content={"approve": True})
        }
        runs = [
            await client.session.call_tool(
                "github__delete_file",
                args,
                input_responses=approve,
                request_state=asked.request_state,
                allow_input_required=True,
            )
            for _ in range(3)
        ]
    ran, *replays = runs
    assert isinstance(ran, CallToolResult) and _text(ran) == "deleted /tmp/turnstile-replay-test"
    for replay in replays:  # the same approval again: asked afresh, never run
        assert isinstance(replay, InputRequiredResult)
        assert list(replay.input_requests or {}) == ["turnstile_confirm"]
        assert replay.request_state != asked.request_state
    rows = [r for r in gw.registry.store.audit_rows(10) if r["tool"] == "delete_file"]
    assert [r["outcome"] for r in rows[:4]] == ["asked", "asked", "approved", "asked"]


async def test_declined_confirmation_does_not_run(gw: McpGateway) -> None:
    async def decline(ctx: Any, params: Any) -> ElicitResult:
        return ElicitResult(action="decline")

    async with Client(gw.mcp_url, elicitation_callback=decline) as client:
        result = await client.call_tool("github__delete_file", {"path": "/tmp/x"})
    assert result.is_error and "did not approve" in _text(result)


@pytest.mark.parametrize("answer", ["false", "no", "true", 1, None])
async def test_only_a_boolean_true_approves(gw: McpGateway, answer: Any) -> None:
    async def say(ctx: Any, params: Any) -> ElicitResult:
        return ElicitResult(action="accept", content={"approve": answer})

    async with Client(gw.mcp_url, elicitation_callback=say) as client:
        result = await client.call_tool("github__delete_file", {"path": "/tmp/x"})
    assert result.is_error and "did not approve" in _text(result)


async def test_write_inside_workspace_never_asks_outside_does(gw: McpGateway) -> None:
    asked: list[str] = []

    async def approve(ctx: Any, params: Any) -> ElicitResult:
        asked.append(params.message)
        return ElicitResult(action="accept", content={"approve": True})

    inside = str(Path(gw.workspace) / "notes" / "a.md")
    async with Client(gw.mcp_url, elicitation_callback=approve) as client:
        ok = await client.call_tool("github__write_note", {"path": inside, "text": "hello"})
        assert not ok.is_error and asked == []
        await client.call_tool("github__write_note", {"path": "/etc/passwd", "text": "x"})
    assert len(asked) == 1 and "/etc/passwd" in asked[0] and "outside the workspace" in asked[0]


async def test_every_trust_decision_is_audited(gw: McpGateway) -> None:
    async with Client(gw.mcp_url) as client:
        await client.call_tool("github__echo", {"text": "audit me"})
        await client.call_tool("github__untagged", {"x": "1"})
    rows = gw.registry.store.audit_rows(50)
    outcomes = {(r["tool"], r["outcome"]) for r in rows}
    assert ("echo", "allowed") in outcomes
    assert ("untagged", "needs_approval_no_elicitation") in outcomes


async def test_health_reports_every_upstream(gw: McpGateway) -> None:
    import httpx

    async with httpx.AsyncClient() as http:
        body = (await http.get(f"{gw.url}/health")).json()
    states = {s["id"]: s["state"] for s in body["mcp"]["servers"]}
    assert states["time"] == "ready" and states["jira"] == "ready"


async def test_mcp_call_with_arguments_outside_the_schema_never_reaches_the_server(gw: McpGateway) -> None:
    asked: list[str] = []

    async def approve(ctx: Any, params: Any) -> ElicitResult:
        asked.append(params.message)
        return ElicitResult(action="accept", content={"approve": True})

    async with Client(gw.mcp_url, elicitation_callback=approve) as client:
        bad = await client.call_tool("github__reset", {"mode": "hardest"})
        missing = await client.call_tool("github__reset", {"target": "HEAD~1"})
        wrong_type = await client.call_tool("github__echo", {"text": 3})
        received = await client.call_tool("github__received_calls", {})
    assert bad.is_error
    assert (
        _text(bad) == 'invalid arguments for tool "reset" of MCP server "github": '
        "arguments.mode: 'hardest' is not one of ['soft', 'hard']. The tool was not run; call it again "
        "with arguments that match its input schema."
    )
    assert missing.is_error and "arguments: 'mode' is a required property" in _text(missing)
    assert wrong_type.is_error and "arguments.text: 3 is not of type 'string'" in _text(wrong_type)
    assert json.loads(_text(received)) == []  # the fixture server never saw a call
    assert asked == []  # nobody is asked to approve a call that cannot run
    rows = [r for r in gw.registry.store.audit_rows(20) if r["tool"] == "reset"]
    assert [r["outcome"] for r in rows[:2]] == ["invalid_arguments"] * 2
    assert "hardest" in rows[1]["reason"]


async def test_both_paths_give_the_same_answer(gw: McpGateway) -> None:
    endpoint = gw.app.state.mcp.endpoint
    from_loop = gw.loop.call(endpoint.call_for_loop("github__reset", {"mode": "hardest"}))
    async with Client(gw.mcp_url, mode="legacy") as client:
        from_mcp = await client.call_tool("github__reset", {"mode": "hardest"})
        received = await client.call_tool("github__received_calls", {})
    assert from_loop.is_error and from_mcp.is_error and _text(from_loop) == _text(from_mcp)
    assert json.loads(_text(received)) == []
