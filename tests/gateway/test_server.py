"""The app's own handlers (gateway/server.py), called as ASGI endpoints without a server."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from starlette.requests import Request

from gateway import server


async def test_count_tokens_with_the_client_gone_mid_body_answers_499_not_an_asgi_error() -> None:
    gateway = SimpleNamespace(config=SimpleNamespace(server=SimpleNamespace(max_body_bytes=1000)))
    recorded: list[tuple[str, str, int]] = []

    async def record_refused(rid: str, dialect: str, err: Any) -> None:
        recorded.append((rid, dialect, err.status))

    pipeline = SimpleNamespace(record_refused=record_refused)
    scope: dict[str, Any] = {
        "type": "http",
        "method": "POST",
        "path": "/v1/messages/count_tokens",
        "headers": [(b"content-length", b"500")],
        "state": {"request_id": "r1"},
        "app": SimpleNamespace(state=SimpleNamespace(gateway=gateway, pipeline=pipeline)),
    }
    messages = [
        {"type": "http.request", "body": b'{"model":', "more_body": True},
        {"type": "http.disconnect"},
    ]

    async def receive() -> dict[str, Any]:
        return messages.pop(0)

    response = await server.count_tokens(Request(scope, receive))
    assert response.status_code == 499
    assert recorded == [("r1", "anthropic_messages", 499)], "still one transcript row"


def test_a_model_whose_deployments_lack_keys_is_named_disabled_in_each_sdk_dialect(
    tmp_path: Any, monkeypatch: Any
) -> None:
    """The official SDKs, pointed at the app, read a 404 that says which variable to set."""
    import anthropic
    import openai
    import pytest
    from starlette.testclient import TestClient

    from gateway.config import Settings, parse_config

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    cfg = parse_config(
        {
            "server": {"db_path": str(tmp_path / "t.db")},
            "deployments": [
                {
                    "name": "demo",
                    "api": "demo",
                    "model": "turnstile-demo",
                    "price": {"input": 0, "output": 0},
                },
                {
                    "name": "openai-gpt-4.1",
                    "api": "openai_chat",
                    "model": "gpt-4.1",
                    "api_key_env": "OPENAI_API_KEY",
                },
            ],
            "models": [{"name": "gpt-4.1", "deployments": ["openai-gpt-4.1"]}],
        }
    )
    app = server.create_app(config=cfg, settings=Settings())
    with TestClient(app, base_url="http://127.0.0.1:4000") as http:
        oai = openai.OpenAI(
            base_url="http://127.0.0.1:4000/v1", api_key="unused", http_client=http, max_retries=0
        )
        with pytest.raises(openai.NotFoundError) as o_err:
            oai.chat.completions.create(model="gpt-4.1", messages=[{"role": "user", "content": "hi"}])
        ant = anthropic.Anthropic(
            base_url="http://127.0.0.1:4000", api_key="unused", http_client=http, max_retries=0
        )
        with pytest.raises(anthropic.NotFoundError) as a_err:
            ant.messages.create(model="gpt-4.1", max_tokens=16, messages=[{"role": "user", "content": "hi"}])
        health = http.get("/health").json()
    for err in (o_err.value, a_err.value):
        assert "model 'gpt-4.1' is disabled: set OPENAI_API_KEY" in err.message, err.message
    assert o_err.value.body["code"] == "model_not_found" and o_err.value.body["param"] == "model"
    assert health["disabled_aliases"] == {"gpt-4.1": "set OPENAI_API_KEY"}


def test_the_deprecated_mcp_admin_key_setting_is_named_in_a_warning_at_start(
    capfd: Any, tmp_path: Any
) -> None:
    from gateway.config import Settings, parse_config

    config = parse_config({"server": {"db_path": str(tmp_path / "g.db")}, "mcp": {"admin_key_env": "OLD"}})
    server.create_app(config=config, settings=Settings(log_level="warning"))
    err = capfd.readouterr().err
    assert "deprecated_setting" in err and "mcp.admin_key_env is deprecated" in err
