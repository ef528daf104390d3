"""A turn's transcript row is committed before the last bytes of its answer leave the gateway:
the whole body of an answer, and the last frames of a stream (``data: [DONE]``,
``message_stop``), are sent only after the transaction holding the row has committed. Refused
requests and error answers follow the same rule.

The real app (demo deployment) is driven through ASGI; the order of what happened is one log
of ``("commit", request ids)`` (after the writer's transaction) and ``("send", bytes)`` (each
ASGI message of the answer)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import orjson
import pytest

from gateway.config import Settings, parse_config
from gateway.server import create_app
from gateway.transcript import TranscriptWriter, TurnRecord

USER = [{"role": "user", "content": "hi"}]
CASES = {
    "openai": ("/v1/chat/completions", {"model": "demo", "messages": USER}, b'"choices"'),
    "openai-stream": (
        "/v1/chat/completions",
        {"model": "demo", "messages": USER, "stream": True},
        b"data: [DONE]",
    ),
    "anthropic": ("/v1/messages", {"model": "demo", "max_tokens": 64, "messages": USER}, b'"content"'),
    "anthropic-stream": (
        "/v1/messages",
        {"model": "demo", "max_tokens": 64, "messages": USER, "stream": True},
        b"event: message_stop",
    ),
    "refused (malformed body)": ("/v1/chat/completions", {"model": "demo", "messages": "x"}, b'"error"'),
    "error answer (unknown model)": (
        "/v1/messages",
        {"model": "nope", "max_tokens": 8, "messages": USER},
        b"error",
    ),
}


async def _call(app: Any, path: str, body: bytes, log: list[tuple[str, Any]]) -> str:
    """One request through the ASGI app; returns its request id."""
    sent = False
    rid = ""

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await asyncio.Event().wait()  # the client stays
        raise AssertionError("unreachable")

    async def send(message: dict[str, Any]) -> None:
        nonlocal rid
        if message["type"] == "http.response.start":
            rid = dict(message["headers"])[b"x-turnstile-request-id"].decode()
        elif message.get("body"):
            log.append(("send", message["body"]))

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        "client": ("127.0.0.1", 5555),
        "server": ("127.0.0.1", 4000),
        "state": {},
    }
    await asyncio.wait_for(app(scope, receive, send), 30)
    return rid


@pytest.mark.parametrize("case", list(CASES))
async def test_the_last_bytes_of_an_answer_leave_only_after_its_row_is_committed(
    case: str, tmp_path: Path
) -> None:
    path, body, last_marker = CASES[case]
    cfg = parse_config(
        {
            "server": {"db_path": str(tmp_path / "t.db")},
            "deployments": [{"name": "demo", "api": "demo", "model": "turnstile-demo"}],
        }
    )
    app = create_app(cfg, settings=Settings(log_level="warning"))
    log: list[tuple[str, Any]] = []
    async with app.router.lifespan_context(app):
        writer: TranscriptWriter = app.state.gateway.transcript
        write = writer._write_until_done

        async def logged(records: list[TurnRecord]) -> None:
            await write(records)
            log.append(("commit", [r.request_id for r in records]))

        writer._write_until_done = logged  # type: ignore[method-assign]
        rid = await _call(app, path, orjson.dumps(body), log)
    committed = next(i for i, (kind, ids) in enumerate(log) if kind == "commit" and rid in ids)
    last = max(i for i, (kind, data) in enumerate(log) if kind == "send" and last_marker in data)
    assert committed < last, log


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/messages"])
async def test_a_turn_arriving_while_the_store_cannot_write_is_refused_503_before_anything_goes_upstream(
    path: str, tmp_path: Path
) -> None:
    import sqlite3

    cfg = parse_config(
        {
            "server": {"db_path": str(tmp_path / "t.db"), "transcript_commit_timeout_s": 0.2},
            "deployments": [{"name": "demo", "api": "demo", "model": "turnstile-demo"}],
        }
    )
    app = create_app(cfg, settings=Settings(log_level="warning"))
    body = orjson.dumps({"model": "demo", "max_tokens": 16, "messages": USER})
    async with app.router.lifespan_context(app):
        gw = app.state.gateway
        writer: TranscriptWriter = gw.transcript
        locked = True
        write = writer._write

        def stuck(statements: Any) -> None:
            if locked:
                raise sqlite3.OperationalError("database is locked")
            write(statements)

        writer._write = stuck  # type: ignore[method-assign]
        demo = gw.providers["demo"]
        calls = 0
        complete = demo.complete

        async def counted(*args: Any, **kwargs: Any) -> Any:
            nonlocal calls
            calls += 1
            return await complete(*args, **kwargs)

        demo.complete = counted
        log: list[tuple[str, Any]] = []
        first = await _call(app, path, body, log)  # answered once its commit is overdue
        assert calls == 1 and not writer.accepting
        log.clear()
        await _call(app, path, body, log)
        refused = orjson.loads(b"".join(data for _, data in log))
        assert calls == 1  # nothing went upstream
        assert "transcript store is not accepting writes" in orjson.dumps(refused).decode()
        assert ("type" in refused and refused["type"] == "error") or "error" in refused
        locked = False
        await asyncio.wait_for(writer.flush(), 10)  # the retries write the kept rows
        assert writer.accepting
        await _call(app, path, body, log)
        assert calls == 2
        await writer.flush()
    stored = sqlite3.connect(tmp_path / "t.db").execute("SELECT request_id FROM turns").fetchall()
    assert first in {r for (r,) in stored}  # the first turn's row was kept and written later
