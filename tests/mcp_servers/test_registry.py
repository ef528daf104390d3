"""The registry with stand-in upstreams: registration, filtering, trust, availability,
collisions without namespacing, persistence and hot reload."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp.types import Tool, ToolAnnotations

from mcp_servers.config import McpConfig, McpServerSpec
from mcp_servers.registry import McpRegistry, RegistryConflict
from mcp_servers.store import McpStore

RO = ToolAnnotations(read_only_hint=True)
TOOLS = {
    "a": [
        Tool(name="search", input_schema={"type": "object"}, annotations=RO),
        Tool(name="rm", input_schema={"type": "object"}),
        Tool(name="push", input_schema={"type": "object"}),
    ],
    "b": [Tool(name="search", input_schema={"type": "object", "properties": {"jql": {"type": "string"}}})],
}


class FakeUpstream:
    """Announces TOOLS[id] on start."""

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


def _spec(sid: str, **kw: Any) -> McpServerSpec:
    return McpServerSpec.model_validate({"id": sid, "transport": {"type": "stdio", "command": "x"}, **kw})


async def _registry(tmp_path: Path, *specs: McpServerSpec, namespaced: bool = True) -> McpRegistry:
    cfg = McpConfig.model_validate(
        {"servers": list(specs), "namespaced": namespaced, "admin_servers": {"commands": ["x"]}}
    )
    reg = McpRegistry(
        cfg, store=McpStore(tmp_path / "db.sqlite"), read_env=lambda _: None, upstream_factory=FakeUpstream
    )
    await reg.start()
    return reg


async def test_tools_are_registered_by_server_and_filtered(tmp_path: Path) -> None:
    reg = await _registry(tmp_path, _spec("a", deny_tools=["rm"], trust={"push": "deny"}), _spec("b"))
    names = [t.exposed for t in reg.tools()]
    assert names == ["a__search", "b__search"]
    assert reg.lookup("b__search").name == "search" and reg.lookup("b__search").server == "b"
    assert reg.input_schema("b__search")["properties"] == {"jql": {"type": "string"}}
    assert reg.lookup("a__search").trust.tier == "allow"


async def test_allow_list_limits_the_tools(tmp_path: Path) -> None:
    reg = await _registry(tmp_path, _spec("a", allow_tools=["push"]))
    assert [t.name for t in reg.tools()] == ["push"]
    assert reg.lookup("a__push").trust.tier == "confirm"


async def test_a_down_upstream_marks_only_its_tools_unavailable(tmp_path: Path) -> None:
    reg = await _registry(tmp_path, _spec("a"), _spec("b"))
    reg._on_tools("a", None)
    assert [t.exposed for t in reg.tools()] == ["b__search"]
    assert reg.lookup("a__search") is not None and not reg.lookup("a__search").available
    assert "a__search" in reg.status()["unavailable_tools"]
    reg._on_tools("a", TOOLS["a"])
    assert reg.lookup("a__search").available


async def test_collision_without_namespacing_is_a_registration_error(tmp_path: Path) -> None:
    reg = await _registry(tmp_path, _spec("a"), _spec("b"), namespaced=False)
    assert reg.lookup("search").server == "a"
    problems = reg.server_status("b")["problems"]
    assert problems and "collision" in problems[0] and "'a'" in problems[0]


async def test_admin_servers_persist_and_reload(tmp_path: Path) -> None:
    reg = await _registry(tmp_path, _spec("a"))
    changes: list[int] = []
    reg.on_change(lambda: changes.append(1))
    assert await reg.put_server(_spec("b")) is False
    assert await reg.put_server(_spec("b", deny_tools=["search"])) is True
    assert reg.lookup("b__search") is None and changes
    with pytest.raises(RegistryConflict):
        await reg.put_server(_spec("a"))
    await reg.close()
    again = await _registry(tmp_path, _spec("a"))
    assert [s["source"] for s in again.servers()] == ["config", "admin"]
    assert await again.delete_server("b") and not await again.delete_server("b")
    await again.close()
    third = await _registry(tmp_path)
    assert third.servers() == []
