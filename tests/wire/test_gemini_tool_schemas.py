"""Tool schemas reach a Gemini upstream in the form Gemini accepts: the stand-in refuses any
member Gemini's ``Schema`` does not have, at any depth, with the real error shape; through the
real gateway, every schema recorded in the corpus and schemas with slips real tools carry
(wrong value types, unknown types, unknown keywords) are accepted, in both client dialects."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from standins import recordings
from standins.topology import KEYS, MATRIX
from standins.upstream import UpstreamStandin, replay

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "tool-schemas" / "corpus-schemas.jsonl"
CORPUS = [
    json.loads(line)["schema"] for line in FIXTURE.read_text(encoding="utf-8").splitlines() if line.strip()
]
SLIPS = [
    {"type": "object", "properties": {"n": {"type": "integer", "minimum": "5", "maximum": 9}}},
    {"type": "object", "properties": {"f": {"type": "file", "description": "an upload"}}},
    {"type": "object", "properties": {"t": {"type": "string", "title": {"en": "Title"}, "maxLength": 1.5}}},
    {
        "type": "object",
        "properties": {"e": {"type": "string", "enum": "a"}, "p": {"type": "string", "pattern": 7}},
    },
    {
        "type": "object",
        "properties": {"a": {"type": "array", "items": {"type": "object", "additionalProperties": False}}},
        "propertyOrdering": ["zz"],
    },
]
GEMINI_OK = recordings.common("gemini", "simple", False)[0]


def test_the_standin_refuses_an_unknown_schema_member_as_gemini_does(upstream: UpstreamStandin) -> None:
    body = {
        "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
        "tools": [
            {
                "functionDeclarations": [
                    {
                        "name": "f",
                        "parameters": {
                            "type": "object",
                            "properties": {
                                "a": {"anyOf": [{"type": "array", "items": {"additionalProperties": False}}]}
                            },
                        },
                    }
                ]
            }
        ],
    }
    r = httpx.post(
        f"{upstream.url}/v1beta/models/{MATRIX['gemini'][1]}:generateContent",
        json=body,
        headers={"x-goog-api-key": KEYS["gemini"]},
        timeout=10,
    )
    assert r.status_code == 400
    err = r.json()["error"]
    assert err["status"] == "INVALID_ARGUMENT"
    at = "tools[0].function_declarations[0].parameters.properties[0].value.any_of[0].items"
    unknown = 'Invalid JSON payload received. Unknown name "additionalProperties"'
    assert err["message"] == f"{unknown} at '{at}': Cannot find field."
    assert err["details"][0]["fieldViolations"] == [{"field": at, "description": err["message"]}]


def _tools(dialect: str, schemas: list[dict[str, Any]]) -> list[dict[str, Any]]:
    if dialect == "openai":
        return [
            {"type": "function", "function": {"name": f"tool_{i}", "description": "d", "parameters": s}}
            for i, s in enumerate(schemas)
        ]
    return [{"name": f"tool_{i}", "description": "d", "input_schema": s} for i, s in enumerate(schemas)]


@pytest.mark.parametrize("dialect", ["openai", "anthropic"])
@pytest.mark.parametrize("which", ["corpus", "slips"])
def test_tool_schemas_reach_gemini_in_the_form_it_accepts(
    dialect: str, which: str, upstream: UpstreamStandin, gateway_url: str
) -> None:
    schemas = CORPUS if which == "corpus" else SLIPS
    upstream.script(replay(GEMINI_OK, api="gemini"))
    path = "/v1/chat/completions" if dialect == "openai" else "/v1/messages"
    body = {
        "model": MATRIX["gemini"][0],
        "max_tokens": 100,
        "messages": [{"role": "user", "content": "hi"}],
        "tools": _tools(dialect, schemas),
    }
    r = httpx.post(gateway_url + path, json=body, timeout=15)

    assert r.status_code == 200, r.text
    sent = upstream.requests("gemini")[0].body
    decls = sent["tools"][0]["functionDeclarations"]
    assert len(decls) == len(schemas), "every tool is declared"
