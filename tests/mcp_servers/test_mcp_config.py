"""The ``mcp`` section of the configuration."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from gateway.config import parse_config
from gateway.errors import ConfigError
from mcp_servers.config import McpConfig, McpServerSpec


def test_defaults() -> None:
    spec = McpServerSpec.model_validate(
        {"id": "time", "transport": {"type": "stdio", "command": "mcp-server-time"}}
    )
    assert spec.call_timeout_s == 60 and spec.output_cap_bytes == 128 * 1024 and spec.enabled


def test_gateway_config_takes_an_mcp_section() -> None:
    cfg = parse_config(
        {
            "mcp": {
                "servers": [
                    {
                        "id": "a",
                        "transport": {
                            "type": "streamable_http",
                            "url": "https://x.example/mcp",
                            "headers_env": {"Authorization": "A_TOKEN"},
                        },
                    },
                    {
                        "id": "b",
                        "transport": {"type": "stdio", "command": "b", "env_passthrough": ["HOME"]},
                        "deny_tools": ["rm"],
                        "trust": {"push": "confirm"},
                    },
                ]
            }
        }
    )
    assert [s.id for s in cfg.mcp.servers] == ["a", "b"]
    assert not cfg.mcp.servers[1].tool_allowed("rm") and cfg.mcp.servers[1].tool_allowed("ls")


@pytest.mark.parametrize(
    "bad, where",
    [
        ({"id": "a b", "transport": {"type": "stdio", "command": "x"}}, "mcp.servers.0.id"),
        ({"id": "a__b", "transport": {"type": "stdio", "command": "x"}}, "mcp.servers.0.id"),
        (
            {"id": "a", "transport": {"type": "stdio", "command": "x"}, "trust": {"t": "maybe"}},
            "mcp.servers.0.trust.t",
        ),
        ({"id": "a", "transport": {"type": "streamable_http", "url": "ftp://x"}}, "url"),
        (
            {"id": "a", "transport": {"type": "stdio", "command": "x", "env_passthrough": ["A-B"]}},
            "env_passthrough",
        ),
        (
            {"id": "a", "transport": {"type": "stdio", "command": "x"}, "output_cap_bytes": 10 * 1024 * 1024},
            "output_cap_bytes",
        ),
    ],
)
def test_invalid_server_specs_name_the_key(bad: dict, where: str) -> None:
    with pytest.raises(ConfigError, match=where.replace(".", r"\.")):
        parse_config({"mcp": {"servers": [bad]}})


def test_the_gateways_own_tool_namespace_is_no_server_id() -> None:
    spec = {"id": "Turnstile", "transport": {"type": "stdio", "command": "x"}}
    with pytest.raises(ConfigError, match="reserved"):
        parse_config({"mcp": {"servers": [spec]}})


def test_duplicate_server_ids_are_rejected() -> None:
    spec = {"id": "a", "transport": {"type": "stdio", "command": "x"}}
    with pytest.raises(ConfigError, match="repeated: a"):
        parse_config({"mcp": {"servers": [spec, spec]}})


def test_workspace_placeholder_expands_to_the_first_root_and_commands_resolve_beside_python(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys
    from contextlib import AsyncExitStack

    from mcp_servers.targets import CommandNotFound, build_target, resolve_command

    monkeypatch.setenv("PATH", str(tmp_path))
    assert resolve_command("mcp-server-time") == str(Path(sys.executable).parent / "mcp-server-time")
    assert resolve_command("no-such-turnstile-command") is None
    spec = McpServerSpec.model_validate(
        {"id": "fs", "transport": {"type": "stdio", "command": "mcp-server-time", "args": ["${workspace}/x"]}}
    )
    target = build_target(spec, lambda _: None, AsyncExitStack(), ["/srv/ws", "/other"])
    assert target.args == ["/srv/ws/x"]
    missing = spec.model_copy(update={"transport": spec.transport.model_copy(update={"command": "nope-xyz"})})
    with pytest.raises(CommandNotFound, match="'nope-xyz' of MCP server 'fs' was not found"):
        build_target(missing, lambda _: None, AsyncExitStack(), [])


def test_relative_workspace_roots_resolve_from_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    cfg = McpConfig(workspace_roots=["./workspace"])
    assert cfg.resolved_workspace_roots() == [str(tmp_path.resolve() / "workspace")]


def test_sse_bounds_have_defaults_and_refuse_unknown_or_nonpositive_values() -> None:
    sse = McpConfig().sse
    assert (sse.max_sessions, sse.idle_timeout_s) == (100, 1800.0)
    for bad in ({"max_sessions": 0}, {"idle_timeout_s": 0}, {"idle_after_s": 5}):
        with pytest.raises(ConfigError, match="sse"):
            parse_config({"mcp": {"sse": bad}})


def test_upstream_oauth_names_each_missing_credential() -> None:
    from mcp_servers.config import UpstreamOAuth

    with pytest.raises(ValidationError, match="client_credentials needs client_id"):
        UpstreamOAuth(grant="client_credentials", client_id="c")
    with pytest.raises(ValidationError, match="private_key_jwt is for client_credentials"):
        UpstreamOAuth(grant="client_credentials", client_id="c", token_endpoint_auth_method="private_key_jwt")
    with pytest.raises(ValidationError, match="authorization_code needs redirect_uri"):
        UpstreamOAuth(grant="authorization_code")
    signed = UpstreamOAuth(
        grant="client_credentials",
        client_id="c",
        token_endpoint_auth_method="private_key_jwt",
        client_key_env="K",
    )
    assert signed.client_key_alg == "RS256"
