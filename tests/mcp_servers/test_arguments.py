"""Arguments that do not match a tool's declared input schema are never executed (issue 11,
item 7): a compiled validator per registered tool, each mismatch named by field; an invalid
schema is reported at registration, never a crash. The calls through ``/mcp`` and the tool
loop are in ``test_endpoint.py`` and ``tests/wire/test_tool_loop_access.py``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp.types import Tool, ToolAnnotations

from mcp_servers.arguments import InvalidSchema, argument_errors, compile_schema
from mcp_servers.config import McpConfig, McpServerSpec
from mcp_servers.registry import McpRegistry
from mcp_servers.store import McpStore

RESET_SCHEMA = {
    "type": "object",
    "properties": {
        "mode": {"type": "string", "enum": ["soft", "hard"]},
        "target": {"type": "string"},
        "paths": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["mode"],
    "additionalProperties": False,
}


def test_each_mismatch_is_named_by_field_and_why() -> None:
    check = compile_schema(RESET_SCHEMA)
    assert argument_errors(check, {"mode": "soft", "target": "HEAD"}) == []
    assert argument_errors(check, {"mode": "hardest"}) == [
        "arguments.mode: 'hardest' is not one of ['soft', 'hard']"
    ]
    assert argument_errors(check, {"target": 3, "force": True, "paths": ["a", 1]}) == [
        "arguments.paths[1]: 1 is not of type 'string'",
        "arguments.target: 3 is not of type 'string'",
        "arguments: 'mode' is a required property",
        "arguments: Additional properties are not allowed ('force' was unexpected)",
    ]


def test_a_huge_wrong_value_is_not_echoed_whole() -> None:
    (error,) = argument_errors(compile_schema(RESET_SCHEMA), {"mode": "x" * 100_000})
    assert len(error) < 500 and "more characters" in error


def test_an_invalid_schema_is_reported_with_where_and_why() -> None:
    with pytest.raises(InvalidSchema, match=r"inputSchema\.required: True is not of type 'array'"):
        compile_schema({"type": "object", "required": True})


def test_a_ref_that_does_not_resolve_is_an_error_not_a_crash() -> None:
    check = compile_schema({"type": "object", "properties": {"a": {"$ref": "#/$defs/missing"}}})
    (error,) = argument_errors(check, {"a": 1})
    assert "does not resolve" in error


class _Upstream:
    """Announces one list: a good tool and one whose input schema is invalid."""

    def __init__(self, spec: McpServerSpec, *, on_tools: Any, **_: Any) -> None:
        self.spec, self.id, self.on_tools, self.state = spec, spec.id, on_tools, "ready"

    def start(self) -> None:
        ro = ToolAnnotations(read_only_hint=True)
        self.on_tools(
            self.id,
            [
                Tool(name="good", input_schema=RESET_SCHEMA, annotations=ro),
                Tool(name="broken", input_schema={"type": "object", "properties": {"a": {"type": 7}}}),
            ],
        )

    async def stop(self) -> None:
        self.state = "stopped"

    def status(self) -> dict[str, Any]:
        return {"id": self.id, "state": self.state}


async def test_a_tool_with_an_invalid_schema_is_reported_at_registration_and_not_exposed(
    tmp_path: Path,
) -> None:
    spec = McpServerSpec.model_validate({"id": "s", "transport": {"type": "stdio", "command": "x"}})
    reg = McpRegistry(
        McpConfig(servers=[spec]),
        store=McpStore(tmp_path / "db.sqlite"),
        read_env=lambda _: None,
        upstream_factory=_Upstream,
    )
    await reg.start()
    try:
        assert [t.exposed for t in reg.tools()] == ["s__good"] and reg.lookup("s__good").validator is not None
        (problem,) = reg.server_status("s")["problems"]
        assert "'broken'" in problem and "inputSchema.properties.a.type" in problem
    finally:
        await reg.close()
