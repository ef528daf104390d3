"""One real gateway with real MCP servers behind it, shared by the MCP tests of this folder.

Upstreams: PyPI ``mcp-server-time`` (stdio), the fixture server as ``github`` (stdio, ``exec``
pre-approved), as ``jira`` (streamable HTTP, ``jql`` search) and as
``enterprise-knowledge-base-prod`` (stdio, handed case C24; 1 s call timeout for the hang test).
Servers added through the admin API may run the fixture server (this Python) and a command that
does not exist (the supervision tests); nothing else.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest
from mcp_harness import TIME_SERVER, HttpFixture, McpGateway, fixture_spec, start_gateway


@pytest.fixture(scope="session")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[McpGateway]:
    """The running gateway (see the module docstring)."""
    jira = HttpFixture("jira", "--search-param", "jql")
    try:
        servers = [
            {
                "id": "time",
                "transport": {"type": "stdio", "command": TIME_SERVER, "args": ["--local-timezone", "UTC"]},
            },
            fixture_spec("enterprise-knowledge-base-prod", call_timeout_s=1.0),
            fixture_spec("github", trust={"exec": "allow"}),
            {"id": "jira", "transport": {"type": "streamable_http", "url": jira.url}},
        ]
        admin_servers = {"commands": [sys.executable, "/nonexistent/mcp-server"]}
        yield from start_gateway(tmp_path_factory.mktemp("mcp-gateway"), servers, admin_servers=admin_servers)
    finally:
        jira.stop()


@pytest.fixture
def info_logs() -> Iterator[None]:
    """structlog filtering at level info for the test (a gateway started earlier in the session
    may have configured it at warning, which drops info events before ``capture_logs`` sees them)."""
    import logging

    import structlog

    before = structlog.get_config()["wrapper_class"]
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.INFO))
    yield
    structlog.configure(wrapper_class=before)
