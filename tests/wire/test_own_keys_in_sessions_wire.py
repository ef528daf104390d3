"""A message's own keys (keys of the client's wire API the schema has no slot for: a Chat
assistant's ``audio`` / ``reasoning_content``, a part's ``prompt_cache_breakpoint``, a Gemini
``functionResponse.response`` object) travel on the message, so a context rebuilt from the
session log still carries them to an upstream of that wire API; toward another wire API the
ones earlier turns left are named dropped as ``history.<key>`` (issue 14). Driven by the
official SDKs, asserted on what reached the upstream stand-in."""

from __future__ import annotations

from typing import Any

import openai
from google import genai
from google.genai import types as gt
from standins.tool_answers import text_answer
from standins.upstream import UpstreamStandin, replay

API_OF = {"an": "anthropic_messages", "oa": "openai_chat", "rs": "openai_responses", "ge": "gemini"}
BREAK = {"mode": "explicit"}
CALL = {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
TOOLS = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}]


def _answer(target: str) -> Any:
    return replay(text_answer(API_OF[target], "ok", stream=False))


def _session(sid: str) -> dict[str, Any]:
    return {"extra_headers": {"x-turnstile-session": sid}}


FIRST = [
    {"role": "user", "content": "2+2?"},
    {
        "role": "assistant",
        "content": "4",
        "reasoning_content": "Two and two make four.",
        "audio": {"id": "audio_1"},
    },
    {"role": "user", "content": "And 3+3?"},
]


def test_a_chat_messages_own_keys_reach_openai_chat_again_from_the_session_log(
    upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    upstream.script(_answer("oa"), _answer("oa"))
    oai.chat.completions.create(model="oa", messages=FIRST, **_session("own-keys-chat-1"))  # type: ignore[arg-type]
    # the client sends only its new message: the rest comes from the log
    raw = oai.chat.completions.with_raw_response.create(
        model="oa", messages=[{"role": "user", "content": "And 4+4?"}], **_session("own-keys-chat-1")
    )
    assert "x-turnstile-dropped" not in raw.headers
    first, second = upstream.requests()
    for got in (first, second):
        assert got.body["messages"][1] == {
            "role": "assistant",
            "content": "4",
            "reasoning_content": "Two and two make four.",
            "audio": {"id": "audio_1"},
        }
    assert [m["content"] for m in second.body["messages"][3:]] == ["ok", "And 4+4?"]


def test_an_earlier_chat_turns_own_keys_toward_anthropic_are_named_as_history(
    upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    upstream.script(_answer("oa"), _answer("an"))
    oai.chat.completions.create(model="oa", messages=FIRST, **_session("own-keys-chat-2"))  # type: ignore[arg-type]
    raw = oai.chat.completions.with_raw_response.create(
        model="an", messages=[{"role": "user", "content": "And 4+4?"}], **_session("own-keys-chat-2")
    )
    assert raw.headers["x-turnstile-dropped"] == "history.audio,history.reasoning_content,thinking"
    _, got = upstream.requests()
    assert "audio_1" not in str(got.body)


def test_a_chat_tool_result_parts_cache_breakpoint_reaches_openai_chat_on_that_part(
    upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    upstream.script(_answer("oa"))
    result = {"type": "text", "text": "r", "prompt_cache_breakpoint": BREAK}
    messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "call_1", "content": [result]},
    ]
    raw = oai.chat.completions.with_raw_response.create(model="oa", messages=messages, tools=TOOLS)  # type: ignore[arg-type]
    assert "x-turnstile-dropped" not in raw.headers
    (got,) = upstream.requests()
    assert got.body["messages"][2] == {"role": "tool", "tool_call_id": "call_1", "content": [result]}


def test_a_chat_assistant_parts_cache_breakpoint_reaches_openai_chat_on_that_part(
    upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    upstream.script(_answer("oa"))
    part = {"type": "text", "text": "Earlier answer.", "prompt_cache_breakpoint": BREAK}
    messages = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": [part]},
        {"role": "user", "content": "more"},
    ]
    oai.chat.completions.create(model="oa", messages=messages)  # type: ignore[arg-type]
    (got,) = upstream.requests()
    assert got.body["messages"][1] == {"role": "assistant", "content": [part]}


def test_a_chat_assistant_parts_cache_breakpoint_toward_anthropic_is_named_by_its_path(
    upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    upstream.script(_answer("an"))
    part = {"type": "text", "text": "Earlier answer.", "prompt_cache_breakpoint": BREAK}
    messages = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": [part]},
        {"role": "user", "content": "more"},
    ]
    raw = oai.chat.completions.with_raw_response.create(model="an", messages=messages)  # type: ignore[arg-type]
    assert raw.headers["x-turnstile-dropped"] == "messages[1].content[0].prompt_cache_breakpoint"


def test_a_chat_assistant_messages_cache_control_reaches_anthropic_on_its_last_block(
    upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    upstream.script(_answer("an"))
    messages = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": "calling",
            "tool_calls": [CALL],
            "cache_control": {"type": "ephemeral"},
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "r"},
    ]
    oai.chat.completions.create(model="an", messages=messages, tools=TOOLS)  # type: ignore[arg-type]
    (got,) = upstream.requests()
    blocks = got.body["messages"][1]["content"]
    assert [b["type"] for b in blocks] == ["text", "tool_use"]
    assert "cache_control" not in blocks[0] and blocks[1]["cache_control"] == {"type": "ephemeral"}


def test_a_gemini_clients_function_response_object_reaches_gemini_again_from_the_session_log(
    upstream: UpstreamStandin, gem: genai.Client
) -> None:
    upstream.script(_answer("ge"), _answer("ge"))
    session = gt.GenerateContentConfig(
        http_options=gt.HttpOptions(headers={"x-turnstile-session": "own-keys-ge-1"})
    )
    call = gt.Part(function_call=gt.FunctionCall(id="c1", name="weather", args={}))
    response = gt.Part(function_response=gt.FunctionResponse(id="c1", name="weather", response={"temp": 21}))
    first = [
        gt.Content(role="user", parts=[gt.Part(text="weather?")]),
        gt.Content(role="model", parts=[call]),
        gt.Content(role="user", parts=[response]),
    ]
    gem.models.generate_content(model="ge", contents=first, config=session)
    gem.models.generate_content(model="ge", contents="thanks", config=session)
    for got in upstream.requests():
        parts = [p for c in got.body["contents"] for p in c["parts"] if "functionResponse" in p]
        assert [p["functionResponse"]["response"] for p in parts] == [{"temp": 21}]


def test_the_gateways_own_metadata_key_is_not_sent_upstream(
    upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    upstream.script(_answer("oa"))
    oai.chat.completions.create(
        model="oa",
        messages=[{"role": "user", "content": "hi"}],
        metadata={"turnstile_session": "own-keys-meta-1", "team": "blue"},
    )
    (got,) = upstream.requests()
    assert got.body["metadata"] == {"team": "blue"}


def test_a_null_metadata_entry_asks_for_nothing(upstream: UpstreamStandin, gateway_url: str) -> None:
    import httpx

    upstream.script(_answer("oa"))
    body = {
        "model": "oa",
        "max_tokens": 16,
        "messages": [{"role": "user", "content": "hi"}],
        "metadata": {"user_id": None},
    }
    resp = httpx.post(f"{gateway_url}/v1/messages", json=body, headers={"x-api-key": "k"}, timeout=15)
    assert resp.status_code == 200 and "x-turnstile-dropped" not in resp.headers
