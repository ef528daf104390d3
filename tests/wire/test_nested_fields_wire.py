"""Fields inside messages and parts through the gateway (issue 14, ``docs/fidelity.md`` "Nested
fields"), driven by the official SDKs and asserted on what reached the upstream stand-in: a
message's ``name``, ``developer`` messages, image ``detail``, a document's name, ``seed`` and
the penalties, a mid-conversation system message to Gemini, a Responses ``input_audio`` part,
documents in Anthropic tool results, ``tool_use.caller``, and ``pause_turn``. Each is carried
where the target's wire has a slot, and otherwise dropped and named in ``x-turnstile-dropped``
(and the transcript) or refused by name with nothing sent upstream."""

from __future__ import annotations

import base64
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest
from google import genai
from google.genai import errors, types
from standins.tool_answers import Call, text_answer, tool_call_answer
from standins.upstream import UpstreamStandin, replay
from standins.wirekit import transcript_row

API_OF = {"an": "anthropic_messages", "oa": "openai_chat", "rs": "openai_responses", "ge": "gemini"}
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x00" * 16).decode()
PDF = base64.b64encode(b"%PDF-1.4\n1 0 obj<</Type/Catalog>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n").decode()
USER = [{"role": "user", "content": "hello"}]


def _dropped_notes(db_path: Path, request_id: str) -> list[dict[str, Any]]:
    row = transcript_row(db_path, request_id)
    return [n for n in json.loads(row["repairs"]) if n.get("kind") == "dropped"]


def _answer(target: str) -> Any:
    return replay(text_answer(API_OF[target], "ok", stream=False))


# ---------------------------------------------------------------------------- message names

NAMED = [
    {"role": "system", "content": "Moderate the debate.", "name": "moderator"},
    {"role": "user", "content": "Tabs.", "name": "alice"},
    {"role": "assistant", "content": "Noted.", "name": "bot"},
    {"role": "user", "content": "Spaces.", "name": "bob"},
]


def test_message_names_reach_an_openai_chat_upstream_as_sent(
    upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    upstream.script(_answer("oa"))
    raw = oai.chat.completions.with_raw_response.create(model="oa", messages=NAMED)  # type: ignore[arg-type]
    assert "x-turnstile-dropped" not in raw.headers
    (got,) = upstream.requests()
    assert [m.get("name") for m in got.body["messages"]] == ["moderator", "alice", "bot", "bob"]


@pytest.mark.parametrize("target", ["an", "ge", "rs"])
def test_message_names_toward_another_api_are_dropped_and_named_with_the_text_unchanged(
    target: str, upstream: UpstreamStandin, oai: openai.OpenAI, db_path: Path
) -> None:
    upstream.script(_answer(target))
    raw = oai.chat.completions.with_raw_response.create(model=target, messages=NAMED)  # type: ignore[arg-type]
    assert raw.headers["x-turnstile-dropped"] == "name"
    (got,) = upstream.requests()
    sent = json.dumps(got.body)
    assert "alice" not in sent and "moderator" not in sent and "bob" not in sent
    assert "Tabs." in sent and "Spaces." in sent  # the text is not rewritten
    (note,) = _dropped_notes(db_path, raw.headers["x-turnstile-request-id"])
    assert note["field"] == "name"
    assert note["values"] == ["messages[0].name", "messages[1].name", "messages[2].name", "messages[3].name"]


# ---------------------------------------------------------------------------- developer role

DEVELOPER = [
    {"role": "developer", "content": "Answer in French."},
    {"role": "user", "content": "Hello?"},
]


def test_a_developer_message_stays_developer_to_both_openai_apis(
    upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    upstream.script(_answer("oa"), _answer("rs"))
    oai.chat.completions.create(model="oa", messages=DEVELOPER)  # type: ignore[arg-type]
    oai.chat.completions.create(model="rs", messages=DEVELOPER)  # type: ignore[arg-type]
    to_chat, to_responses = upstream.requests()
    assert to_chat.body["messages"][0] == {"role": "developer", "content": "Answer in French."}
    assert "instructions" not in to_responses.body
    assert to_responses.body["input"][0] == {"role": "developer", "content": "Answer in French."}


def test_a_responses_developer_item_reaches_openai_chat_as_developer(
    upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    upstream.script(_answer("oa"))
    oai.responses.create(
        model="oa",
        instructions="Be brief.",
        input=[
            {"role": "developer", "content": "Answer in French."},
            {"role": "user", "content": "Hello?"},
        ],
    )
    (got,) = upstream.requests()
    assert [(m["role"], m["content"]) for m in got.body["messages"]] == [
        ("system", "Be brief."),
        ("developer", "Answer in French."),
        ("user", "Hello?"),
    ]


def test_a_developer_message_is_a_system_prompt_for_claude(
    upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    upstream.script(_answer("an"))
    raw = oai.chat.completions.with_raw_response.create(model="an", messages=DEVELOPER)  # type: ignore[arg-type]
    assert "x-turnstile-dropped" not in raw.headers
    (got,) = upstream.requests()
    assert got.body["system"] == [{"type": "text", "text": "Answer in French."}]
    assert [m["role"] for m in got.body["messages"]] == ["user"]


MID_SYSTEM = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Review `def add(a, b): return a + b`."},
    {"role": "assistant", "content": "It adds."},
    {"role": "developer", "content": "From now on, include type annotations."},
    {"role": "user", "content": "Again, please."},
]


def test_a_mid_conversation_system_message_stays_in_place_for_gemini_as_a_system_note(
    upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    upstream.script(_answer("ge"))
    raw = oai.chat.completions.with_raw_response.create(model="ge", messages=MID_SYSTEM)  # type: ignore[arg-type]
    assert "x-turnstile-dropped" not in raw.headers
    (got,) = upstream.requests()
    assert got.body["systemInstruction"] == {"parts": [{"text": "Be brief."}]}
    assert [c["role"] for c in got.body["contents"]] == ["user", "model", "user"]
    assert got.body["contents"][2]["parts"] == [
        {"text": "<system_note>\nFrom now on, include type annotations.\n</system_note>"},
        {"text": "Again, please."},
    ]


# ---------------------------------------------------------------------------- image detail


def _chat_image(detail: str) -> list[dict[str, Any]]:
    url = f"data:image/png;base64,{PNG}"
    return [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is it?"},
                {"type": "image_url", "image_url": {"url": url, "detail": detail}},
            ],
        }
    ]


def test_chat_image_detail_reaches_both_openai_apis(upstream: UpstreamStandin, oai: openai.OpenAI) -> None:
    upstream.script(_answer("oa"), _answer("rs"))
    oai.chat.completions.create(model="oa", messages=_chat_image("low"))  # type: ignore[arg-type]
    raw = oai.chat.completions.with_raw_response.create(model="rs", messages=_chat_image("low"))  # type: ignore[arg-type]
    assert "x-turnstile-dropped" not in raw.headers
    to_chat, to_responses = upstream.requests()
    assert to_chat.body["messages"][0]["content"][1]["image_url"]["detail"] == "low"
    image = to_responses.body["input"][0]["content"][1]
    assert image["type"] == "input_image" and image["detail"] == "low"


def test_responses_image_detail_reaches_both_openai_apis(
    upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    upstream.script(_answer("rs"), _answer("oa"))
    content = [
        {"type": "input_text", "text": "What is it?"},
        {"type": "input_image", "image_url": f"data:image/png;base64,{PNG}", "detail": "high"},
    ]
    for target in ("rs", "oa"):
        oai.responses.create(model=target, input=[{"role": "user", "content": content}])  # type: ignore[list-item]
    to_responses, to_chat = upstream.requests()
    assert to_responses.body["input"][0]["content"][1]["detail"] == "high"
    assert to_chat.body["messages"][0]["content"][1]["image_url"]["detail"] == "high"


@pytest.mark.parametrize("target", ["an", "ge"])
def test_image_detail_toward_claude_or_gemini_is_dropped_and_named(
    target: str, upstream: UpstreamStandin, oai: openai.OpenAI, db_path: Path
) -> None:
    upstream.script(_answer(target))
    raw = oai.chat.completions.with_raw_response.create(model=target, messages=_chat_image("high"))  # type: ignore[arg-type]
    assert raw.headers["x-turnstile-dropped"] == "detail"
    (got,) = upstream.requests()
    assert "detail" not in json.dumps(got.body)
    (note,) = _dropped_notes(db_path, raw.headers["x-turnstile-request-id"])
    assert note["values"] == ["messages[0].content[1]"]


def test_detail_auto_asks_for_nothing_and_names_nothing(
    upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    upstream.script(_answer("an"))
    raw = oai.chat.completions.with_raw_response.create(model="an", messages=_chat_image("auto"))  # type: ignore[arg-type]
    assert "x-turnstile-dropped" not in raw.headers


# ---------------------------------------------------------------------------- seed and penalties


def test_seed_and_penalties_reach_gemini_as_generation_config(
    upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    upstream.script(_answer("ge"))
    raw = oai.chat.completions.with_raw_response.create(
        model="ge", messages=USER, seed=42, presence_penalty=0.5, frequency_penalty=-0.25
    )  # type: ignore[arg-type]
    assert "x-turnstile-dropped" not in raw.headers
    (got,) = upstream.requests()
    gen = got.body["generationConfig"]
    assert (gen["seed"], gen["presencePenalty"], gen["frequencyPenalty"]) == (42, 0.5, -0.25)


def test_a_seed_toward_claude_is_dropped_and_named(
    upstream: UpstreamStandin, oai: openai.OpenAI, db_path: Path
) -> None:
    upstream.script(_answer("an"))
    raw = oai.chat.completions.with_raw_response.create(model="an", messages=USER, seed=42)
    assert raw.headers["x-turnstile-dropped"] == "seed"
    (got,) = upstream.requests()
    assert "seed" not in got.body
    (note,) = _dropped_notes(db_path, raw.headers["x-turnstile-request-id"])
    assert note["values"] == [42]


@pytest.mark.parametrize("target", ["an", "rs"])
@pytest.mark.parametrize("field", ["presence_penalty", "frequency_penalty"])
def test_a_penalty_toward_an_api_without_one_is_refused_by_name(
    field: str, target: str, upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    with pytest.raises(openai.BadRequestError) as exc:
        oai.chat.completions.create(model=target, messages=USER, **{field: 0.5})  # type: ignore[call-overload]
    assert exc.value.body["param"] == field  # type: ignore[index]
    assert field in exc.value.message and API_OF[target] in exc.value.message
    assert upstream.requests() == []


def test_a_gemini_clients_seed_and_penalty_reach_openai_chat(
    upstream: UpstreamStandin, gem: genai.Client
) -> None:
    upstream.script(_answer("oa"))
    config = types.GenerateContentConfig(seed=5, presence_penalty=0.25)
    gem.models.generate_content(model="oa", contents="hello", config=config)
    (got,) = upstream.requests()
    assert (got.body["seed"], got.body["presence_penalty"]) == (5, 0.25)


def test_a_gemini_clients_penalty_toward_claude_is_refused_by_name(
    upstream: UpstreamStandin, gem: genai.Client
) -> None:
    config = types.GenerateContentConfig(frequency_penalty=0.5)
    with pytest.raises(errors.ClientError) as info:
        gem.models.generate_content(model="an", contents="hello", config=config)
    assert info.value.code == 400 and "generationConfig.frequencyPenalty" in str(info.value.message)
    assert upstream.requests() == []


# ---------------------------------------------------------------------------- documents and audio


def test_a_document_name_toward_gemini_is_dropped_and_named(
    upstream: UpstreamStandin, ant: anthropic.Anthropic, db_path: Path
) -> None:
    upstream.script(_answer("ge"))
    doc = {
        "type": "document",
        "source": {"type": "base64", "media_type": "application/pdf", "data": PDF},
        "title": "report.pdf",
    }
    raw = ant.messages.with_raw_response.create(
        model="ge",
        max_tokens=64,
        messages=[{"role": "user", "content": [doc, {"type": "text", "text": "Summarise."}]}],  # type: ignore[list-item]
    )
    assert raw.headers["x-turnstile-dropped"] == "filename"
    (got,) = upstream.requests()
    assert "report.pdf" not in json.dumps(got.body)
    (note,) = _dropped_notes(db_path, raw.headers["x-turnstile-request-id"])
    assert note["values"] == ["messages[0].content[0]"]


def test_a_responses_input_audio_part_is_refused_by_name(
    upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    audio = {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}}
    with pytest.raises(openai.BadRequestError) as exc:
        oai.responses.create(model="oa", input=[{"role": "user", "content": [audio]}])  # type: ignore[list-item]
    assert exc.value.body["param"] == "input[0].content[0].type"  # type: ignore[index]
    assert "input_audio" in exc.value.message
    assert upstream.requests() == []


TOOL = {"name": "fetch", "description": "Fetch a file.", "input_schema": {"type": "object", "properties": {}}}
DOC_RESULT = [
    {"role": "user", "content": "Fetch the report."},
    {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "fetch", "input": {}}]},
    {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "toolu_1",
                "content": [
                    {
                        "type": "document",
                        "source": {"type": "text", "media_type": "text/plain", "data": "Q3 up 4%."},
                        "title": "report",
                    }
                ],
            }
        ],
    },
]


def test_a_document_in_a_tool_result_reaches_claude_as_sent(
    upstream: UpstreamStandin, ant: anthropic.Anthropic
) -> None:
    upstream.script(_answer("an"))
    ant.messages.create(model="an", max_tokens=64, tools=[TOOL], messages=DOC_RESULT)  # type: ignore[arg-type,list-item]
    (got,) = upstream.requests()
    assert got.body["messages"][2]["content"][0]["content"] == DOC_RESULT[2]["content"][0]["content"]  # type: ignore[index]


def test_a_document_in_a_tool_result_toward_another_api_is_refused_by_name(
    upstream: UpstreamStandin, ant: anthropic.Anthropic
) -> None:
    with pytest.raises(anthropic.BadRequestError) as exc:
        ant.messages.create(model="oa", max_tokens=64, tools=[TOOL], messages=DOC_RESULT)  # type: ignore[arg-type,list-item]
    assert "messages[2].content[0].content[0] (document)" in exc.value.message
    assert upstream.requests() == []


# ---------------------------------------------------------------------------- tool_use.caller

CALLER = {"type": "code_execution_20250825", "tool_id": "srvtoolu_01"}
CALLED = [
    {"role": "user", "content": "Sum the sales."},
    {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "toolu_1", "name": "fetch", "input": {}, "caller": CALLER}],
    },
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "[1, 2]"}]},
]


def test_a_tool_use_caller_reaches_claude_as_sent(
    upstream: UpstreamStandin, ant: anthropic.Anthropic
) -> None:
    upstream.script(_answer("an"))
    ant.messages.create(model="an", max_tokens=64, tools=[TOOL], messages=CALLED)  # type: ignore[arg-type,list-item]
    (got,) = upstream.requests()
    assert got.body["messages"][1]["content"][0]["caller"] == CALLER


def test_a_tool_use_caller_toward_another_api_is_refused_by_name(
    upstream: UpstreamStandin, ant: anthropic.Anthropic
) -> None:
    with pytest.raises(anthropic.BadRequestError) as exc:
        ant.messages.create(model="ge", max_tokens=64, tools=[TOOL], messages=CALLED)  # type: ignore[arg-type,list-item]
    assert "messages[1].content[0].caller" in exc.value.message
    assert upstream.requests() == []


MARK = {"type": "ephemeral"}
MARKED = [
    {"role": "user", "content": "Sum the sales."},
    {
        "role": "assistant",
        "content": [
            {"type": "tool_use", "id": "toolu_1", "name": "fetch", "input": {}, "cache_control": MARK}
        ],
    },
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "[1, 2]"}]},
]


def test_a_tool_use_cache_mark_reaches_claude_as_sent_and_is_dropped_by_name_elsewhere(
    upstream: UpstreamStandin, ant: anthropic.Anthropic
) -> None:
    upstream.script(_answer("an"), _answer("oa"))
    ant.messages.create(model="an", max_tokens=64, tools=[TOOL], messages=MARKED)  # type: ignore[arg-type,list-item]
    raw = ant.messages.with_raw_response.create(model="oa", max_tokens=64, tools=[TOOL], messages=MARKED)  # type: ignore[arg-type,list-item]
    claude, gpt = upstream.requests()
    assert claude.body["messages"][1]["content"][0]["cache_control"] == MARK
    assert "cache_control" not in json.dumps(gpt.body)
    assert "cache_control" in raw.headers["x-turnstile-dropped"].split(",")


def test_an_unknown_tool_use_field_is_refused_by_name(
    upstream: UpstreamStandin, ant: anthropic.Anthropic
) -> None:
    odd = [
        MARKED[0],
        {"role": "assistant", "content": [{**MARKED[1]["content"][0], "colour": "red"}]},
        MARKED[2],
    ]  # type: ignore[index]
    with pytest.raises(anthropic.BadRequestError) as exc:
        ant.messages.create(model="an", max_tokens=64, tools=[TOOL], messages=odd)  # type: ignore[arg-type]
    assert "messages[1].content[0].colour" in exc.value.message
    assert upstream.requests() == []


def _with_caller(stream: bool) -> Any:
    ex = tool_call_answer("anthropic_messages", [Call("toolu_9", "fetch")], stream=stream)
    caller = json.dumps(CALLER).encode()
    body = ex.body.replace(b'"input": {}}', b'"input": {}, "caller": ' + caller + b"}")
    return replay(replace(ex, body=body))


@pytest.mark.parametrize("stream", [False, True])
def test_an_answers_tool_use_caller_reaches_the_anthropic_client(
    stream: bool, upstream: UpstreamStandin, ant: anthropic.Anthropic
) -> None:
    upstream.script(_with_caller(stream))
    if stream:
        with ant.messages.stream(model="an", max_tokens=64, tools=[TOOL], messages=USER) as s:  # type: ignore[arg-type,list-item]
            message = s.get_final_message()
    else:
        message = ant.messages.create(model="an", max_tokens=64, tools=[TOOL], messages=USER)  # type: ignore[arg-type,list-item]
    (call,) = [b for b in message.content if b.type == "tool_use"]
    assert call.to_dict()["caller"] == CALLER


# ---------------------------------------------------------------------------- pause_turn


@pytest.mark.parametrize("stream", [False, True])
def test_pause_turn_reaches_an_anthropic_client_as_pause_turn(
    stream: bool, upstream: UpstreamStandin, ant: anthropic.Anthropic
) -> None:
    paused = tool_call_answer("anthropic_messages", [], stream=stream, stop="pause_turn", text="Searching...")
    upstream.script(replay(paused))
    if stream:
        with ant.messages.stream(model="an", max_tokens=64, messages=USER) as s:  # type: ignore[arg-type]
            message = s.get_final_message()
    else:
        message = ant.messages.create(model="an", max_tokens=64, messages=USER)  # type: ignore[arg-type]
    assert message.stop_reason == "pause_turn"


def test_pause_turn_is_a_plain_stop_for_an_openai_client(
    upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    paused = tool_call_answer("anthropic_messages", [], stream=False, stop="pause_turn", text="Searching...")
    upstream.script(replay(paused))
    answer = oai.chat.completions.create(model="an", messages=USER)  # type: ignore[arg-type]
    assert answer.choices[0].finish_reason == "stop"
