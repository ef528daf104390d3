"""Relative path arguments are judged where the server resolves them (issue 11, item 3).

Two instances of the fixture server run behind one gateway whose own working directory is
outside its workspace: ``nocwd`` (no configured ``cwd``: it runs in the gateway's directory)
and ``incwd`` (``cwd: ${workspace}``). The same relative ``in2.txt`` write asks first on the
one, and runs unasked and lands in the workspace on the other.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.types import ElicitResult, TextContent
from mcp_harness import McpGateway, fixture_spec, start_gateway

from gateway.config import parse_config


@pytest.fixture(scope="module")
def paths_gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[McpGateway, Path]]:
    """The gateway (started from ``elsewhere/``, outside the workspace) and that directory."""
    tmp = tmp_path_factory.mktemp("relpaths")
    elsewhere = tmp / "elsewhere"
    elsewhere.mkdir()
    servers = [
        fixture_spec("nocwd"),
        {**fixture_spec("incwd"), "transport": {**fixture_spec("incwd")["transport"], "cwd": "${workspace}"}},
    ]
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(elsewhere)
        for gw in start_gateway(tmp, servers):
            yield gw, elsewhere


def _text(result: Any) -> str:
    return "".join(b.text for b in result.content if isinstance(b, TextContent))


async def test_a_relative_path_write_asks_unless_the_server_runs_in_the_workspace(
    paths_gw: tuple[McpGateway, Path],
) -> None:
    gw, elsewhere = paths_gw
    asked: list[str] = []

    async def decline(ctx: Any, params: Any) -> ElicitResult:
        asked.append(params.message)
        return ElicitResult(action="decline")

    async with Client(gw.mcp_url, elicitation_callback=decline) as client:
        refused = await client.call_tool("nocwd__save_file", {"path": "in2.txt", "text": "x"})
        assert refused.is_error and "did not approve" in _text(refused)
        assert len(asked) == 1 and "in2.txt" in asked[0] and "where the server runs" in asked[0]
        assert not (elsewhere / "in2.txt").exists()
        ran = await client.call_tool("incwd__save_file", {"path": "in2.txt", "text": "inside"})
    assert not ran.is_error and len(asked) == 1
    assert (gw.workspace / "in2.txt").read_text() == "inside"
    assert _text(ran) == f"saved {os.path.realpath(gw.workspace / 'in2.txt')}"
    assert not (elsewhere / "in2.txt").exists()


def test_path_base_is_the_servers_real_working_directory(tmp_path: Path) -> None:
    from mcp_servers.registry import path_base

    ws = tmp_path / "ws"
    cfg = parse_config(
        {
            "deployments": [{"name": "demo", "api": "demo", "model": "m"}],
            "mcp": {
                "workspace_roots": [str(ws)],
                "servers": [
                    {"id": "a", "transport": {"type": "stdio", "command": "x"}},
                    {"id": "b", "transport": {"type": "stdio", "command": "x", "cwd": "${workspace}/sub"}},
                    {"id": "c", "transport": {"type": "stdio", "command": "x", "cwd": "rel"}},
                    {
                        "id": "d",
                        "transport": {
                            "type": "stdio",
                            "command": "x",
                            "cwd": "/",
                            "relative_paths_base": "${workspace}",
                        },
                    },
                    {"id": "e", "transport": {"type": "streamable_http", "url": "http://127.0.0.1:1/mcp"}},
                ],
            },
        }
    )
    roots = cfg.mcp.resolved_workspace_roots()
    bases = {s.id: path_base(s, roots) for s in cfg.mcp.servers}
    assert bases == {
        "a": None,
        "b": os.path.realpath(ws / "sub"),
        "c": os.path.realpath("rel"),
        "d": os.path.realpath(ws),
        "e": None,
    }


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("a\x00b", "arguments.path: holds a NUL byte"),
        ("a" * 5000, "arguments.path: is 5,000 bytes long"),
    ],
)
async def test_a_path_that_cannot_be_a_path_is_an_error_result_naming_it_on_mcp_and_in_the_loop(
    paths_gw: tuple[McpGateway, Path], path: str, why: str
) -> None:
    gw, _ = paths_gw
    async with Client(gw.mcp_url) as client:
        on_mcp = await client.call_tool("incwd__save_file", {"path": path, "text": "x"})
    endpoint = gw.app.state.mcp.endpoint
    in_loop = gw.loop.call(endpoint.call_for_loop("incwd__save_file", {"path": path, "text": "x"}))
    for result in (on_mcp, in_loop):
        assert (
            result.is_error and why in _text(result) and '"save_file" of MCP server "incwd"' in _text(result)
        )
        assert "The tool was not run" in _text(result)


async def test_a_check_that_fails_unexpectedly_is_an_error_result_not_a_protocol_error(
    paths_gw: tuple[McpGateway, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    from mcp_servers import endpoint as endpoint_module

    def broken(*_: Any, **__: Any) -> Any:
        raise ValueError("a check broke")

    monkeypatch.setattr(endpoint_module, "decide", broken)
    gw, _ = paths_gw
    async with Client(gw.mcp_url) as client:
        on_mcp = await client.call_tool("incwd__save_file", {"path": "ok.txt", "text": "x"})
    in_loop = gw.loop.call(gw.app.state.mcp.endpoint.call_for_loop("incwd__echo", {"text": "x"}))
    for result in (on_mcp, in_loop):
        assert (
            result.is_error
            and "could not check the arguments" in _text(result)
            and "ValueError" in _text(result)
        )
    assert not (gw.workspace / "ok.txt").exists()


async def test_arguments_orjson_cannot_write_reach_the_trust_check_without_a_protocol_error(
    paths_gw: tuple[McpGateway, Path],
) -> None:
    gw, _ = paths_gw
    async with Client(gw.mcp_url) as client:
        result = await client.call_tool("incwd__save_file", {"path": "big.txt", "text": "x", "n": 10**30})
    assert not result.is_error and (gw.workspace / "big.txt").read_text() == "x"
