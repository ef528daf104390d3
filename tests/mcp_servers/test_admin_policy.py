"""What servers registered through the admin API may use (issue 11, item 6): environment
variables, URL hosts and stdio commands only from explicit lists in ``mcp.admin_servers``,
none by default. The refusal of ``POST /admin/mcp/servers`` itself is in ``test_http_api.py``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from mcp_servers.admin_policy import host_allowed, violations
from mcp_servers.config import AdminServerPolicy, McpConfig, McpServerSpec
from mcp_servers.registry import McpRegistry
from mcp_servers.store import McpStore


def _stdio(**transport: Any) -> McpServerSpec:
    return McpServerSpec.model_validate(
        {"id": "s", "transport": {"type": "stdio", "command": "x", **transport}}
    )


def _http(url: str, **transport: Any) -> McpServerSpec:
    return McpServerSpec.model_validate(
        {"id": "h", "transport": {"type": "streamable_http", "url": url, **transport}}
    )


def test_by_default_an_admin_server_may_use_nothing() -> None:
    none = AdminServerPolicy()
    found = violations(
        _stdio(env_passthrough=["AWS_SECRET_ACCESS_KEY"], env={"LD_PRELOAD": "/tmp/x.so"}), none
    )
    assert [(v.field, v.value) for v in found] == [
        ("transport.command", "x"),
        ("transport.env_passthrough[0]", "AWS_SECRET_ACCESS_KEY"),
        ("transport.env.LD_PRELOAD", "LD_PRELOAD"),
    ]
    assert "(allowed: none)" in found[0].message
    found = violations(
        _http("http://169.254.169.254/latest/mcp", headers_env={"Authorization": "OPENAI_API_KEY"}), none
    )
    assert [(v.field, v.value) for v in found] == [
        ("transport.url", "http://169.254.169.254/latest/mcp"),
        ("transport.headers_env.Authorization", "OPENAI_API_KEY"),
    ]


def test_what_the_lists_name_is_allowed() -> None:
    policy = AdminServerPolicy(
        env=["DOCS_TOKEN", "TZ"], url_hosts=["docs.example.com"], commands=[sys.executable]
    )
    assert (
        violations(_stdio(command=sys.executable, env_passthrough=["DOCS_TOKEN"], env={"TZ": "UTC"}), policy)
        == []
    )
    assert violations(_http("https://docs.example.com/mcp", headers_env={"X-T": "DOCS_TOKEN"}), policy) == []
    # the same executable under another spelling counts; another one does not
    python = Path(sys.executable)
    assert violations(_stdio(command=str(python.parent / "." / python.name)), policy) == []
    assert [v.field for v in violations(_stdio(command="/bin/sh"), policy)] == ["transport.command"]


def test_url_hosts_match_host_port_and_globs_exactly() -> None:
    allowed = ["docs.example.com", "api.example.com:8443", "*.corp.example", "[::1]:9000"]
    assert host_allowed("https://DOCS.example.com/mcp", allowed)
    assert host_allowed("http://docs.example.com:8080/mcp", allowed)
    assert host_allowed("https://api.example.com:8443/mcp", allowed)
    assert not host_allowed("https://api.example.com/mcp", allowed)  # port 443, not 8443
    assert host_allowed("https://kb.corp.example/mcp", allowed)
    assert not host_allowed("https://corp.example.evil.com/mcp", allowed)
    assert not host_allowed("https://docs.example.com.evil.com/mcp", allowed)
    assert not host_allowed(
        "https://docs.example.com@169.254.169.254/mcp", allowed
    )  # userinfo is not the host
    assert host_allowed("http://[::1]:9000/mcp", allowed)
    assert not host_allowed("http://127.0.0.1:9000/mcp", allowed)
    assert not host_allowed("http://docs.example.com:notaport/mcp", allowed)


class _Upstream:
    started: list[str] = []  # noqa: RUF012 (a test's record)

    def __init__(self, spec: McpServerSpec, *, on_tools: Any, **_: Any) -> None:
        self.spec, self.id = spec, spec.id

    def start(self) -> None:
        _Upstream.started.append(self.id)

    async def stop(self) -> None:
        return None

    def status(self) -> dict[str, Any]:
        return {"id": self.id, "state": "ready"}


async def test_a_persisted_admin_server_that_now_violates_the_lists_is_not_started(tmp_path: Path) -> None:
    store = McpStore(tmp_path / "db")
    await store.save_server(_stdio(command="/bin/sh", env_passthrough=["HOME"]))
    store.close()
    _Upstream.started = []
    reg = McpRegistry(
        McpConfig.model_validate({"admin_servers": {"env": ["HOME"]}}),
        store=McpStore(tmp_path / "db"),
        read_env=lambda _: None,
        upstream_factory=_Upstream,
    )
    await reg.start()
    try:
        assert _Upstream.started == []
        status = reg.server_status("s")
        assert status["state"] == "blocked"
        assert status["problems"] == [
            "not started: transport.command: command '/bin/sh' is not on mcp.admin_servers.commands "
            "(allowed: none)"
        ]
        assert [s["source"] for s in reg.servers()] == ["admin"]
    finally:
        await reg.close()
