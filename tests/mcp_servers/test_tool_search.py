"""Tool search over a 300-tool catalog (10 servers, :mod:`tool_catalog`): the meta-tools cost a
small, fixed number of tokens per turn instead of the whole catalog's, and a scripted agent
that only has the meta-tools still finds and calls the right tool for the 20 tasks."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import orjson
import pytest
from mcp import Client
from mcp.types import CallToolResult, TextContent
from tool_catalog import TASKS, catalog

from gateway.mcp_tools import attach_tools
from gateway.providers.catalog import count_tokens
from gateway.schema import Request, TextPart, ToolDefinition, UserMessage
from mcp_servers.clients import EVERYTHING, Visibility
from mcp_servers.config import McpConfig, McpServerSpec
from mcp_servers.endpoint import McpEndpoint
from mcp_servers.registry import McpRegistry
from mcp_servers.store import McpStore
from mcp_servers.tool_search import CALL, DESCRIBE, SEARCH, words

TOOLS = catalog()
CALLS: list[tuple[str, str, dict[str, Any]]] = []


class CatalogUpstream:
    """Announces its server's catalog tools; records each call and answers ``ok``."""

    def __init__(self, spec: McpServerSpec, *, on_tools: Any, **_: Any) -> None:
        self.spec, self.id, self.on_tools = spec, spec.id, on_tools
        self.state, self.last_error = "ready", None

    def start(self) -> None:
        self.on_tools(self.id, TOOLS.get(self.id, []))

    async def stop(self) -> None:
        self.state = "stopped"

    async def wait_ready(self, timeout_s: float) -> bool:
        return True

    def status(self) -> dict[str, Any]:
        return {"id": self.id, "state": self.state}

    async def call_tool(self, name: str, args: dict[str, Any], **_: Any) -> CallToolResult:
        CALLS.append((self.id, name, args))
        return CallToolResult(content=[TextContent(type="text", text=f"ok: {name}")])


def _config(**search: Any) -> McpConfig:
    servers = [
        {
            "id": sid,
            "transport": {"type": "stdio", "command": "x"},
            "trust": {t.name: "allow" for t in tools},  # the agent's calls run without asking
        }
        for sid, tools in TOOLS.items()
    ]
    return McpConfig.model_validate({"servers": servers, "tool_search": {"enabled": True, **search}})


@pytest.fixture
async def endpoint(tmp_path: Path) -> AsyncIterator[McpEndpoint]:
    reg = McpRegistry(
        _config(),
        store=McpStore(tmp_path / "db.sqlite"),
        read_env=lambda _: None,
        upstream_factory=CatalogUpstream,
    )
    await reg.start()
    CALLS.clear()
    try:
        yield McpEndpoint(reg)
    finally:
        await reg.close()


def _gateway(endpoint: McpEndpoint) -> Any:
    return SimpleNamespace(
        config=SimpleNamespace(models=[], mcp=endpoint.registry.config),
        mcp=SimpleNamespace(registry=endpoint.registry, endpoint=endpoint),
    )


def _request(tools: list[ToolDefinition], servers: list[str] | None = None) -> Request:
    return Request(
        model="gpt-4o",
        messages=[UserMessage(content=[TextPart(text="Scale the web deployment to 5 replicas.")])],
        tools=tools,
        mcp_servers=servers or [],
    )


def _definition_tokens(tools: list[ToolDefinition]) -> int:
    """Tokens the tool definitions add to one turn (the gateway's own counter)."""
    return count_tokens(_request(tools), "gpt-4o") - count_tokens(_request([]), "gpt-4o")


async def test_the_catalog_has_300_tools_from_10_servers(endpoint: McpEndpoint) -> None:
    tools = endpoint.registry.tools()
    assert len(tools) == 300 and len({t.server for t in tools}) == 10


async def test_tool_search_turns_a_300_tool_catalog_into_three_meta_tools_costing_under_2_percent(
    endpoint: McpEndpoint,
) -> None:
    servers = list(TOOLS)
    gw = _gateway(endpoint)
    endpoint.registry.config.tool_search.enabled = False
    full, _, _ = attach_tools(gw, _request([], servers))
    endpoint.registry.config.tool_search.enabled = True
    meta, names_meta, scope = attach_tools(gw, _request([], servers))
    assert len(full.tools) == 300 and names_meta == {SEARCH, DESCRIBE, CALL}
    with_catalog = _definition_tokens(full.tools)
    with_search = _definition_tokens(meta.tools)
    print(f"tool-definition tokens per turn: full catalog {with_catalog}, tool search {with_search}")
    assert 15_000 < with_catalog < 40_000  # about 65 tokens per tool definition
    assert with_search < 600
    assert with_search * 50 < with_catalog
    assert scope.allows("github__create_issue")


async def test_the_tool_loop_with_tool_search_finds_and_calls_only_its_turns_servers(
    endpoint: McpEndpoint,
) -> None:
    _, _, scope = attach_tools(_gateway(endpoint), _request([], ["slack"]))
    found = await endpoint.call_for_loop(SEARCH, {"query": "create issue github"}, visibility=scope)
    assert all(h["server"] == "slack" for h in found.structured_content["tools"])
    outside = await endpoint.call_for_loop(
        CALL, {"name": "github__create_issue", "arguments": {}}, visibility=scope
    )
    assert outside.is_error and "unknown tool 'github__create_issue'" in outside.content[0].text
    assert CALLS == []


async def _agent(call: Any, task: str, values: dict[str, Any]) -> str | None:
    """A scripted agent with only the meta-tools: search with the task's words, take the first
    hit, read its schema, fill the arguments it has a value for (required ones first), call."""
    found = await call(SEARCH, {"query": task, "limit": 3})
    hits = orjson.loads(found.content[0].text)["tools"]
    if not hits:
        return None
    name = hits[0]["name"]
    described = orjson.loads((await call(DESCRIBE, {"name": name})).content[0].text)
    props = described["input_schema"].get("properties", {})
    required = described["input_schema"].get("required", [])
    args = {k: v for k, v in values.items() if k in props}
    for key in required:
        args.setdefault(key, values.get(key, "x"))
    result = await call(CALL, {"name": name, "arguments": args})
    return name if not result.is_error else None


async def test_a_scripted_agent_finds_and_calls_the_right_tool_for_19_of_20_tasks_in_the_tool_loop(
    endpoint: McpEndpoint,
) -> None:
    async def call(name: str, args: dict[str, Any]) -> Any:
        return await endpoint.call_for_loop(name, args, visibility=EVERYTHING)

    got = [await _agent(call, task, values) for task, _, values in TASKS]
    hits = [g == want for g, (_, want, _) in zip(got, TASKS, strict=True)]
    missed = [(t, g) for g, (t, want, _) in zip(got, TASKS, strict=True) if g != want]
    print(f"tool-search hit rate: {sum(hits)}/{len(hits)}; missed: {missed}")
    assert sum(hits) >= 19
    assert [f"{s}__{n}" for s, n, _ in CALLS] == [g for g in got if g is not None]  # each ran upstream once


async def test_mcp_lists_the_meta_tools_and_a_client_finds_and_calls_a_tool_through_them(
    endpoint: McpEndpoint,
) -> None:
    async with Client(endpoint.server) as client:
        listed = await client.list_tools()
        assert [t.name for t in listed.tools] == [SEARCH, DESCRIBE, CALL]
        assert "github (30)" in (listed.tools[0].description or "")

        async def call(name: str, args: dict[str, Any]) -> Any:
            return await client.call_tool(name, args)

        task, want, values = TASKS[1]
        assert await _agent(call, task, values) == want
        unknown = await client.call_tool(CALL, {"name": "nope__nothing", "arguments": {}})
        assert unknown.is_error
    assert CALLS == [("slack", "create_message", {"channel": "#deploys", "text": "v2.1 is out"})]


async def test_callers_not_named_by_tool_search_get_the_full_catalog(endpoint: McpEndpoint) -> None:
    endpoint.registry.config.tool_search.callers = ["team-*"]
    assert not endpoint.search.applies(EVERYTHING)
    assert endpoint.search.applies(Visibility("team-data"))
    endpoint.registry.config.tool_search.callers = ["*"]
    endpoint.registry.config.tool_search.min_tools = 301
    assert not endpoint.search.applies(EVERYTHING)
    async with Client(endpoint.server) as client:
        listed = await client.list_tools()
        assert len(listed.tools) == 100 and listed.next_cursor  # paged catalog as before


async def test_search_answers_hidden_tools_as_absent_and_an_empty_query_lists_a_server(
    endpoint: McpEndpoint,
) -> None:
    only_slack = Visibility("c", ("slack__*",))
    hits = endpoint.search.search("issue repository", only_slack)
    assert all(h["server"] == "slack" for h in hits)
    assert endpoint.search.describe("github__create_issue", only_slack) is None
    listed = endpoint.search.search("", EVERYTHING, server="stripe", limit=100)
    assert len(listed) == 8 and all(h["server"] == "stripe" for h in listed)  # capped at max_results
    bad = endpoint.search.answer(SEARCH, {"query": 3}, EVERYTHING)
    assert bad.is_error


def test_search_words_split_names_and_drop_stop_words() -> None:
    assert words("listPullRequests in the github_repo") == ["list", "pull", "request", "github", "repo"]
