"""The ``mcp`` section of the configuration."""

from __future__ import annotations

import pytest

from gateway.config import parse_config
from gateway.errors import ConfigError
from mcp_servers.config import McpServerSpec


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


def test_duplicate_server_ids_are_rejected() -> None:
    spec = {"id": "a", "transport": {"type": "stdio", "command": "x"}}
    with pytest.raises(ConfigError, match="repeated: a"):
        parse_config({"mcp": {"servers": [spec, spec]}})
