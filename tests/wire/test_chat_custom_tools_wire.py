"""An OpenAI Chat client's ``custom`` tools (free-form input, optional grammar) and
``allowed_tools`` tool choice, carried to every upstream (issue 14): natively to an OpenAI Chat
and a Responses upstream, elsewhere as the emulation every upstream understands (a function
with one string argument ``input``; only the allowed tools offered); the model's call comes
back to the client as a ``custom`` tool call, whole and streamed. Asserted on what reached the
upstream stand-in and on what the official SDK parsed."""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest
from standins.recordings import json_exchange, stream_exchange
from standins.tool_answers import text_answer
from standins.topology import MATRIX
from standins.upstream import UpstreamStandin, replay

OA = MATRIX["openai_chat"][0]
RS = MATRIX["openai_responses"][0]
AN = MATRIX["anthropic_messages"][0]
GE = MATRIX["gemini"][0]
GRAMMAR = {"definition": 'start: "ls" | "pwd"', "syntax": "lark"}
TOOLS: Any = [
    {
        "type": "custom",
        "custom": {
            "name": "shell",
            "description": "Run it.",
            "format": {"type": "grammar", "grammar": GRAMMAR},
        },
    },
    {"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}},
]
ALLOWED: Any = {
    "type": "allowed_tools",
    "allowed_tools": {"mode": "required", "tools": [{"type": "custom", "custom": {"name": "shell"}}]},
}
USER = [{"role": "user", "content": "where am I?"}]


def _chat_custom_call(stream: bool) -> Any:
    call = {"id": "call_1", "type": "custom", "custom": {"name": "shell", "input": "pwd"}}
    if not stream:
        return json_exchange(
            {
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "created": 1,
                "model": "gpt-4o-mini",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": None, "tool_calls": [call]},
                        "finish_reason": "tool_calls",
                    }
                ],
                "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7},
            }
        )
    base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o-mini"}
    first = {"index": 0, "id": "call_1", "type": "custom", "custom": {"name": "shell", "input": "p"}}
    chunks = [
        base | {"choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": [first]}}]},
        base
        | {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "custom": {"input": "wd"}}]}}]},
        base | {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        base | {"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}},
    ]
    return stream_exchange("openai_chat", chunks)


def _responses_custom_call() -> Any:
    return json_exchange(
        {
            "id": "resp_1",
            "object": "response",
            "created_at": 1,
            "status": "completed",
            "model": "gpt-4o-mini",
            "output": [
                {
                    "type": "custom_tool_call",
                    "id": "ctc_1",
                    "call_id": "call_1",
                    "name": "shell",
                    "input": "pwd",
                }
            ],
            "usage": {"input_tokens": 5, "output_tokens": 2, "total_tokens": 7},
        }
    )


def _custom_call(message: Any) -> tuple[str, str]:
    (call,) = message.tool_calls
    assert call.type == "custom"
    return call.custom.name, call.custom.input


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_custom_tools_reach_a_chat_upstream_natively_and_the_call_comes_back_custom(
    stream: bool, upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    upstream.script(replay(_chat_custom_call(stream)))
    if stream:
        chunks = list(
            oai.chat.completions.create(
                model=OA, messages=USER, tools=TOOLS, tool_choice=ALLOWED, stream=True
            )
        )
        deltas = [tc for c in chunks if c.choices for tc in (c.choices[0].delta.tool_calls or [])]
        # the SDK's delta type has no custom field yet: it keeps the chunk's object as a dict
        assert [(d.type, d.custom["name"], d.custom["input"]) for d in deltas] == [("custom", "shell", "pwd")]  # type: ignore[attr-defined]
    else:
        out = oai.chat.completions.create(model=OA, messages=USER, tools=TOOLS, tool_choice=ALLOWED)
        assert _custom_call(out.choices[0].message) == ("shell", "pwd")
    (got,) = upstream.requests()
    assert got.body["tools"][0] == TOOLS[0]
    assert got.body["tool_choice"] == ALLOWED


def test_custom_tools_reach_a_responses_upstream_natively(
    upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    upstream.script(replay(_responses_custom_call()))
    out = oai.chat.completions.create(model=RS, messages=USER, tools=TOOLS, tool_choice=ALLOWED)
    assert _custom_call(out.choices[0].message) == ("shell", "pwd")
    (got,) = upstream.requests()
    assert got.body["tools"][0] == {
        "type": "custom",
        "name": "shell",
        "description": "Run it.",
        "format": {"type": "grammar", **GRAMMAR},
    }
    assert got.body["tool_choice"] == {
        "type": "allowed_tools",
        "mode": "required",
        "tools": [{"type": "custom", "name": "shell"}],
    }


def test_a_custom_call_sent_back_reaches_each_upstream_in_its_form(
    upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    history: Any = [
        *USER,
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "call_1", "type": "custom", "custom": {"name": "shell", "input": "pwd"}}],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "/home"},
    ]
    for model, api in ((OA, "openai_chat"), (RS, "openai_responses"), (AN, "anthropic_messages")):
        upstream.reset()
        upstream.script(replay(text_answer(api, "You are in /home.", stream=False)))
        oai.chat.completions.create(model=model, messages=history, tools=TOOLS)
        body = upstream.requests()[0].body
        if api == "openai_chat":
            assert body["messages"][1]["tool_calls"][0]["custom"] == {"name": "shell", "input": "pwd"}
        elif api == "openai_responses":
            (item,) = [i for i in body["input"] if i.get("type") == "custom_tool_call"]
            assert item["input"] == "pwd"
        else:
            (use,) = [b for b in body["messages"][1]["content"] if b["type"] == "tool_use"]
            assert use["input"] == {"input": "pwd"}


@pytest.mark.parametrize("model", [AN, GE])
def test_allowed_tools_toward_an_api_without_them_offer_only_the_allowed_tools(
    model: str, upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    api = "anthropic_messages" if model == AN else "gemini"
    upstream.script(replay(text_answer(api, "ok", stream=False)))
    oai.chat.completions.create(model=model, messages=USER, tools=TOOLS, tool_choice=ALLOWED)
    body = upstream.requests()[0].body
    if api == "anthropic_messages":
        assert [t["name"] for t in body["tools"]] == ["shell"]
        assert body["tools"][0]["input_schema"]["required"] == ["input"]  # the emulation
        assert body["tool_choice"] == {"type": "any"}
    else:
        (decl,) = body["tools"][0]["functionDeclarations"]
        assert decl["name"] == "shell"
        assert body["toolConfig"]["functionCallingConfig"]["mode"] == "ANY"


def test_allowed_tools_naming_an_unknown_tool_is_refused_by_name(
    upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    bad = json.loads(json.dumps(ALLOWED))
    bad["allowed_tools"]["tools"][0]["custom"]["name"] = "nope"
    with pytest.raises(openai.BadRequestError) as exc:
        oai.chat.completions.create(model=OA, messages=USER, tools=TOOLS, tool_choice=bad)
    assert "nope" in exc.value.message
    assert upstream.requests() == []
