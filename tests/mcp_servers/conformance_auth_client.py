"""The gateway's upstream client as the subject of the conformance suite's client ``auth/*``
scenarios: ``python conformance_auth_client.py <server-url>``, run by
``conformance client --command ...`` with ``MCP_CONFORMANCE_SCENARIO`` and (for scenarios with
credentials) ``MCP_CONFORMANCE_CONTEXT`` set.

It registers the scenario's server as the gateway would (``McpServerSpec`` with
``transport.oauth``), runs :class:`mcp_servers.upstream.Upstream` with an encrypted token vault,
acts as the admin who opens the authorization URL (the suite's authorization server approves at
once and redirects with the code, which is handed to the gateway's prompt as its callback route
would), lists the tools and calls each one.

Grants: ``client_credentials`` for the client-credentials scenarios (``client_id`` and
``client_secret`` from the context, or ``private_key_jwt`` with its ``private_key_pem``),
otherwise ``authorization_code`` with the context's
pre-registered client, the CIMD URL the suite expects (``auth/basic-cimd``), or dynamic
registration.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2
from cryptography.fernet import Fernet

from mcp_servers.config import McpServerSpec
from mcp_servers.store import McpStore
from mcp_servers.upstream import Upstream
from mcp_servers.upstream_oauth import TokenVault

REDIRECT_URI = "http://127.0.0.1:19823/callback"
CIMD_URL = "https://conformance-test.local/client-metadata.json"
SECRET_ENV = "CONFORMANCE_CLIENT_SECRET"
KEY_ENV = "CONFORMANCE_CLIENT_KEY"


def oauth_section(scenario: str, context: dict[str, Any]) -> dict[str, Any]:
    """The ``transport.oauth`` the gateway would be configured with for ``scenario``."""
    client_id = context.get("client_id")
    secret = context.get("client_secret")
    if scenario.startswith("auth/client-credentials") and context.get("private_key_pem"):
        return {
            "grant": "client_credentials",
            "client_id": client_id,
            "token_endpoint_auth_method": "private_key_jwt",
            "client_key_env": KEY_ENV,
            "client_key_alg": context.get("signing_algorithm") or "RS256",
            "scope": context.get("scope"),
        }
    if scenario.startswith("auth/client-credentials"):
        return {
            "grant": "client_credentials",
            "client_id": client_id,
            "client_secret_env": SECRET_ENV,
            "scope": context.get("scope"),
        }
    out: dict[str, Any] = {"grant": "authorization_code", "redirect_uri": REDIRECT_URI}
    if client_id:
        out["client_id"] = client_id
        if secret:
            out["client_secret_env"] = SECRET_ENV
    elif scenario == "auth/basic-cimd":
        out["client_metadata_url"] = CIMD_URL
    return out


async def follow(url: str) -> tuple[str, str, str | None]:
    """Open the authorization URL as a browser would, without following the redirect back:
    ``(code, state, iss)`` of the redirect."""
    async with httpx2.AsyncClient(follow_redirects=False, timeout=10) as http:
        response = await http.get(url)
    location = response.headers.get("location", "")
    params = parse_qs(urlsplit(location).query)
    code = (params.get("code") or [""])[0]
    state = (params.get("state") or [""])[0]
    iss = (params.get("iss") or [None])[0]
    if not code:
        raise RuntimeError(f"no code in the authorization redirect ({response.status_code} {location!r})")
    return code, state, iss


def arguments_for(schema: dict[str, Any]) -> dict[str, Any]:
    """Placeholder arguments of the right JSON types for ``schema``'s properties."""
    out: dict[str, Any] = {}
    for name, prop in (schema.get("properties") or {}).items():
        kind = prop.get("type", "string") if isinstance(prop, dict) else "string"
        out[name] = 1 if kind in ("number", "integer") else True if kind == "boolean" else "test"
    return out


async def main(url: str) -> int:
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    raw = os.environ.get("MCP_CONFORMANCE_CONTEXT", "")
    context: dict[str, Any] = json.loads(raw) if raw else {}
    spec = McpServerSpec.model_validate(
        {
            "id": "conformance",
            "transport": {"type": "streamable_http", "url": url, "oauth": oauth_section(scenario, context)},
        }
    )
    env = {SECRET_ENV: context.get("client_secret"), KEY_ENV: context.get("private_key_pem")}
    tools: list[Any] = []
    got_tools = asyncio.Event()

    def on_tools(_server: str, listed: Any) -> None:
        if listed is not None:
            tools[:] = listed
            got_tools.set()

    with tempfile.TemporaryDirectory() as tmp:
        store = McpStore(Path(tmp) / "gateway.db")
        vault = TokenVault(store, Fernet.generate_key().decode(), "TURNSTILE_MCP_TOKEN_KEY")
        up = Upstream(
            spec,
            read_env=env.get,
            on_tools=on_tools,
            backoff_s=0.2,
            backoff_max_s=0.5,
            connect_timeout_s=20,
            oauth_vault=vault,
        )
        prompt = up.prompt
        pending: list[asyncio.Task[None]] = []
        if prompt is not None:
            shown = prompt.on_change

            async def admin_approves() -> None:
                assert prompt.url is not None
                try:
                    code, state, iss = await follow(prompt.url)
                except Exception as err:
                    prompt.refuse(None, str(err))
                    return
                prompt.complete(code, state, iss)  # what GET /mcp/oauth/callback does

            def on_change(waiting: bool) -> None:
                if shown is not None:
                    shown(waiting)
                if waiting:
                    pending.append(asyncio.get_running_loop().create_task(admin_approves()))

            prompt.on_change = on_change
        up.start()
        try:
            # the first attempt decides: a refused flow is not retried (the gateway would, with backoff)
            deadline = asyncio.get_running_loop().time() + 25
            while up.state != "ready":
                if up.restarts or up.state == "restarting" or asyncio.get_running_loop().time() > deadline:
                    print(f"not ready: {up.status()}", file=sys.stderr)
                    return 1
                await up.wait_ready(0.5)
            await asyncio.wait_for(got_tools.wait(), 20)
            for tool in tools:
                try:
                    result = await up.call_tool(tool.name, arguments_for(tool.input_schema), timeout_s=10)
                    print(f"{tool.name}: error={result.is_error}")
                except Exception as err:  # a scenario's tool may refuse; the flow is what is checked
                    print(f"{tool.name}: {type(err).__name__}: {err}", file=sys.stderr)
            return 0
        finally:
            await up.stop()
            store.close()


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[-1])))
