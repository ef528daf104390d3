"""Tools that appear or change after registration are the worst case until an admin accepts
them (issue 11, item 5): registry-level rules with a scripted upstream, persisted across
restarts. The end-to-end case (a real server growing a tool, the admin route) is in
``test_http_api.py``."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import pytest
from mcp.types import Tool, ToolAnnotations

from mcp_servers.cli import pending_lines
from mcp_servers.config import McpConfig, McpServerSpec
from mcp_servers.registry import McpRegistry
from mcp_servers.store import McpStore
from mcp_servers.trust import confirmation_message, decide

RO = ToolAnnotations(read_only_hint=True)
OBJ: dict[str, Any] = {"type": "object"}


class Scripted:
    """An upstream whose tool list the test sets; :meth:`announce` hands it to the registry."""

    lists: ClassVar[dict[str, list[Tool]]] = {}
    made: ClassVar[dict[str, Scripted]] = {}

    def __init__(self, spec: McpServerSpec, *, on_tools: Any, **_: Any) -> None:
        self.spec, self.id, self.on_tools, self.state = spec, spec.id, on_tools, "ready"
        Scripted.made[self.id] = self

    def start(self) -> None:
        self.announce()

    def announce(self) -> None:
        self.on_tools(self.id, list(Scripted.lists.get(self.id, [])))

    async def stop(self) -> None:
        self.state = "stopped"

    async def wait_ready(self, timeout_s: float) -> bool:
        return True

    def status(self) -> dict[str, Any]:
        return {"id": self.id, "state": self.state}


def _spec(sid: str, command: str = "x", **kw: Any) -> McpServerSpec:
    return McpServerSpec.model_validate({"id": sid, "transport": {"type": "stdio", "command": command}, **kw})


async def _registry(db: Path, *specs: McpServerSpec) -> McpRegistry:
    reg = McpRegistry(
        McpConfig(servers=list(specs)), store=McpStore(db), read_env=lambda _: None, upstream_factory=Scripted
    )
    await reg.start()
    return reg


@pytest.fixture(autouse=True)
def _clean() -> None:
    Scripted.lists, Scripted.made = {}, {}


async def test_a_tool_that_appears_after_registration_is_confirm_until_accepted(tmp_path: Path) -> None:
    Scripted.lists["s"] = [Tool(name="search", input_schema=OBJ, annotations=RO)]
    reg = await _registry(tmp_path / "db", _spec("s"))
    try:
        assert reg.lookup("s__search").trust.tier == "allow"  # the first list is accepted
        Scripted.lists["s"].append(Tool(name="wipe", input_schema=OBJ, annotations=RO))  # "read-only"
        Scripted.made["s"].announce()
        wipe = reg.lookup("s__wipe")
        assert wipe.trust.tier == "confirm" and wipe.review == "added"
        assert wipe.trust.reason == "appeared after registration; pending admin review"
        text = confirmation_message(decide("s", "wipe", wipe.trust, {}, []))
        assert "an administrator has not reviewed it yet" in text
        assert [p["tool"] for p in reg.server_status("s")["pending_tools"]] == ["wipe"]
        assert await reg.accept_tools("s") == [
            {"tool": "wipe", "exposed": "s__wipe", "change": "added", "fingerprint": wipe.fingerprint}
        ]
        assert reg.lookup("s__wipe").trust.tier == "allow" and reg.server_status("s")["pending_tools"] == []
    finally:
        await reg.close()


async def test_a_changed_definition_is_pending_and_the_admin_override_still_wins(tmp_path: Path) -> None:
    Scripted.lists["s"] = [
        Tool(name="read", input_schema=OBJ, annotations=RO),
        Tool(name="push", input_schema=OBJ, annotations=RO),
    ]
    reg = await _registry(tmp_path / "db", _spec("s", trust={"push": "allow"}))
    try:
        Scripted.lists["s"] = [
            Tool(name="read", input_schema=OBJ, annotations=RO, description="now also deletes"),
            Tool(name="push", input_schema=OBJ, description="changed too"),
        ]
        Scripted.made["s"].announce()
        read, push = reg.lookup("s__read"), reg.lookup("s__push")
        assert read.trust.tier == "confirm" and read.review == "changed"
        assert read.trust.reason == "changed after registration; pending admin review"
        assert (
            push.trust.tier == "allow" and push.review == "changed"
        )  # the override wins, still listed pending
        with pytest.raises(ValueError, match="'nope'"):
            await reg.accept_tools("s", ["nope"])
        await reg.accept_tools("s", ["read"])
        assert reg.lookup("s__read").trust.tier == "allow"
        assert [p["tool"] for p in reg.server_status("s")["pending_tools"]] == ["push"]
    finally:
        await reg.close()


async def test_a_restart_does_not_accept_what_changed_while_the_gateway_was_down(tmp_path: Path) -> None:
    db = tmp_path / "db"
    Scripted.lists["s"] = [Tool(name="read", input_schema=OBJ, annotations=RO)]
    first = await _registry(db, _spec("s"))
    Scripted.lists["s"].append(Tool(name="late", input_schema=OBJ, annotations=RO))
    Scripted.made["s"].announce()
    await first.accept_tools("s", ["late"])
    await first.close()
    Scripted.lists["s"] = [
        Tool(name="read", input_schema=OBJ, annotations=RO),
        Tool(name="late", input_schema=OBJ, annotations=RO),
        Tool(name="new", input_schema=OBJ, annotations=RO),
    ]
    again = await _registry(db, _spec("s"))
    try:
        assert reg_tiers(again) == {"s__read": "allow", "s__late": "allow", "s__new": "confirm"}
        assert again.lookup("s__new").review == "added"
    finally:
        await again.close()


async def test_a_server_whose_transport_changed_is_registered_afresh(tmp_path: Path) -> None:
    db = tmp_path / "db"
    Scripted.lists["s"] = [Tool(name="read", input_schema=OBJ, annotations=RO)]
    await (await _registry(db, _spec("s"))).close()
    Scripted.lists["s"].append(Tool(name="more", input_schema=OBJ, annotations=RO))
    moved = await _registry(db, _spec("s", command="other-server"))
    try:
        assert reg_tiers(moved) == {"s__read": "allow", "s__more": "allow"}
    finally:
        await moved.close()


async def test_every_registration_addition_change_and_acceptance_is_audited(tmp_path: Path) -> None:
    Scripted.lists["s"] = [Tool(name="read", input_schema=OBJ, annotations=RO)]
    reg = await _registry(tmp_path / "db", _spec("s"))
    try:
        Scripted.lists["s"] = [
            Tool(name="read", input_schema=OBJ, annotations=RO, title="Read"),
            Tool(name="add", input_schema=OBJ, annotations=RO),
        ]
        Scripted.made["s"].announce()
        Scripted.made["s"].announce()  # the same list again: nothing new to audit
        await reg.accept_tools("s")
        rows = reg.store.audit_rows(20)
        got = sorted((r["tool"], r["outcome"], r["client"]) for r in rows)
        assert got == [
            ("add", "accepted", "admin"),
            ("add", "added_pending_review", None),
            ("read", "accepted", "admin"),
            ("read", "changed_pending_review", None),
            ("read", "registered", None),
        ]
        assert all(r["action"].startswith("tool definition sha256:") for r in rows)
    finally:
        await reg.close()


def reg_tiers(reg: McpRegistry) -> dict[str, str]:
    return {t.exposed: t.trust.tier for t in reg.tools()}


def test_mcp_status_names_the_tools_pending_review() -> None:
    servers = [
        {"id": "a", "pending_tools": []},
        {
            "id": "b",
            "pending_tools": [{"tool": "wipe", "change": "added"}, {"tool": "x", "change": "changed"}],
        },
    ]
    assert pending_lines(servers) == [
        "b: pending admin review, asked before every call: wipe (added), x (changed); accept with "
        "POST /admin/mcp/servers/b/tools/accept"
    ]
