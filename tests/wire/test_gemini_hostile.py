"""Hostile input to the Gemini client edge over the wire (raw HTTP, as a broken client sends
it): each refusal is a 400 in Gemini's error shape whose message names the client's own field
path, with one transcript row, and nothing goes upstream."""

from __future__ import annotations

import base64
import json
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


CLIENT_KEY = "client-secret-key-5f3a"


@pytest.mark.parametrize("api", ["gemini", "openai_chat", "anthropic_messages", "openai_responses"])
@pytest.mark.parametrize("where", ["query", "header"])
def test_the_client_gemini_key_never_reaches_an_upstream(
    api: str, where: str, upstream: UpstreamStandin, gateway_url: str
) -> None:
    from standins.tool_answers import text_answer
    from standins.upstream import replay

    model = MATRIX[api][0] if api != "openai_responses" else "rs-gpt-5"
    upstream.script(replay(text_answer(api, "ok", stream=False), api=api))
    query = {"key": CLIENT_KEY} if where == "query" else {}
    headers = {"x-goog-api-key": CLIENT_KEY} if where == "header" else {}
    got = httpx.post(
        f"{gateway_url}/v1beta/models/{model}:generateContent",
        params=query,
        headers=headers,
        json={"contents": [{"role": "user", "parts": [{"text": "hi"}]}]},
        timeout=15,
    )
    assert got.status_code == 200, got.text
    (sent,) = upstream.requests()
    seen = json.dumps([sent.path, sent.headers, sent.query, sent.body])
    assert CLIENT_KEY not in seen


def _declarations(n: int, offset: int = 0) -> list[dict[str, Any]]:
    return [{"name": f"f{offset + i}", "parameters": {"type": "OBJECT"}} for i in range(n)]


@pytest.mark.parametrize(
    ("tools", "field"),
    [
        ([{"functionDeclarations": _declarations(600)}], "tools[0].functionDeclarations"),
        ([{"functionDeclarations": _declarations(300, 300 * j)} for j in range(2)], "tools"),
    ],
    ids=["one-tool-object", "two-tool-objects"],
)
def test_function_declarations_past_the_tool_limit_are_refused(
    tools: list[Any], field: str, upstream: UpstreamStandin, gateway_url: str, db_path: Path
) -> None:
    got = httpx.post(
        f"{gateway_url}/v1beta/models/{NAME}:generateContent",
        json={"contents": [{"role": "user", "parts": [{"text": "hi"}]}], "tools": tools},
        timeout=15,
    )
    assert got.status_code == 413, got.text[:300]
    message = got.json()["error"]["message"]
    assert message.startswith(f"{field}:") and "server.max_request_tools" in message
    assert transcript_count(db_path, got.headers["x-turnstile-request-id"]) == 1
    assert upstream.requests() == []


def test_a_function_declaration_schema_past_the_node_limit_is_refused(
    upstream: UpstreamStandin, gateway_url: str
) -> None:
    wide = {"type": "object", "properties": {"p": {"type": "integer", "enum": [0] * 12_000}}}
    got = httpx.post(
        f"{gateway_url}/v1beta/models/{NAME}:generateContent",
        json={
            "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
            "tools": [{"functionDeclarations": [{"name": "wide", "parametersJsonSchema": wide}]}],
        },
        timeout=15,
    )
    assert got.status_code == 413, got.text[:300]
    message = got.json()["error"]["message"]
    assert message.startswith("tools[0].functionDeclarations[0].parametersJsonSchema:"), message
    assert "server.max_tool_schema_nodes" in message
    assert upstream.requests() == []


@pytest.mark.parametrize(
    ("contents", "path"),
    [
        ([{"role": "user", "parts": []}], "contents[0].parts"),
        ([{"role": "user", "parts": [{"text": "hi"}]}, {"role": "model", "parts": []}], "contents[1].parts"),
        ([{"role": "user", "parts": [{}]}], "contents[0].parts[0]"),
        ([{"role": "user", "parts": [{"text": "a"}, {}]}], "contents[0].parts[1]"),
    ],
    ids=["empty-user-parts", "empty-model-parts", "empty-part", "empty-second-part"],
)
def test_a_content_or_part_with_nothing_in_it_is_refused_at_the_edge(
    contents: list[Any], path: str, upstream: UpstreamStandin, gateway_url: str, db_path: Path
) -> None:
    """Gemini refuses these itself (``contents.parts must not be empty``, a ``Part`` oneof
    with nothing set); other upstreams would get an empty message."""
    got = _post(gateway_url, contents)
    assert got.status_code == 400, got.text
    assert got.json()["error"]["message"].startswith(f"{path}:"), got.text
    assert transcript_count(db_path, got.headers["x-turnstile-request-id"]) == 1
    assert upstream.requests() == []
