"""Virtual keys through the real gateway with the official SDKs (``access.auth: required``).

A key made with the admin API is accepted where each SDK sends it (OpenAI ``Authorization:
Bearer``, Anthropic ``x-api-key``, google-genai ``x-goog-api-key``, Gemini's ``?key=``) and
its id lands on the transcript row; a missing, unknown or revoked key is a 401 and a model
outside the key's (or its team's) allow list a 403 naming the model, each in the client's own
dialect, the type its SDK raises; a key revoked through another connection to the store (as
another instance would) is refused once the lookup cache's TTL has passed; a key's MCP allow
list decides the tools ``/v1/mcp/tools`` lists; the admin API needs the admin key and shows a
secret only once.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anthropic
import httpx
import openai
import pytest
from google import genai
from google.genai import errors as genai_errors
from standins.servers import GatewayServer, LoopThread
from standins.topology import time_server_spec
from standins.wirekit import transcript_row

from gateway.access.sqlite import SqliteAccessStore
from gateway.config import Settings, parse_config
from gateway.server import create_app

ADMIN_ENV = "TURNSTILE_TEST_ADMIN_KEY"
ADMIN = "admin-secret-for-the-wire-tests"


class Clock:
    """A monotonic clock the test moves (the gateway's key cache reads it)."""

    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


@pytest.fixture(scope="module")
def keys_gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A gateway on loopback with keys required, the demo deployment as ``default``,
    ``other`` and ``with-time`` (the time MCP server's tools run by the tool loop), and an
    admin key."""
    db_path = tmp_path_factory.mktemp("keys") / "gateway.db"
    loop = LoopThread()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(ADMIN_ENV, ADMIN)
        config = parse_config(
            {
                "server": {"db_path": str(db_path)},
                "access": {"auth": "required", "admin_key_env": ADMIN_ENV},
                "deployments": [
                    {
                        "name": "demo",
                        "api": "demo",
                        "model": "turnstile-demo",
                        "price": {"input": 0, "output": 0},
                    }
                ],
                "models": [
                    {"name": "default", "deployments": ["demo"]},
                    {"name": "other", "deployments": ["demo"]},
                    {"name": "with-time", "deployments": ["demo"], "mcp_servers": ["time"]},
                ],
                "mcp": {
                    "health_interval_s": 600,
                    "servers": [time_server_spec()],
                },
            }
        )
        app = create_app(config=config, settings=Settings(db_path=db_path, log_level="warning"))
        gateway = GatewayServer(app)
        loop.call(gateway.start())
        try:
            ready = loop.call(app.state.mcp.registry.wait_ready(30), timeout=40)
            assert all(ready.values()), ready
            yield {"url": gateway.url, "app": app, "loop": loop, "db_path": db_path}
        finally:
            loop.call(gateway.stop())
            loop.close()


def _admin(gw: dict[str, Any]) -> httpx.Client:
    return httpx.Client(base_url=gw["url"], headers={"authorization": f"Bearer {ADMIN}"}, timeout=10)


def _new_key(gw: dict[str, Any], **fields: Any) -> tuple[str, dict[str, Any]]:
    with _admin(gw) as admin:
        r = admin.post("/admin/keys", json={"name": "wire", **fields})
    assert r.status_code == 201, r.text
    return r.json()["secret"], r.json()["key"]


def _oai(gw: dict[str, Any], key: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{gw['url']}/v1", api_key=key, max_retries=0, timeout=15)


def _ant(gw: dict[str, Any], key: str) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=gw["url"], api_key=key, max_retries=0, timeout=15)


def _gem(gw: dict[str, Any], key: str) -> genai.Client:
    options = genai.types.HttpOptions(base_url=gw["url"], api_version="v1beta", timeout=15_000)
    return genai.Client(api_key=key, http_options=options)


HELLO = [{"role": "user", "content": "hello"}]


def test_each_sdk_is_served_with_a_key_in_its_own_header_and_the_row_names_the_key(
    keys_gw: dict[str, Any],
) -> None:
    with _admin(keys_gw) as admin:
        team = admin.post("/admin/teams", json={"name": "wire-team"}).json()
    secret, key = _new_key(keys_gw, team_id=team["id"])
    oa = _oai(keys_gw, secret).chat.completions.with_raw_response.create(model="default", messages=HELLO)
    an = _ant(keys_gw, secret).messages.with_raw_response.create(
        model="default", max_tokens=32, messages=HELLO
    )
    gem = _gem(keys_gw, secret)  # held: the SDK closes its HTTP client when the object goes
    ge = gem.models.generate_content(model="default", contents="hello")
    assert oa.parse().choices[0].message.content and an.parse().content and ge.text
    with _oai(keys_gw, secret).chat.completions.stream(model="default", messages=HELLO) as stream:
        assert stream.get_final_completion().choices[0].message.content
    for raw in (oa, an):
        row = transcript_row(keys_gw["db_path"], raw.headers["x-turnstile-request-id"])
        assert (row["key_id"], row["team_id"]) == (key["id"], team["id"])
    r = httpx.post(
        f"{keys_gw['url']}/v1beta/models/default:generateContent",
        params={"key": secret},
        json={"contents": [{"role": "user", "parts": [{"text": "hi"}]}]},
    )
    assert r.status_code == 200, r.text
    assert _oai(keys_gw, secret).models.list().data


def test_a_missing_or_unknown_key_is_a_401_in_each_dialect(keys_gw: dict[str, Any]) -> None:
    for key in ("sk-not-a-turnstile-key", "tsk-unknown-key-of-nobody"):
        with pytest.raises(openai.AuthenticationError) as oa:
            _oai(keys_gw, key).chat.completions.create(model="default", messages=HELLO)
        assert oa.value.status_code == 401 and oa.value.code == "invalid_api_key"
        with pytest.raises(anthropic.AuthenticationError) as an:
            _ant(keys_gw, key).messages.create(model="default", max_tokens=32, messages=HELLO)
        assert an.value.body["error"]["type"] == "authentication_error"  # type: ignore[index]
        assert "tsk-" in an.value.message  # it says what to send
        gem = _gem(keys_gw, key)
        with pytest.raises(genai_errors.ClientError) as ge:
            gem.models.generate_content(model="default", contents="hello")
        assert ge.value.code == 401 and ge.value.status == "UNAUTHENTICATED"
        with pytest.raises(openai.AuthenticationError):
            _oai(keys_gw, key).models.list()


def test_a_model_outside_the_allow_list_is_a_403_naming_it_in_each_dialect(keys_gw: dict[str, Any]) -> None:
    secret, key = _new_key(keys_gw, models=["default"])
    with pytest.raises(openai.PermissionDeniedError, match="'other'") as oa:
        _oai(keys_gw, secret).chat.completions.create(model="other", messages=HELLO)
    assert oa.value.code == "permission_denied"
    with pytest.raises(anthropic.PermissionDeniedError, match="'other'"):
        _ant(keys_gw, secret).messages.create(model="other", max_tokens=32, messages=HELLO)
    gem = _gem(keys_gw, secret)
    with pytest.raises(genai_errors.ClientError, match="'other'") as ge:
        gem.models.generate_content(model="other", contents="hello")
    assert ge.value.code == 403 and ge.value.status == "PERMISSION_DENIED"
    assert _oai(keys_gw, secret).chat.completions.create(model="default", messages=HELLO).choices
    with _admin(keys_gw) as admin:
        denials = [e for e in admin.get("/admin/audit").json()["data"] if e["action"] == "access.denied"]
    assert {(e["actor"], e["target"], e["reason"]) for e in denials} >= {
        (key["id"], "other", "model not allowed")
    }


def test_a_key_revoked_by_the_admin_api_is_refused_at_once(keys_gw: dict[str, Any]) -> None:
    secret, key = _new_key(keys_gw)
    client = _oai(keys_gw, secret)
    assert client.chat.completions.create(model="default", messages=HELLO).choices
    with _admin(keys_gw) as admin:
        assert admin.delete(f"/admin/keys/{key['id']}").json()["revoked_at"] is not None
    with pytest.raises(openai.AuthenticationError, match="revoked"):
        client.chat.completions.create(model="default", messages=HELLO)


def test_a_key_revoked_on_another_instance_is_refused_once_the_cache_ttl_has_passed(
    keys_gw: dict[str, Any],
) -> None:
    identity = keys_gw["app"].state.gateway.identity
    clock, saved = Clock(identity.clock()), identity.clock
    identity.clock = clock
    try:
        secret, key = _new_key(keys_gw)
        client = _oai(keys_gw, secret)
        assert client.chat.completions.create(model="default", messages=HELLO).choices  # cached now

        async def revoke_elsewhere() -> None:
            other = SqliteAccessStore(keys_gw["db_path"])
            await other.open()
            await other.revoke_key(key["id"], actor="other-instance")
            await other.close()

        keys_gw["loop"].call(revoke_elsewhere())
        clock.t += 0.5
        assert client.chat.completions.create(model="default", messages=HELLO).choices  # within the TTL
        clock.t += 0.5  # access.cache_ttl_s (1 s) has passed
        with pytest.raises(openai.AuthenticationError, match="revoked"):
            client.chat.completions.create(model="default", messages=HELLO)
    finally:
        identity.clock = saved


def test_a_keys_mcp_allow_list_decides_the_tools_it_is_shown(keys_gw: dict[str, Any]) -> None:
    narrow, _ = _new_key(keys_gw, mcp=["time.get_current_time"])
    wide, _ = _new_key(keys_gw)
    base = keys_gw["url"]
    assert httpx.get(f"{base}/v1/mcp/tools").status_code == 401
    assert (
        httpx.post(f"{base}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).status_code == 401
    )
    shown = httpx.get(f"{base}/v1/mcp/tools", headers={"authorization": f"Bearer {narrow}"}).json()
    assert [t["function"]["name"] for t in shown["tools"]] == ["time__get_current_time"]
    every = httpx.get(f"{base}/v1/mcp/tools", headers={"x-api-key": wide}).json()
    assert {t["function"]["name"] for t in every["tools"]} == {"time__get_current_time", "time__convert_time"}


def test_the_admin_api_needs_the_admin_key_and_shows_a_secret_only_once(keys_gw: dict[str, Any]) -> None:
    base = keys_gw["url"]
    for headers in ({}, {"authorization": "Bearer wrong"}, {"authorization": "Bearer tsk-not-admin"}):
        r = httpx.get(f"{base}/admin/keys", headers=headers)
        assert r.status_code == 401 and r.json()["error"]["type"] == "authentication"
    with _admin(keys_gw) as admin:
        made = admin.post("/admin/keys", json={"name": "once", "budgets": [{"period": "day", "usd": 2}]})
        assert made.status_code == 201
        secret, key = made.json()["secret"], made.json()["key"]
        listed = admin.get("/admin/keys").text
        shown = admin.get(f"/admin/keys/{key['id']}").json()
        assert secret not in listed and "hash" not in shown and shown["prefix"] == secret[:12]
        assert shown["budgets"] == [{"period": "day", "usd": 2.0, "hard": True}]
        patched = admin.patch(f"/admin/keys/{key['id']}", json={"rate_limits": {"rpm": 5}}).json()
        assert patched["rate_limits"] == {"rpm": 5, "tpm": None, "concurrent": None}
        bad = admin.patch(f"/admin/keys/{key['id']}", json={"budgets": [{"period": "year", "usd": 1}]})
        assert bad.status_code == 400 and "budgets" in bad.json()["error"]["message"]
        assert admin.get("/admin/keys/key-nope").status_code == 404
        rotated = admin.post(f"/admin/keys/{key['id']}/rotate").json()
        assert rotated["secret"] != secret and rotated["key"]["id"] == key["id"]
        with pytest.raises(openai.AuthenticationError):
            _oai(keys_gw, secret).chat.completions.create(model="default", messages=HELLO)
        assert (
            _oai(keys_gw, rotated["secret"]).chat.completions.create(model="default", messages=HELLO).choices
        )
        team = admin.post("/admin/teams", json={"name": "t-admin", "models": ["default"]}).json()
        assert admin.patch(f"/admin/teams/{team['id']}", json={"models": []}).json()["models"] == []
        assert admin.delete(f"/admin/teams/{team['id']}").json() == {"id": team["id"], "deleted": True}
        actions = [e["action"] for e in admin.get("/admin/audit?limit=6").json()["data"]]
        assert actions[:4] == ["team.deleted", "team.changed", "team.created", "key.rotated"]


async def test_on_mcp_a_key_lists_and_calls_only_the_tools_it_is_allowed(keys_gw: dict[str, Any]) -> None:
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client
    from mcp.shared.exceptions import MCPError

    narrow, key = _new_key(keys_gw, mcp=["time.get_current_time"])
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {narrow}"})
    async with Client(streamable_http_client(f"{keys_gw['url']}/mcp", http_client=http)) as client:
        assert [t.name for t in (await client.list_tools()).tools] == ["time__get_current_time"]
        assert not (await client.call_tool("time__get_current_time", {"timezone": "UTC"})).is_error
        with pytest.raises(MCPError, match="unknown tool"):
            await client.call_tool("time__convert_time", {"source_timezone": "UTC", "time": "10:00"})
    row = keys_gw["app"].state.mcp.registry.store.audit_rows(1)[0]
    assert row["client"] == key["id"]  # the MCP audit names the key


def test_in_the_tool_loop_a_key_is_offered_and_runs_only_the_tools_it_is_allowed(
    keys_gw: dict[str, Any],
) -> None:
    import sqlite3

    narrow, key = _new_key(keys_gw, mcp=["time.get_current_time"])
    ask = [{"role": "user", "content": "what is the current time and convert time from UTC"}]
    raw = _oai(keys_gw, narrow).chat.completions.with_raw_response.create(model="with-time", messages=ask)
    answer = raw.parse().choices[0].message.content or ""
    assert "time__get_current_time" in answer and "convert_time" not in answer  # only that tool ran
    rid = raw.headers["x-turnstile-request-id"]
    transcript_row(keys_gw["db_path"], rid)
    conn = sqlite3.connect(keys_gw["db_path"])
    steps = conn.execute(
        "SELECT request, key_id FROM turns WHERE request_id LIKE ?", (f"{rid}.step%",)
    ).fetchall()
    conn.close()
    assert steps and all(
        '"time__convert_time"' not in req and '"time__get_current_time"' in req for req, _ in steps
    )
    assert {k for _, k in steps} == {key["id"]}  # the steps' rows name the key too
