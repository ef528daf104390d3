"""The app's own handlers (gateway/server.py), called as ASGI endpoints without a server."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from starlette.requests import Request

from gateway import server


async def test_count_tokens_with_the_client_gone_mid_body_answers_499_not_an_asgi_error() -> None:
    gateway = SimpleNamespace(config=SimpleNamespace(server=SimpleNamespace(max_body_bytes=1000)))
    scope: dict[str, Any] = {
        "type": "http",
        "method": "POST",
        "path": "/v1/messages/count_tokens",
        "headers": [(b"content-length", b"500")],
        "state": {"request_id": "r1"},
        "app": SimpleNamespace(state=SimpleNamespace(gateway=gateway)),
    }
    messages = [
        {"type": "http.request", "body": b'{"model":', "more_body": True},
        {"type": "http.disconnect"},
    ]

    async def receive() -> dict[str, Any]:
        return messages.pop(0)

    response = await server.count_tokens(Request(scope, receive))
    assert response.status_code == 499
