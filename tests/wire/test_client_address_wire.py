"""The client address cannot be chosen by the client: served as `turnstile serve` serves
(``gateway.serving.uvicorn_options``), ``X-Forwarded-For`` is believed only from an address of
``server.trusted_proxies``; wrong admin keys are counted per (real) client address on every
admin surface, then refused 429 with ``retry-after``, and audited."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from standins.keyed import ADMIN, ADMIN_ENV, AUTH, demo_config
from standins.servers import GatewayServer, LoopThread

from gateway.access.guessing import FAILURES
from gateway.config import Settings, parse_config
from gateway.server import create_app
from gateway.serving import uvicorn_options


@contextmanager
def served(config: dict[str, Any]) -> Iterator[str]:
    """The gateway of ``config`` under uvicorn with `turnstile serve`'s options; its URL."""
    loop = LoopThread()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(ADMIN_ENV, ADMIN)
        parsed = parse_config(config)
        app = create_app(config=parsed, settings=Settings(log_level="warning"))
        server = GatewayServer(app, uvicorn_options(parsed.server))
        loop.call(server.start())
        try:
            yield server.url
        finally:
            loop.call(server.stop())
            loop.close()


def _wrong(url: str, path: str = "/admin/keys", forwarded: str | None = None) -> httpx.Response:
    headers = {"authorization": "Bearer not-the-admin-key"}
    if forwarded is not None:
        headers["x-forwarded-for"] = forwarded
    return httpx.get(f"{url}{path}", headers=headers, timeout=10)


def test_x_forwarded_for_from_an_untrusted_peer_cannot_dodge_the_wrong_admin_key_limit(
    tmp_path: Path,
) -> None:
    with served(demo_config(tmp_path / "gw.db")) as url:
        for n in range(FAILURES):  # each guess claims another address: all are 127.0.0.1's
            assert _wrong(url, forwarded=f"198.51.100.{n}").status_code == 401
        refused = _wrong(url, forwarded="198.51.100.200")
        assert refused.status_code == 429 and int(refused.headers["retry-after"]) > 0
        assert refused.json()["error"]["type"] == "rate_limit"
        right = httpx.get(f"{url}/admin/keys", headers={**AUTH, "x-forwarded-for": "203.0.113.9"}, timeout=10)
        assert right.status_code == 429  # even the right key, meanwhile: a guess cannot be confirmed
        mcp_admin = httpx.get(f"{url}/admin/mcp/servers", headers=AUTH, timeout=10)
        assert mcp_admin.status_code == 429  # the MCP registry's admin API shares the count
        metrics = httpx.get(f"{url}/metrics", headers=AUTH, timeout=10)
        assert metrics.status_code == 429 and "retry-after" in metrics.headers


def test_a_trusted_proxy_names_the_client_and_each_client_is_limited_on_its_own(tmp_path: Path) -> None:
    config = demo_config(tmp_path / "gw.db")
    config["server"]["trusted_proxies"] = ["127.0.0.1/32"]
    with served(config) as url:
        for _ in range(FAILURES):
            assert _wrong(url, "/metrics", forwarded="203.0.113.7").status_code == 401
        assert _wrong(url, forwarded="203.0.113.7").status_code == 429
        other = httpx.get(f"{url}/admin/keys", headers={**AUTH, "x-forwarded-for": "203.0.113.8"}, timeout=10)
        assert other.status_code == 200
        audit = httpx.get(
            f"{url}/admin/audit", headers={**AUTH, "x-forwarded-for": "203.0.113.8"}, timeout=10
        )
        events = audit.json()["data"]
        refused = [e for e in events if e["action"] == "admin_key.refused"]
        assert len(refused) == FAILURES and {e["actor"] for e in refused} == {"client:203.0.113.7"}
        assert [e["target"] for e in events if e["action"] == "admin_key.throttled"] == ["/admin/keys"]


def test_trusted_proxies_must_be_addresses_or_networks() -> None:
    with pytest.raises(Exception, match="trusted_proxies"):
        parse_config({**demo_config(Path("x.db")), "server": {"trusted_proxies": ["proxy.example"]}})
