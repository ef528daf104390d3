"""A real gateway with virtual keys for the wire tests of access control: the priced demo
deployment (deterministic token counts), an admin key, and helpers that make keys and teams
through the admin API and read the spend ledger and the limit counters."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from gateway.config import Settings, parse_config
from gateway.ledger import spend_of
from gateway.server import create_app
from standins.servers import GatewayServer, LoopThread

ADMIN_ENV = "TURNSTILE_TEST_KEYED_ADMIN_KEY"
ADMIN = "admin-secret-for-the-keyed-tests"
AUTH = {"Authorization": f"Bearer {ADMIN}"}
PRICE = {"input": 1_000_000.0, "output": 1_000_000.0}  # USD per million tokens: 1 USD a token


def demo_config(db_path: Path, **sections: Any) -> dict[str, Any]:
    """A configuration with the demo deployment priced at 1 USD a token as ``default`` and
    ``other``, the admin key in :data:`ADMIN_ENV`; ``sections`` replace or add top-level
    sections (``access``, ``mcp``, ``models``...)."""
    config: dict[str, Any] = {
        "server": {"db_path": str(db_path)},
        "access": {"auth": "required", "admin_key_env": ADMIN_ENV},
        "deployments": [{"name": "demo", "api": "demo", "model": "turnstile-demo", "price": PRICE}],
        "models": [{"name": "default", "deployments": ["demo"]}, {"name": "other", "deployments": ["demo"]}],
        "mcp": {"servers": []},
    }
    config.update(sections)
    return config


@contextmanager
def keyed_gateway(config: dict[str, Any], *, mcp_ready_s: float = 0) -> Iterator[dict[str, Any]]:
    """The gateway of ``config`` served on loopback: ``{"url", "app", "loop", "db_path"}``;
    with ``mcp_ready_s`` it waits (bounded) for its MCP servers."""
    db_path = Path(config["server"]["db_path"])
    loop = LoopThread()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(ADMIN_ENV, ADMIN)
        app = create_app(config=parse_config(config), settings=Settings(db_path=db_path, log_level="warning"))
        server = GatewayServer(app)
        loop.call(server.start())
        try:
            if mcp_ready_s:
                ready = loop.call(app.state.mcp.registry.wait_ready(mcp_ready_s), timeout=mcp_ready_s + 10)
                assert all(ready.values()), ready
            yield {"url": server.url, "app": app, "loop": loop, "db_path": db_path}
        finally:
            loop.call(server.stop())
            loop.close()


def make_key(url: str, **fields: Any) -> tuple[str, str]:
    """``(key id, secret)`` of a new key made through the admin API with ``fields``."""
    got = httpx.post(f"{url}/admin/keys", json={"name": "k", **fields}, headers=AUTH, timeout=10)
    assert got.status_code == 201, got.text
    return got.json()["key"]["id"], got.json()["secret"]


def make_team(url: str, name: str, **fields: Any) -> str:
    """The id of a new team made through the admin API."""
    got = httpx.post(f"{url}/admin/teams", json={"name": name, **fields}, headers=AUTH, timeout=10)
    assert got.status_code == 201, got.text
    body = got.json()
    return str(body["id"] if "id" in body else body["team"]["id"])


def ledger_usd(gw: dict[str, Any], scope: str) -> float:
    """USD the spend ledger (the transcript's turn rows) holds for ``scope`` (``key:<id>``...)."""
    return spend_of(str(gw["db_path"]), scope, 0.0, None)


def counter_usd(gw: dict[str, Any], scope: str, period: str = "total") -> tuple[float, float]:
    """``(spent, reserved)`` USD of ``scope``'s ``period`` budget counter in the gateway."""
    limits = gw["app"].state.gateway.limits

    async def read() -> tuple[float, float]:
        got = limits.spent_usd(scope, period)
        return (await got) if hasattr(got, "__await__") else got  # type: ignore[no-any-return]

    return gw["loop"].call(read())
