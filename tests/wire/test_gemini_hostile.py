"""Hostile input to the Gemini client edge over the wire (raw HTTP, as a broken client sends
it): each refusal is a 400 in Gemini's error shape whose message names the client's own field
path, with one transcript row, and nothing goes upstream."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import httpx
import pytest
from standins.topology import MATRIX
from standins.upstream import UpstreamStandin
from standins.wirekit import transcript_count, transcript_row

NAME = MATRIX["openai_chat"][0]


def _post(gateway_url: str, contents: list[dict[str, Any]]) -> httpx.Response:
    return httpx.post(
        f"{gateway_url}/v1beta/models/{NAME}:generateContent",
        json={"contents": contents},
        headers={"x-goog-api-key": "gemini-client-key"},
        timeout=15,
    )


@pytest.mark.parametrize(
    ("parts", "path"),
    [
        (
            [{"inlineData": {"mimeType": "image/png", "data": "!!!not base64"}}],
            "contents[0].parts[0].inlineData.data",
        ),
        (
            [{"text": "look"}, {"text": ""}, {"inlineData": {"mimeType": "image/png", "data": "@@"}}],
            "contents[0].parts[2].inlineData.data",
        ),
    ],
    ids=["only-part", "after-an-empty-text-part"],
)
def test_invalid_inline_data_base64_is_refused_naming_the_part(
    parts: list[Any], path: str, upstream: UpstreamStandin, gateway_url: str, db_path: Path
) -> None:
    got = _post(gateway_url, [{"role": "user", "parts": parts}])
    assert got.status_code == 400, got.text
    error = got.json()["error"]
    assert error["status"] == "INVALID_ARGUMENT" and error["message"].startswith(f"{path}:"), error
    rid = got.headers["x-turnstile-request-id"]
    assert transcript_row(db_path, rid)["status"] == 400 and transcript_count(db_path, rid) == 1
    assert upstream.requests() == []


def test_sdk_image_bytes_in_url_safe_base64_reach_the_upstream(upstream: UpstreamStandin, gem: Any) -> None:
    """google-genai sends ``bytes`` URL-safe base64 encoded (``_common.py``:
    ``base64.urlsafe_b64encode``), as the proto3 JSON mapping allows; the upstream gets the
    same bytes in standard base64."""
    from google.genai import types
    from standins.tool_answers import text_answer
    from standins.upstream import replay

    data = bytes(range(256)) * 3  # its base64 holds '+' and '/': '-' and '_' URL-safe
    upstream.script(replay(text_answer("openai_chat", "an image", stream=False), api="openai_chat"))
    got = gem.models.generate_content(
        model=NAME, contents=[types.Part.from_bytes(data=data, mime_type="image/png"), "what is this"]
    )
    assert got.text == "an image"
    (sent,) = upstream.requests()
    parts = sent.body["messages"][0]["content"]
    url = next(p["image_url"]["url"] for p in parts if p["type"] == "image_url")
    assert url == "data:image/png;base64," + base64.b64encode(data).decode()
