"""The transcript written by the real server: one row per turn (served, fallen back, rejected,
streamed), holding the internal schema, never provider JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import openai
import pytest
from standins import recordings
from standins.drive import ADD_MULTIPLY, Turn, ask, tool_results, user
from standins.topology import FALLBACK, MATRIX
from standins.upstream import UpstreamStandin, http_error, replay
from standins.wirekit import keys_in, transcript_count, transcript_row, walk

from gateway.schema import Request, Response

# Field names and type values of the provider/dialect wire formats (never in the store).
PROVIDER_KEYS = {
    "tool_calls",
    "tool_use_id",
    "input_schema",
    "function",
    "functionCall",
    "functionResponse",
    "finish_reason",
    "content_block",
    "partial_json",
    "thoughtSignature",
    "candidates",
    "choices",
    "image_url",
    "inlineData",
    "prompt_tokens",
    "completion_tokens",
    "usageMetadata",
    "max_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
    "stream_options",
    "parts",
}
PROVIDER_TYPES = {
    "tool_use",
    "tool_result",
    "function",
    "image_url",
    "input_json_delta",
    "text_delta",
    "thinking_delta",
    "signature_delta",
    "input_text",
    "message",
}
INTERNAL_PART_TYPES = {"text", "image", "thinking", "redacted_thinking", "tool_call"}


def _rid(turn: Turn) -> str:
    return {k.lower(): v for k, v in turn.headers.items()}["x-turnstile-request-id"]


def _assert_internal(stored: dict[str, Any], model: type[Request] | type[Response]) -> None:
    model.model_validate(stored)
    assert set(stored) <= set(model.model_fields), set(stored) - set(model.model_fields)
    bad_keys = keys_in(stored) & PROVIDER_KEYS
    assert not bad_keys, f"provider field names in the transcript: {bad_keys}"
    for path, v in walk(stored):
        if isinstance(v, dict) and "type" in v and isinstance(v["type"], str) and path.endswith("]"):
            assert v["type"] not in PROVIDER_TYPES, f"provider type {v['type']!r} at {path}"
            if ".content[" in path:
                assert v["type"] in INTERNAL_PART_TYPES, f"{v['type']!r} at {path}"


def _run_turns(upstream: UpstreamStandin, oai: Any, ant: Any) -> tuple[dict[str, str], list[str]]:
    """Five turns of different kinds; returns their request ids and the tool-call ids of the first."""
    rids: dict[str, str] = {}

    # 1. OpenAI client, Anthropic upstream, parallel tool calls, then results with an image (stream)
    first, second = recordings.common("anthropic_messages", "multi_tool", True)[:2]
    upstream.script(replay(first, api="anthropic_messages"), replay(second, api="anthropic_messages"))
    msgs = [user("openai", "Add and multiply the number 2 and 3")]
    t1 = ask(
        "openai", oai, model=MATRIX["anthropic_messages"][0], stream=True, messages=msgs, tools=ADD_MULTIPLY
    )
    rids["tool_calls"] = _rid(t1)
    ids = [c["id"] for c in t1.calls]
    t2 = ask(
        "openai",
        oai,
        model=MATRIX["anthropic_messages"][0],
        stream=True,
        tools=ADD_MULTIPLY,
        messages=[*msgs, t1.echo, *tool_results("openai", [(ids[0], "5", True), (ids[1], "6", False)])],
    )
    rids["tool_results"] = _rid(t2)

    # 2. Anthropic client, Gemini upstream, parallel calls (non-stream)
    g = recordings.common("gemini", "multi_tool", False)[0]
    upstream.script(replay(g, api="gemini"))
    t3 = ask(
        "anthropic",
        ant,
        model=MATRIX["gemini"][0],
        stream=False,
        tools=ADD_MULTIPLY,
        messages=[user("anthropic", "Add and multiply the number 2 and 3")],
    )
    rids["gemini"] = _rid(t3)

    # 3. a turn served by the fallback after a 429
    upstream.script(
        http_error(429, recordings.anthropic_rate_limited(), model="claude-primary", retry_after="2"),
        replay(recordings.common("openai_chat", "simple", False)[0], model="gpt-backup"),
    )
    t4 = ask("openai", oai, model=FALLBACK, stream=False, messages=[user("openai", "hi")])
    rids["fallback"] = _rid(t4)

    # 4. a rejected turn (orphan tool call): still one row, guard outcome rejected
    bad = [
        user("openai", "go"),
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "call_x", "type": "function", "function": {"name": "add", "arguments": "{}"}}
            ],
        },
        user("openai", "?"),
    ]
    with pytest.raises(openai.BadRequestError) as exc:
        oai.chat.completions.create(model="oa", messages=bad)
    rids["rejected"] = exc.value.response.headers["x-turnstile-request-id"]
    return rids, ids


def test_stored_request_and_response_are_the_internal_schema(
    upstream: UpstreamStandin, oai: Any, ant: Any, db_path: Path
) -> None:
    rids, _ = _run_turns(upstream, oai, ant)
    for rid in rids.values():
        row = transcript_row(db_path, rid)
        _assert_internal(json.loads(row["request"]), Request)
        if row["response"] is not None:
            _assert_internal(json.loads(row["response"]), Response)


def test_one_row_per_turn_with_its_outcome(
    upstream: UpstreamStandin, oai: Any, ant: Any, db_path: Path
) -> None:
    rids, ids = _run_turns(upstream, oai, ant)
    for what, rid in rids.items():
        transcript_row(db_path, rid)
        assert transcript_count(db_path, rid) == 1, f"{what}: one row per turn"

    served = transcript_row(db_path, rids["tool_calls"])
    assert (served["client_dialect"], served["deployment"], served["api"]) == (
        "openai_chat",
        "an",
        "anthropic_messages",
    )
    assert served["stream"] == 1 and served["status"] == 200
    response = json.loads(served["response"])
    assert ["name" in p for p in response["message"]["content"]] == [False, True, True], (
        "text, then two calls"
    )
    assert served["input_tokens"] and served["output_tokens"] and served["latency_ms"] is not None
    assert served["cost_usd"] is not None

    with_image = json.loads(transcript_row(db_path, rids["tool_results"])["request"])
    tool_msgs = [m for m in with_image["messages"] if "tool_call_id" in m]
    assert [m["tool_call_id"] for m in tool_msgs] == ids
    assert ["data" in p or "url" in p for p in tool_msgs[0]["content"]] == [False, True], (
        "text, then the image"
    )

    gem = transcript_row(db_path, rids["gemini"])
    assert (gem["client_dialect"], gem["api"]) == ("anthropic_messages", "gemini")

    fb = transcript_row(db_path, rids["fallback"])
    assert fb["deployment"] == "oa-backup"
    tried = [(a.get("deployment"), a.get("status")) for a in json.loads(fb["attempts"]) if "status" in a]
    assert tried == [("an-primary", 429), ("oa-backup", 200)], tried

    rejected = transcript_row(db_path, rids["rejected"])
    assert rejected["guard_outcome"] == "rejected" and rejected["status"] == 400
    assert rejected["response"] is None
