"""The webhook interface: the service's verdict applied; a timeout or a bad answer is the
configured fail mode's (open: allowed and flagged; closed: blocked)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web

from gateway.config import GuardrailsConfig
from gateway.guardrails.engine import Guardrails

SEEN: list[dict[str, Any]] = []
RELEASE: list[asyncio.Event] = []  # a "hang" answer waits for the test's end


async def _verdict(request: web.Request) -> web.Response:
    body = await request.json()
    SEEN.append({"body": body, "auth": request.headers.get("authorization")})
    text = body["text"]
    if "hang" in text:
        await RELEASE[0].wait()  # answered only after the client gave up
    if "garbage" in text:
        return web.Response(text="not json")
    if "secret-project" in text:
        return web.json_response({"action": "redact", "text": text.replace("secret-project", "[X]")})
    if "forbidden" in text:
        return web.json_response({"action": "block", "reason": "policy 7"})
    return web.json_response({"action": "allow"})


@pytest.fixture
async def url() -> AsyncIterator[str]:
    app = web.Application()
    app.router.add_post("/check", _verdict)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    SEEN.clear()
    RELEASE[:] = [asyncio.Event()]
    try:
        yield f"http://127.0.0.1:{port}/check"
    finally:
        RELEASE[0].set()
        await runner.cleanup()


def _engine(url: str, fail: str = "open") -> Guardrails:
    cfg = GuardrailsConfig.model_validate(
        {
            "enabled": True,
            "webhook": {
                "url": url,
                "timeout_s": 0.3,
                "fail": fail,
                "headers_env": {"Authorization": "HOOK_AUTH"},
                "stages": ["tool_output", "output"],
            },
        }
    )
    return Guardrails(cfg, read_env=lambda name: "Bearer hook-key" if name == "HOOK_AUTH" else None)


async def test_the_services_verdicts_are_applied(url: str) -> None:
    g = _engine(url)
    try:
        redacted = await g.check("tool_output", "the secret-project plan", {"server": "docs"})
        assert redacted.action == "redact" and redacted.text == "the [X] plan"
        blocked = await g.check("output", "forbidden words")
        assert blocked.action == "block" and "webhook:policy 7" in blocked.reason
        assert (await g.check("tool_output", "fine")).action == "allow"
        assert (await g.check("input", "forbidden")).action == "allow"  # not a webhook stage
    finally:
        await g.close()
    assert SEEN[0]["body"] == {
        "stage": "tool_output",
        "text": "the secret-project plan",
        "context": {"server": "docs"},
    }
    assert SEEN[0]["auth"] == "Bearer hook-key" and len(SEEN) == 3


async def test_no_answer_in_time_fails_open_as_a_flag(url: str) -> None:
    g = _engine(url, "open")
    try:
        checked = await g.check("tool_output", "hang please")
    finally:
        await g.close()
    assert (
        checked.action == "flag" and checked.text == "hang please" and "webhook_unavailable" in checked.reason
    )


async def test_a_bad_answer_fails_closed_as_a_block(url: str) -> None:
    g = _engine(url, "closed")
    try:
        assert (await g.check("tool_output", "garbage")).action == "block"
    finally:
        await g.close()


async def test_an_unreachable_service_fails_by_its_mode() -> None:
    g = _engine("http://127.0.0.1:9/check", "closed")
    try:
        assert (await g.check("tool_output", "x")).action == "block"
    finally:
        await g.close()


async def test_many_strings_with_a_hung_service_share_one_deadline_and_fail_open(url: str) -> None:
    g = _engine(url, "open")  # timeout_s 0.3: serially, 20 strings would take 6 s
    texts = [f"hang {i}" for i in range(20)]
    try:
        async with asyncio.timeout(3):  # bounded wait: one shared deadline, not one per string
            new, blocked = await g.check_all("tool_output", texts, {"server": "docs"})
    finally:
        await g.close()
    assert blocked is None and new == texts


async def test_many_strings_with_a_hung_service_fail_closed_as_a_block(url: str) -> None:
    g = _engine(url, "closed")
    try:
        async with asyncio.timeout(3):
            _, blocked = await g.check_all("tool_output", [f"hang {i}" for i in range(20)])
    finally:
        await g.close()
    assert blocked is not None and "webhook:webhook_unavailable" in blocked


async def test_each_of_many_strings_gets_its_own_verdict(url: str) -> None:
    g = _engine(url)
    try:
        new, blocked = await g.check_all("tool_output", ["a secret-project note", "fine"])
        assert blocked is None and new == ["a [X] note", "fine"]
        _, blocked = await g.check_all("tool_output", ["fine", "forbidden words"])
        assert blocked is not None and "webhook:policy 7" in blocked
    finally:
        await g.close()
