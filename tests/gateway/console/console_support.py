"""Helpers of the console tests: a transcript on either store, filled by the gateway's own writer."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from gateway.console.transcript_reader import TranscriptReader
from gateway.transcript import TranscriptWriter, TurnRecord


class Transcript:
    """A transcript at ``location`` that a test fills (:meth:`load`) and reads."""

    def __init__(self, location: str) -> None:
        self.location = location
        self.reader = TranscriptReader(location)

    async def load(self, records: list[TurnRecord]) -> TranscriptReader:
        """Write ``records`` with the gateway's own transcript writer (the rows as the record
        layer makes them); the reader of the transcript."""
        writer = TranscriptWriter(self.location)
        await writer.start()
        for r in records:
            await writer.append(r)
        await writer.close()
        return self.reader


ADMIN_ENV = "TURNSTILE_CONSOLE_TEST_ADMIN_KEY"
ADMIN_KEY = "console-admin-key-for-the-tests-7f3a"
PROVIDER_ENV = "TURNSTILE_CONSOLE_TEST_PROVIDER_KEY"
PROVIDER_KEY = "sk-console-test-provider-key-91c2d"
SESSION = "trip-42"
FORK = "trip-42-fork"


def gateway_config(db_path: str) -> dict[str, Any]:
    """A gateway on loopback that requires virtual keys and has an admin key: two priced demo
    deployments routed by tier (``auto``: every turn to the cheap tier), ``with-time`` whose
    turns run the time MCP server's tools in the server-side tool loop, a ``tiny`` window to
    compact a session for, and a deployment holding a provider key (never called)."""
    return {
        "server": {"db_path": db_path},
        "access": {"auth": "required", "admin_key_env": ADMIN_ENV},
        "deployments": [
            {"name": "cheap", "api": "demo", "model": "demo-cheap", "price": {"input": 1.0, "output": 2.0}},
            {
                "name": "strong",
                "api": "demo",
                "model": "demo-strong",
                "price": {"input": 10.0, "output": 20.0},
            },
            {
                "name": "tiny",
                "api": "demo",
                "model": "demo-tiny",
                "context_window": 60,
                "price": {"input": 0, "output": 0},
            },
            {
                "name": "keyed",
                "api": "openai_chat",
                "model": "gpt-4o-mini",
                "base_url": "http://127.0.0.1:9/v1",
                "api_key_env": PROVIDER_ENV,
            },
        ],
        "models": [
            {
                "name": "auto",
                "deployments": ["cheap", "strong"],
                "routing": {
                    "policy": "rules",
                    "tiers": {"cheap": ["cheap"], "strong": ["strong"]},
                    "default_tier": "cheap",
                },
            },
            {"name": "with-time", "deployments": ["cheap"], "mcp_servers": ["time"]},
        ],
        "sessions": {"compaction_deployment": "cheap"},
        "mcp": {
            "health_interval_s": 600,
            "servers": [
                {
                    "id": "time",
                    "transport": {
                        "type": "stdio",
                        "command": str(Path(sys.executable).parent / "mcp-server-time"),
                        "args": ["--local-timezone", "UTC"],
                    },
                }
            ],
        },
    }


WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}


def drive(url: str) -> dict[str, Any]:
    """The turns the console tests look at, through the gateway at ``url`` with the official
    ``openai`` SDK and a virtual key made with the admin API: a tool call and its result in
    session :data:`SESSION`, an edit of that session's history (a branch), a fork, a label and a
    compaction of it, a server-side tool loop (``time__get_current_time``), a prompt quoting
    every secret, and a refused request. Returns ``{"secret", "key", "tool_call",
    "tool_result", "loop", "quoting", "refused"}`` (request ids)."""
    import httpx
    import openai

    admin = {"authorization": f"Bearer {ADMIN_KEY}"}
    with httpx.Client(base_url=url, timeout=30) as http:
        made = http.post("/admin/keys", json={"name": "console-test"}, headers=admin)
        assert made.status_code == 201, made.text
        secret, key = made.json()["secret"], made.json()["key"]
        client = openai.OpenAI(base_url=f"{url}/v1", api_key=secret, max_retries=0, timeout=60)
        out: dict[str, Any] = {"secret": secret, "key": key}
        session = {"x-turnstile-session": SESSION}
        ask = [{"role": "user", "content": "What's the weather in Paris"}]
        first = client.chat.completions.with_raw_response.create(
            model="auto",
            messages=ask,
            tools=[WEATHER],
            extra_headers=session,  # type: ignore[list-item]
        )
        out["tool_call"] = first.headers["x-turnstile-request-id"]
        message = first.parse().choices[0].message
        call = message.tool_calls[0]  # type: ignore[index]
        follow = [
            *ask,
            message.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": call.id, "content": "Sunny, 24 C"},
        ]
        second = client.chat.completions.with_raw_response.create(
            model="auto",
            messages=follow,
            tools=[WEATHER],
            extra_headers=session,  # type: ignore[arg-type]
        )
        out["tool_result"] = second.headers["x-turnstile-request-id"]
        edited = [*ask, {"role": "user", "content": "Actually, and what about Rome?"}]
        client.chat.completions.create(model="auto", messages=edited, extra_headers=session)  # type: ignore[arg-type]
        bearer = {"authorization": f"Bearer {secret}"}
        fork = http.post(f"/v1/sessions/{SESSION}/fork", json={"session_id": FORK}, headers=bearer)
        assert fork.status_code == 201, fork.text
        view = http.get(f"/v1/sessions/{SESSION}", headers=bearer).json()
        labelled = http.post(
            f"/v1/sessions/{SESSION}/entries/{view['path'][0]['id']}/label",
            json={"label": "first question"},
            headers=bearer,
        )
        assert labelled.status_code == 201, labelled.text
        compacted = http.post(f"/v1/sessions/{SESSION}/compact", json={"deployment": "tiny"}, headers=bearer)
        assert compacted.status_code == 200 and compacted.json()["compacted"], compacted.text
        loop = client.chat.completions.with_raw_response.create(
            model="with-time", messages=[{"role": "user", "content": "what is the current time"}]
        )
        out["loop"] = loop.headers["x-turnstile-request-id"]
        quoting = client.chat.completions.with_raw_response.create(
            model="auto",
            messages=[{"role": "user", "content": f"remember {secret} and {ADMIN_KEY} and {PROVIDER_KEY}"}],
        )
        out["quoting"] = quoting.headers["x-turnstile-request-id"]
        try:
            client.chat.completions.create(model="no-such-model", messages=ask)  # type: ignore[arg-type]
        except openai.NotFoundError as err:
            out["refused"] = err.response.headers["x-turnstile-request-id"]
        else:
            raise AssertionError("an unknown model was served")
    return out


def store_state(db_path: Path) -> dict[str, Any]:
    """What browsing must never change, in the gateway's SQLite file: the row counts of the
    transcript, the session log, the MCP audit and the access store, and every session's leaf."""
    import sqlite3

    conn = sqlite3.connect(db_path)
    try:
        tables = ("turns", "session_entries", "sessions", "mcp_audit", "access_audit", "access_keys")
        counts: dict[str, Any] = {t: conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in tables}
        counts["leaves"] = conn.execute("SELECT id, leaf_id FROM sessions ORDER BY id").fetchall()
        return counts
    finally:
        conn.close()
