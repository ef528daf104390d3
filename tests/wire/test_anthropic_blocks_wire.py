"""Keys on Anthropic content blocks and nested objects through the gateway (issue 14 findings
1, 3, 14; ``gateway/edges/anthropic_messages_blocks.py``), driven by the official SDK and
asserted on what reached the upstream stand-in: the keys the SDK's types define reach Claude
as sent (image ``transformations``, ``toolset_name`` on ``tool_use`` and ``tool_result``,
``thinking.display``) and toward another wire API are dropped and named in
``x-turnstile-dropped``; any other key is refused by name with nothing sent upstream."""

from __future__ import annotations

import base64
import copy
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import anthropic
import pytest
from standins.tool_answers import Call, text_answer, tool_call_answer
from standins.upstream import UpstreamStandin, replay
from standins.wirekit import transcript_row

API_OF = {"an": "anthropic_messages", "oa": "openai_chat", "rs": "openai_responses", "ge": "gemini"}
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x00" * 16).decode()
TOOL = {"name": "fetch", "description": "Fetch a file.", "input_schema": {"type": "object", "properties": {}}}
OVERSIZED = {"oversized_image": "error"}
CONVERSATION: list[dict[str, Any]] = [
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "Sum the sales in this chart."},
            {
                "type": "image",
                "source": {"type": "base64", "media_type": "image/png", "data": PNG},
                "transformations": OVERSIZED,
            },
        ],
    },
    {
        "role": "assistant",
        "content": [
            {"type": "tool_use", "id": "toolu_1", "name": "fetch", "input": {}, "toolset_name": "files"}
        ],
    },
    {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "[1, 2]", "toolset_name": "files"}
        ],
    },
]
SDK_KEYS = [
    "messages[0].content[1].transformations",
    "messages[1].content[0].toolset_name",
    "messages[2].content[0].toolset_name",
]


def _answer(target: str) -> Any:
    return replay(text_answer(API_OF[target], "ok", stream=False))


def test_sdk_block_keys_reach_claude_as_sent_with_nothing_named(
    upstream: UpstreamStandin, ant: anthropic.Anthropic
) -> None:
    upstream.script(_answer("an"))
    raw = ant.messages.with_raw_response.create(
        model="an",
        max_tokens=64,
        tools=[TOOL],
        messages=CONVERSATION,  # type: ignore[arg-type]
    )
    assert "x-turnstile-dropped" not in raw.headers or not set(SDK_KEYS) & set(
        raw.headers["x-turnstile-dropped"].split(",")
    )
    (got,) = upstream.requests()
    image = got.body["messages"][0]["content"][1]
    assert image["transformations"] == OVERSIZED and image["source"]["data"] == PNG
    assert got.body["messages"][1]["content"][0]["toolset_name"] == "files"
    assert got.body["messages"][2]["content"][0]["toolset_name"] == "files"


@pytest.mark.parametrize("target", ["oa", "rs", "ge"])
def test_sdk_block_keys_toward_another_api_are_dropped_and_named(
    target: str, upstream: UpstreamStandin, ant: anthropic.Anthropic, db_path: Path
) -> None:
    upstream.script(_answer(target))
    raw = ant.messages.with_raw_response.create(
        model=target,
        max_tokens=64,
        tools=[TOOL],
        messages=CONVERSATION,  # type: ignore[arg-type]
    )
    assert set(SDK_KEYS) <= set(raw.headers["x-turnstile-dropped"].split(","))
    (got,) = upstream.requests()
    sent = json.dumps(got.body)
    assert "oversized_image" not in sent and "toolset_name" not in sent and "files" not in sent
    assert PNG in sent  # the image itself is carried
    row = transcript_row(db_path, raw.headers["x-turnstile-request-id"])
    fields = {n["field"] for n in json.loads(row["repairs"]) if n.get("kind") == "dropped"}
    assert set(SDK_KEYS) <= fields


def test_thinking_display_reaches_claude_and_is_dropped_and_named_elsewhere(
    upstream: UpstreamStandin, ant: anthropic.Anthropic
) -> None:
    thinking = {"type": "enabled", "budget_tokens": 1024, "display": "omitted"}
    upstream.script(_answer("an"), _answer("oa"))
    prompt = [{"role": "user", "content": "hello"}]
    ant.messages.create(model="an", max_tokens=2048, thinking=thinking, messages=prompt)  # type: ignore[arg-type]
    raw = ant.messages.with_raw_response.create(
        model="oa",
        max_tokens=2048,
        thinking=thinking,
        messages=prompt,  # type: ignore[arg-type]
    )
    claude, gpt = upstream.requests()
    assert claude.body["thinking"] == thinking
    assert "omitted" not in json.dumps(gpt.body)
    assert "thinking.display" in raw.headers["x-turnstile-dropped"].split(",")


def _with(path: list[Any], key: str, base: dict[str, Any]) -> dict[str, Any]:
    """``base`` (deep-copied) with ``key: "odd"`` set on the object at ``path``."""
    body = copy.deepcopy(base)
    obj: Any = body
    for step in path:
        obj = obj[step]
    obj[key] = "odd"
    return body


BASE: dict[str, Any] = {
    "system": [{"type": "text", "text": "Be brief."}],
    "messages": CONVERSATION,
    "tool_choice": {"type": "auto"},
    "metadata": {"user_id": "u-1"},
    "thinking": {"type": "enabled", "budget_tokens": 1024},
    "tools": [TOOL],
    "output_config": {"effort": "high", "format": {"type": "json_schema", "schema": {"type": "object"}}},
}
BASE["messages"] = copy.deepcopy(CONVERSATION)
BASE["messages"][0]["content"].append(
    {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "Q3: 12"}}
)
UNKNOWN = [
    (["system", 0], "system[0].colour"),
    (["messages", 0, "content", 0], "messages[0].content[0].colour"),
    (["messages", 0, "content", 1], "messages[0].content[1].colour"),
    (["messages", 0, "content", 1, "source"], "messages[0].content[1].source.colour"),
    (["messages", 2, "content", 0], "messages[2].content[0].colour"),
    (["tool_choice"], "tool_choice.colour"),
    (["metadata"], "metadata.colour"),
    (["thinking"], "thinking.colour"),
    (["output_config"], "output_config.colour"),
    (["output_config", "format"], "output_config.format.colour"),
    (["messages", 0, "content", 2], "messages[0].content[2].colour"),
    (["messages", 0, "content", 2, "source"], "messages[0].content[2].source.colour"),
]


@pytest.mark.parametrize(("path", "named"), UNKNOWN, ids=[n for _, n in UNKNOWN])
def test_an_unknown_key_on_a_block_or_nested_object_is_refused_by_name(
    path: list[Any], named: str, upstream: UpstreamStandin, ant: anthropic.Anthropic
) -> None:
    body = _with(path, "colour", BASE)
    with pytest.raises(anthropic.BadRequestError) as exc:
        ant.messages.create(model="an", max_tokens=2048, **body)
    assert named in exc.value.message
    assert upstream.requests() == []


def test_an_unknown_key_on_a_thinking_block_or_a_tool_result_text_is_refused_by_name(
    upstream: UpstreamStandin, ant: anthropic.Anthropic
) -> None:
    turns = [
        {"role": "user", "content": "Sum the sales."},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "hm", "signature": "sig", "colour": "red"},
                {"type": "tool_use", "id": "toolu_1", "name": "fetch", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_1",
                    "content": [{"type": "text", "text": "[1]", "colour": "red"}],
                }
            ],
        },
    ]
    with pytest.raises(anthropic.BadRequestError) as exc:
        ant.messages.create(model="an", max_tokens=64, tools=[TOOL], messages=turns)  # type: ignore[arg-type]
    assert "messages[1].content[0].colour" in exc.value.message
    turns[1]["content"][0].pop("colour")  # type: ignore[index,union-attr]
    with pytest.raises(anthropic.BadRequestError) as exc:
        ant.messages.create(model="an", max_tokens=64, tools=[TOOL], messages=turns)  # type: ignore[arg-type]
    assert "messages[2].content[0].content[0].colour" in exc.value.message
    assert upstream.requests() == []


@pytest.mark.parametrize("target", ["an", "ge", "oa", "rs"])
def test_top_k_reaches_claude_and_gemini_and_is_dropped_and_named_toward_openai(
    target: str, upstream: UpstreamStandin, ant: anthropic.Anthropic, db_path: Path
) -> None:
    upstream.script(_answer(target))
    raw = ant.messages.with_raw_response.create(
        model=target,
        max_tokens=64,
        messages=[{"role": "user", "content": "hello"}],
        extra_body={"top_k": 5},  # no longer an SDK 2.17 parameter; the API and the gateway read it
    )
    (got,) = upstream.requests()
    dropped = raw.headers.get("x-turnstile-dropped", "").split(",")
    if target == "an":
        assert got.body["top_k"] == 5 and "top_k" not in dropped
    elif target == "ge":
        assert got.body["generationConfig"]["topK"] == 5 and "top_k" not in dropped
    else:
        assert "top_k" not in json.dumps(got.body) and "top_k" in dropped
        row = transcript_row(db_path, raw.headers["x-turnstile-request-id"])
        notes = [n for n in json.loads(row["repairs"]) if n.get("field") == "top_k"]
        assert [n["values"] for n in notes] == [[5]]


def test_count_tokens_refuses_an_unknown_field_and_a_nested_unknown_key_by_name(
    upstream: UpstreamStandin, ant: anthropic.Anthropic
) -> None:
    prompt = [{"role": "user", "content": "hello"}]
    counted = ant.messages.count_tokens(model="an", messages=prompt, extra_body={"max_tokens": 64})  # type: ignore[arg-type]
    assert counted.input_tokens > 0  # a Messages field (max_tokens) is accepted: it changes no count
    with pytest.raises(anthropic.BadRequestError) as exc:
        ant.messages.count_tokens(model="an", messages=prompt, extra_body={"colour": "red"})  # type: ignore[arg-type]
    assert "colour: unknown count_tokens field" in exc.value.message
    odd = [{"role": "user", "content": [{"type": "text", "text": "hello", "colour": "red"}]}]
    with pytest.raises(anthropic.BadRequestError) as exc:
        ant.messages.count_tokens(model="an", messages=odd)  # type: ignore[arg-type]
    assert "messages[0].content[0].colour" in exc.value.message
    assert upstream.requests() == []


def test_a_task_budget_reaches_claude_in_output_config_and_is_dropped_and_named_elsewhere(
    upstream: UpstreamStandin, ant: anthropic.Anthropic
) -> None:
    budget = {"type": "tokens", "total": 20000}
    prompt = [{"role": "user", "content": "hello"}]
    upstream.script(_answer("an"), _answer("oa"))
    extra = {"output_config": {"effort": "low", "task_budget": budget}}
    ant.messages.create(model="an", max_tokens=64, messages=prompt, extra_body=extra)  # type: ignore[arg-type]
    raw = ant.messages.with_raw_response.create(model="oa", max_tokens=64, messages=prompt, extra_body=extra)  # type: ignore[arg-type]
    claude, gpt = upstream.requests()
    assert claude.body["output_config"] == {"effort": "low", "task_budget": budget}
    assert "20000" not in json.dumps(gpt.body)
    assert "output_config.task_budget" in raw.headers["x-turnstile-dropped"].split(",")


@pytest.mark.parametrize("stream", [False, True])
def test_an_answers_tool_use_toolset_name_reaches_the_anthropic_client(
    stream: bool, upstream: UpstreamStandin, ant: anthropic.Anthropic
) -> None:
    ex = tool_call_answer("anthropic_messages", [Call("toolu_9", "fetch")], stream=stream)
    body = ex.body.replace(b'"input": {}}', b'"input": {}, "toolset_name": "files"}')
    assert body != ex.body
    upstream.script(replay(replace(ex, body=body)))
    prompt = [{"role": "user", "content": "hello"}]
    if stream:
        with ant.messages.stream(model="an", max_tokens=64, tools=[TOOL], messages=prompt) as s:  # type: ignore[arg-type,list-item]
            message = s.get_final_message()
    else:
        message = ant.messages.create(model="an", max_tokens=64, tools=[TOOL], messages=prompt)  # type: ignore[arg-type,list-item]
    (call,) = [b for b in message.content if b.type == "tool_use"]
    assert call.to_dict()["toolset_name"] == "files"


def test_an_image_by_file_id_reaches_claude_and_is_refused_by_name_elsewhere(
    upstream: UpstreamStandin, ant: anthropic.Anthropic
) -> None:
    image = {"type": "image", "source": {"type": "file", "file_id": "file_011"}}
    messages: Any = [{"role": "user", "content": [image, {"type": "text", "text": "What is it?"}]}]
    upstream.script(replay(text_answer("anthropic_messages", "A cat.", stream=False)))
    ant.messages.create(model="an", max_tokens=64, messages=messages)
    (got,) = upstream.requests()
    assert got.body["messages"][0]["content"][0] == image
    upstream.reset()
    with pytest.raises(anthropic.BadRequestError) as exc:
        ant.messages.create(model="oa", max_tokens=64, messages=messages)
    assert "messages[0].content[0].source" in exc.value.message
    assert upstream.requests() == []
