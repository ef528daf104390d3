"""The fidelity rule through the gateway for the OpenAI Responses and Gemini dialects (issue 14
item 1, ``docs/fidelity.md``), asserted on what reached the upstream stand-in: serving and
passed-through fields reach an upstream of the client's own wire API verbatim; toward another
wire API serving ones are dropped and named (header and transcript), passed-through ones a 400
naming the field with no upstream call. Covers the fields the tables added: Responses
``image``, ``moderation``, ``access_programs``, call items' ``caller`` / ``async``, call-output
parts' ``prompt_cache_breakpoint``; Gemini ``serviceTier`` and ``modelArmorConfig``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from standins.tool_answers import text_answer
from standins.topology import MATRIX
from standins.upstream import UpstreamStandin, replay
from standins.wirekit import transcript_row

RS = MATRIX["openai_responses"][0]
OA = MATRIX["openai_chat"][0]
GE = MATRIX["gemini"][0]

RS_SERVING: dict[str, Any] = {"image": {"context_compression": "enabled"}, "service_tier": "flex"}
RS_PASSED: dict[str, Any] = {
    "moderation": {"model": "omni-moderation-latest"},
    "access_programs": {"cyber": "standard"},
}
FN = {
    "type": "function",
    "name": "f",
    "description": "F.",
    "parameters": {"type": "object", "properties": {}},
}
PROGRAM = {"type": "program", "caller_id": "prog_1"}
BREAK = {"ttl": "1h"}
ITEMS: list[dict[str, Any]] = [
    {"role": "user", "content": "go"},
    {
        "type": "function_call",
        "call_id": "call_1",
        "name": "f",
        "arguments": "{}",
        "caller": PROGRAM,
        "async": True,
    },
    {
        "type": "function_call_output",
        "call_id": "call_1",
        "caller": PROGRAM,
        "output": [{"type": "input_text", "text": "ok", "prompt_cache_breakpoint": BREAK}],
    },
]


def _dropped(db_path: Path, request_id: str) -> list[str]:
    row = transcript_row(db_path, request_id)
    return [n["field"] for n in json.loads(row["repairs"]) if n.get("kind") == "dropped"]


def test_responses_serving_and_passed_through_fields_reach_a_responses_upstream_verbatim(
    upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    upstream.script(replay(text_answer("openai_responses", "hi", stream=False)))
    raw = oai.responses.with_raw_response.create(
        model=RS, input="hi", store=False, extra_body={**RS_SERVING, **RS_PASSED}
    )
    assert raw.http_response.status_code == 200
    assert "x-turnstile-dropped" not in raw.headers
    (got,) = upstream.requests()
    sent = {**RS_SERVING, **RS_PASSED}
    assert {k: got.body.get(k) for k in sent} == sent


def test_responses_serving_fields_toward_openai_chat_are_dropped_and_named(
    upstream: UpstreamStandin, oai: openai.OpenAI, db_path: Path
) -> None:
    upstream.script(replay(text_answer("openai_chat", "hi", stream=False)))
    raw = oai.responses.with_raw_response.create(model=OA, input="hi", store=False, extra_body=RS_SERVING)
    assert raw.headers["x-turnstile-dropped"] == "image"  # service_tier: Chat has it (translated)
    (got,) = upstream.requests()
    assert "image" not in got.body
    assert got.body["service_tier"] == "flex"
    assert _dropped(db_path, raw.headers["x-turnstile-request-id"]) == ["image"]


@pytest.mark.parametrize("field", ["access_programs"])  # moderation: Chat has it (translated)
def test_an_answer_changing_responses_field_toward_openai_chat_is_refused_by_name(
    field: str, upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    with pytest.raises(openai.BadRequestError) as exc:
        oai.responses.create(model=OA, input="hi", store=False, extra_body={field: RS_PASSED[field]})
    assert exc.value.body["param"] == field  # type: ignore[index]
    assert upstream.requests() == []


def test_call_items_caller_and_async_and_output_part_keys_reach_a_responses_upstream_on_them(
    upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    upstream.script(replay(text_answer("openai_responses", "done", stream=False)))
    raw = oai.responses.with_raw_response.create(model=RS, input=ITEMS, tools=[FN], store=False)  # type: ignore[arg-type, list-item]
    assert "x-turnstile-dropped" not in raw.headers
    (got,) = upstream.requests()
    call, output = got.body["input"][1:3]
    assert (call["type"], call["caller"], call["async"]) == ("function_call", PROGRAM, True)
    assert output["caller"] == PROGRAM
    assert output["output"] == [{"type": "input_text", "text": "ok", "prompt_cache_breakpoint": BREAK}]


def test_call_items_async_and_output_part_keys_toward_openai_chat_are_dropped_and_named(
    upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    upstream.script(replay(text_answer("openai_chat", "done", stream=False)))
    items = [{k: v for k, v in item.items() if k != "caller"} for item in ITEMS]
    raw = oai.responses.with_raw_response.create(model=OA, input=items, tools=[FN], store=False)  # type: ignore[arg-type, list-item]
    assert raw.headers["x-turnstile-dropped"] == "input[2].output[0].prompt_cache_breakpoint,input[1].async"
    (got,) = upstream.requests()
    assert "prompt_cache_breakpoint" not in str(got.body)


def test_a_program_caller_toward_openai_chat_is_refused_by_its_paths(
    upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    with pytest.raises(openai.BadRequestError) as exc:
        oai.responses.create(model=OA, input=ITEMS, tools=[FN], store=False)  # type: ignore[arg-type, list-item]
    assert "input[1].caller" in exc.value.message and "input[2].caller" in exc.value.message
    assert upstream.requests() == []


USER = {"role": "user", "parts": [{"text": "hello"}]}


def _gemini(gateway_url: str, name: str, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(
        f"{gateway_url}/v1beta/models/{name}:generateContent",
        json=body,
        headers={"x-goog-api-key": "gemini-client-key"},
        timeout=15,
    )


ARMOR = {"promptTemplateName": "projects/p/locations/us/templates/t"}


def test_gemini_service_tier_and_model_armor_reach_a_gemini_upstream_verbatim(
    upstream: UpstreamStandin, gateway_url: str
) -> None:
    upstream.script(replay(text_answer("gemini", "hi", stream=False)))
    resp = _gemini(gateway_url, GE, {"contents": [USER], "serviceTier": "flex", "modelArmorConfig": ARMOR})
    assert resp.status_code == 200, resp.text
    assert "x-turnstile-dropped" not in resp.headers
    (got,) = upstream.requests()
    assert (got.body["serviceTier"], got.body["modelArmorConfig"]) == ("flex", ARMOR)


def test_gemini_service_tier_toward_openai_chat_is_dropped_and_named(
    upstream: UpstreamStandin, gateway_url: str, db_path: Path
) -> None:
    upstream.script(replay(text_answer("openai_chat", "hi", stream=False)))
    resp = _gemini(gateway_url, OA, {"contents": [USER], "serviceTier": "flex"})
    assert resp.status_code == 200, resp.text
    assert resp.headers["x-turnstile-dropped"] == "serviceTier"
    (got,) = upstream.requests()
    assert "flex" not in str(got.body)
    assert _dropped(db_path, resp.headers["x-turnstile-request-id"]) == ["serviceTier"]


def test_gemini_model_armor_toward_openai_chat_is_refused_by_name(
    upstream: UpstreamStandin, gateway_url: str
) -> None:
    resp = _gemini(gateway_url, OA, {"contents": [USER], "modelArmorConfig": ARMOR})
    assert resp.status_code == 400
    assert "modelArmorConfig" in resp.text
    assert upstream.requests() == []
