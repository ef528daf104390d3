"""Resources and prompts of every server through /mcp: namespaced URIs and prompt names mapped
back, composite pagination cursors, and list-changed propagation to connected clients."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.types import (
    PromptListChangedNotification,
    ResourceListChangedNotification,
    TextContent,
    ToolListChangedNotification,
)
from mcp_harness import ADMIN_KEY, McpGateway, fixture_spec

from mcp_servers.aggregate import namespace_uri, split_uri

AUTH = {"Authorization": f"Bearer {ADMIN_KEY}"}


@pytest.fixture
def small_pages(gw: McpGateway) -> Iterator[None]:
    """Two items a page for the duration of one test."""
    agg = gw.app.state.mcp.endpoint.aggregate
    before, agg.page_size = agg.page_size, 2
    try:
        yield
    finally:
        agg.page_size = before


async def _all_pages(list_page: Any, attr: str) -> list[Any]:
    items, cursor, pages = [], None, 0
    while True:
        page = await list_page(cursor=cursor)
        items += getattr(page, attr)
        pages += 1
        cursor = page.next_cursor
        if not cursor or pages > 50:
            return items


def test_uri_namespacing_round_trips() -> None:
    exposed = namespace_uri("fs", "file:///srv/a b/c.txt")
    assert exposed == "turnstile://fs/file:///srv/a b/c.txt"
    assert split_uri(exposed) == ("fs", "file:///srv/a b/c.txt")
    assert split_uri("file:///x") is None and split_uri("turnstile://fs") is None


async def test_resources_of_every_server_are_namespaced_and_read_back(gw: McpGateway) -> None:
    async with Client(gw.mcp_url) as client:
        uris = {r.uri for r in await _all_pages(client.list_resources, "resources")}
        assert {"turnstile://github/note://github/readme", "turnstile://jira/note://jira/readme"} <= uris
        result = await client.read_resource("turnstile://jira/note://jira/readme")
    assert result.contents[0].uri == "turnstile://jira/note://jira/readme"
    assert result.contents[0].text == "readme of jira"
    assert result.meta["io.turnstile/origin"] == {"server": "jira", "untrusted": True}
    assert result.meta["io.modelcontextprotocol/serverInfo"]["name"] == "turnstile"


async def test_templates_are_namespaced_and_expanded_uris_map_back(gw: McpGateway) -> None:
    async with Client(gw.mcp_url) as client:
        templates = await _all_pages(client.list_resource_templates, "resource_templates")
        assert "turnstile://github/note://github/items/{item}" in {t.uri_template for t in templates}
        result = await client.read_resource("turnstile://github/note://github/items/42")
        assert result.contents[0].text == "github item 42"
        with pytest.raises(MCPError, match="unknown resource"):
            await client.read_resource("note://github/readme")


async def test_prompts_are_namespaced_and_routed_to_their_server(gw: McpGateway) -> None:
    async with Client(gw.mcp_url) as client:
        names = {p.name for p in await _all_pages(client.list_prompts, "prompts")}
        assert {"github__summarize", "jira__summarize"} <= names
        got = await client.get_prompt("jira__summarize", {"topic": "sprint"})
        with pytest.raises(MCPError, match="unknown prompt"):
            await client.get_prompt("summarize", {"topic": "x"})
    content = got.messages[0].content
    assert isinstance(content, TextContent) and content.text == "Summarise sprint for jira."
    assert got.meta["io.turnstile/origin"]["server"] == "jira"


@pytest.mark.usefixtures("small_pages")
async def test_composite_cursors_page_through_every_server_without_loss_or_repeat(gw: McpGateway) -> None:
    async with Client(gw.mcp_url) as client:
        first = await client.list_resources()
        assert len(first.resources) >= 2 and first.next_cursor
        resources = await _all_pages(client.list_resources, "resources")
        tools_first = await client.list_tools()
        assert len(tools_first.tools) == 2 and tools_first.next_cursor
        tools = await _all_pages(client.list_tools, "tools")
        prompts = await _all_pages(client.list_prompts, "prompts")
        with pytest.raises(MCPError, match="invalid cursor"):
            await client.list_resources(cursor="not-a-cursor")
    agg = gw.app.state.mcp.endpoint.aggregate
    agg.page_size = 1000
    async with Client(gw.mcp_url) as client:
        assert [r.uri for r in resources] == [r.uri for r in (await client.list_resources()).resources]
        assert [t.name for t in tools] == [t.name for t in (await client.list_tools()).tools]
        assert [p.name for p in prompts] == [p.name for p in (await client.list_prompts()).prompts]
    assert len({r.uri for r in resources}) == len(resources)


async def _add(gw: McpGateway, spec: dict[str, Any]) -> None:
    async with httpx.AsyncClient(base_url=gw.url, timeout=60) as http:
        r = await http.post("/admin/mcp/servers?wait_s=30", json=spec, headers=AUTH)
    assert r.status_code in (200, 201), r.text


async def _delete(gw: McpGateway, server_id: str) -> None:
    async with httpx.AsyncClient(base_url=gw.url, timeout=60) as http:
        await http.delete(f"/admin/mcp/servers/{server_id}", headers=AUTH)


async def test_upstream_list_changes_reach_a_handshake_era_client(gw: McpGateway) -> None:
    await _add(gw, fixture_spec("growing", "--resources", "3"))
    seen: dict[str, asyncio.Event] = {k: asyncio.Event() for k in ("tools", "resources", "prompts")}

    async def on_message(message: Any) -> None:
        kinds = {
            ToolListChangedNotification: "tools",
            ResourceListChangedNotification: "resources",
            PromptListChangedNotification: "prompts",
        }
        for cls, kind in kinds.items():
            if isinstance(message, cls):
                seen[kind].set()

    try:
        async with Client(gw.mcp_url, mode="legacy", message_handler=on_message) as client:
            await client.list_tools()
            for e in seen.values():
                e.clear()
            assert (await client.call_tool("growing__grow", {})).content[0].text == "grew 1"
            async with asyncio.timeout(20):
                await asyncio.gather(*(e.wait() for e in seen.values()))
            async with asyncio.timeout(20):
                while "growing__grown_1" not in {t.name for t in (await client.list_tools()).tools}:
                    seen["tools"].clear()
                    await seen["tools"].wait()
            uris = {r.uri for r in await _all_pages(client.list_resources, "resources")}
            assert "turnstile://growing/note://growing/grown-1" in uris
            assert "growing__grown_1" in {p.name for p in (await client.list_prompts()).prompts}
    finally:
        await _delete(gw, "growing")


async def test_upstream_list_changes_reach_a_2026_client_through_subscriptions_listen(gw: McpGateway) -> None:
    await _add(gw, fixture_spec("growing2"))
    try:
        async with Client(gw.mcp_url) as client:
            async with client.listen(resources_list_changed=True, prompts_list_changed=True) as sub:
                await client.call_tool("growing2__grow", {})
                kinds: set[str] = set()
                async with asyncio.timeout(20):
                    async for event in sub:
                        kinds.add(type(event).__name__)
                        if {"ResourcesListChanged", "PromptsListChanged"} <= kinds:
                            break
            uris = {r.uri for r in await _all_pages(client.list_resources, "resources")}
            assert "turnstile://growing2/note://growing2/grown-1" in uris
    finally:
        await _delete(gw, "growing2")
