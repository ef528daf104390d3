"""Anonymous clients only on a loopback address (gateway/exposure.py): what counts as
loopback, the app factory's refusal of a public host it can see, and the refusal of requests
that arrived on a non-loopback local address of a gateway served by another command."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
import structlog
from starlette.testclient import TestClient
from structlog.testing import capture_logs

from gateway import exposure
from gateway import logs as logs_module
from gateway.config import GatewayConfig, Settings, parse_config
from gateway.errors import AnonymousExposure
from gateway.exposure import check_listen_address, client_auth_configured, is_loopback
from gateway.server import create_app

DEMO = {"name": "demo", "api": "demo", "model": "turnstile-demo", "price": {"input": 0, "output": 0}}


def _config(tmp_path: Path, auth: str | None = "optional", **server: Any) -> GatewayConfig:
    """A demo config; ``auth``: ``access.auth`` (optional: clients need no key, as before
    virtual keys; None: the default for the host)."""
    return parse_config(
        {
            "server": {"db_path": str(tmp_path / "t.db"), **server},
            "access": {"auth": auth} if auth is not None else {},
            "deployments": [DEMO],
            "models": [{"name": "default", "deployments": ["demo"]}],
        }
    )


@pytest.mark.parametrize(
    "host", ["127.0.0.1", "127.10.0.3", "::1", "[::1]", "localhost", "LOCALHOST", "::ffff:127.0.0.1"]
)
def test_loopback_addresses_and_localhost_are_loopback(host: str) -> None:
    assert is_loopback(host)


@pytest.mark.parametrize(
    "host", ["0.0.0.0", "::", "[::]", "192.168.1.20", "10.0.0.1", "fe80::1", "gateway.example.com", ""]
)
def test_every_interface_and_every_other_address_or_name_is_not_loopback(host: str) -> None:
    assert not is_loopback(host)


def test_mcp_client_keys_do_not_count_as_client_authentication(tmp_path: Path) -> None:
    cfg = parse_config(
        {"access": {"auth": "optional"}, "mcp": {"clients": [{"name": "ci", "key_env": "CI_MCP_KEY"}]}}
    )
    assert not client_auth_configured(cfg, "0.0.0.0")
    with pytest.raises(AnonymousExposure):
        check_listen_address("0.0.0.0", cfg, Settings(allow_anonymous=False))


def test_the_app_factory_refuses_a_public_host_it_can_see(tmp_path: Path) -> None:
    with pytest.raises(AnonymousExposure, match=r"refusing to serve on 0\.0\.0\.0") as err:
        create_app(config=_config(tmp_path, host="0.0.0.0"), settings=Settings(allow_anonymous=False))
    assert "--allow-anonymous" in err.value.message and "\n" not in err.value.message
    with pytest.raises(AnonymousExposure, match=r"refusing to serve on ::"):  # the host `serve` passes
        create_app(config=_config(tmp_path), settings=Settings(host="::", allow_anonymous=False))


@pytest.mark.parametrize("how", ["config", "environment"])
def test_the_app_factory_serves_a_public_host_when_allowed_and_warns(
    tmp_path: Path, how: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(logs_module, "configure", lambda *a, **kw: None)  # keep capture_logs in place
    monkeypatch.setattr(exposure, "log", structlog.get_logger("turnstile.exposure"))  # not cached yet
    if how == "config":
        cfg, settings = _config(tmp_path, host="0.0.0.0", allow_anonymous=True), Settings()
    else:
        cfg, settings = _config(tmp_path, host="0.0.0.0"), Settings(allow_anonymous=True)
    with capture_logs() as logs:
        create_app(config=cfg, settings=settings)
    warned = [e for e in logs if e["event"] == "serving_anonymous_clients"]
    assert len(warned) == 1 and warned[0]["log_level"] == "warning" and warned[0]["host"] == "0.0.0.0"


async def test_a_request_that_arrived_on_a_non_loopback_address_is_refused_in_its_dialect(
    tmp_path: Path,
) -> None:
    """``uvicorn gateway.server:create_app --factory --host 0.0.0.0`` passes no host to the
    factory: the address a request arrived on (ASGI ``scope["server"]``) still decides."""
    app = create_app(config=_config(tmp_path), settings=Settings(allow_anonymous=False))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://10.1.2.3:4000") as client:
        oai = await client.post("/v1/chat/completions", json={"model": "default", "messages": []})
        ant = await client.post("/v1/messages", json={"model": "default", "max_tokens": 8, "messages": []})
        health = await client.get("/health")
    assert oai.status_code == ant.status_code == health.status_code == 403
    assert oai.json()["error"]["code"] == "permission_denied"
    assert ant.json()["type"] == "error" and ant.json()["error"]["type"] == "permission_error"
    assert "10.1.2.3" in oai.json()["error"]["message"]
    assert "--allow-anonymous" in ant.json()["error"]["message"]


@pytest.mark.parametrize("allowed", [False, True])
def test_a_request_on_a_loopback_address_or_to_an_allowed_gateway_is_served(
    tmp_path: Path, allowed: bool
) -> None:
    app = create_app(config=_config(tmp_path, allow_anonymous=allowed), settings=Settings())
    base = "http://10.1.2.3:4000" if allowed else "http://127.0.0.1:4000"
    with TestClient(app, base_url=base) as client:
        assert client.get("/v1/models").status_code == 200


def test_required_virtual_keys_count_as_client_authentication_and_are_the_default_off_loopback(
    tmp_path: Path,
) -> None:
    """Off loopback, ``access.auth`` defaults to ``required``: serving needs no
    ``--allow-anonymous``, and a turn without a key is a 401 in its dialect."""
    default = _config(tmp_path, auth=None)
    assert client_auth_configured(default, "0.0.0.0") and not client_auth_configured(default, "127.0.0.1")
    assert check_listen_address("0.0.0.0", default, Settings(allow_anonymous=False)) is False
    for auth in ("optional", "off"):
        with pytest.raises(AnonymousExposure, match=r"access\.auth"):
            check_listen_address("0.0.0.0", _config(tmp_path, auth=auth), Settings(allow_anonymous=False))
    app = create_app(
        config=_config(tmp_path, auth=None, host="0.0.0.0"), settings=Settings(allow_anonymous=False)
    )
    with TestClient(app, base_url="http://10.1.2.3:4000") as client:
        refused = client.post("/v1/chat/completions", json={"model": "default", "messages": []})
        listed = client.get("/v1/models")
    assert refused.status_code == listed.status_code == 401
    assert refused.json()["error"]["type"] == "invalid_request_error"
    assert "tsk-" in refused.json()["error"]["message"]
