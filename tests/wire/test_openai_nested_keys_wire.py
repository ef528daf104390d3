"""Object keys inside an OpenAI Chat or Responses request (issue 14, findings 4-7, 13, 15),
driven by the official SDK and asserted on what reached the upstream stand-in: a key the
parser does not read never vanishes. Keys of a message or a tool entry reach an upstream of
the client's own wire API on that message or tool, and toward another wire API are dropped and
named (serving-only ones) or refused by name; any other unknown key (on a content part, a tool
call, ``tool_choice``, ...) is refused by name with nothing sent upstream."""

from __future__ import annotations

from typing import Any

import openai
import pytest
from standins.tool_answers import text_answer
from standins.upstream import UpstreamStandin, replay

API_OF = {"an": "anthropic_messages", "oa": "openai_chat", "rs": "openai_responses", "ge": "gemini"}
FN = {"name": "f", "description": "F.", "parameters": {"type": "object", "properties": {}}}
CALL = {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}


def _answer(target: str) -> Any:
    return replay(text_answer(API_OF[target], "ok", stream=False))


def _user(part: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"role": "user", "content": [part]}]


def _with_call(call: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": "ok"},
    ]


# (the path the 400 must name, the create() keyword arguments that put an unknown key there)
CHAT_UNKNOWN: list[tuple[str, dict[str, Any]]] = [
    ("messages[0].content[0].colour", {"messages": _user({"type": "text", "text": "hi", "colour": "red"})}),
    (
        "messages[0].content[0].image_url.colour",
        {
            "messages": _user(
                {"type": "image_url", "image_url": {"url": "https://example.com/a.png", "colour": "red"}}
            )
        },
    ),
    ("messages[1].tool_calls[0].colour", {"messages": _with_call({**CALL, "colour": "red"})}),
    (
        "messages[1].tool_calls[0].function.colour",
        {"messages": _with_call({**CALL, "function": {"name": "f", "arguments": "{}", "colour": "red"}})},
    ),
    (
        "tools[0].function.colour",
        {
            "messages": [{"role": "user", "content": "hi"}],
            "tools": [{"type": "function", "function": {**FN, "colour": 1}}],
        },
    ),
    (
        "tool_choice.colour",
        {
            "messages": [{"role": "user", "content": "hi"}],
            "tools": [{"type": "function", "function": FN}],
            "tool_choice": {"type": "function", "function": {"name": "f"}, "colour": 1},
        },
    ),
    (
        "response_format.json_schema.colour",
        {
            "messages": [{"role": "user", "content": "hi"}],
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": "x", "schema": {}, "colour": 1},
            },
        },
    ),
    (
        "stream_options.colour",
        {"messages": [{"role": "user", "content": "hi"}], "stream": True, "stream_options": {"colour": 1}},
    ),
]


@pytest.mark.parametrize(("path", "kwargs"), CHAT_UNKNOWN, ids=[p for p, _ in CHAT_UNKNOWN])
@pytest.mark.parametrize("target", ["oa", "an"])
def test_an_unknown_nested_chat_key_is_refused_by_name_on_every_target(
    target: str, path: str, kwargs: dict[str, Any], upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    with pytest.raises(openai.BadRequestError) as exc:
        oai.chat.completions.create(model=target, **kwargs)
    assert exc.value.body["param"] == path  # type: ignore[index]
    assert path in exc.value.message
    assert upstream.requests() == []


AUDIO_TURN = [
    {"role": "user", "content": "Say hi."},
    {"role": "assistant", "audio": {"id": "audio_abc"}},
    {"role": "user", "content": "Again."},
]


def test_an_assistant_audio_reference_reaches_openai_chat_on_its_message(
    upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    upstream.script(_answer("oa"))
    raw = oai.chat.completions.with_raw_response.create(model="oa", messages=AUDIO_TURN)  # type: ignore[arg-type]
    assert "x-turnstile-dropped" not in raw.headers
    (got,) = upstream.requests()
    assert got.body["messages"][1] == {"role": "assistant", "audio": {"id": "audio_abc"}}


@pytest.mark.parametrize("target", ["an", "rs", "ge"])
def test_an_assistant_audio_reference_toward_another_api_is_dropped_and_named(
    target: str, upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    upstream.script(_answer(target))
    raw = oai.chat.completions.with_raw_response.create(model=target, messages=AUDIO_TURN)  # type: ignore[arg-type]
    assert raw.headers["x-turnstile-dropped"] == "messages[1].audio"
    (got,) = upstream.requests()
    assert "audio_abc" not in str(got.body)


PREFIX_TURN = [
    {"role": "user", "content": "Write a haiku."},
    {"role": "assistant", "content": "Autumn", "prefix": True},
]


def test_a_vendor_key_on_a_message_reaches_openai_chat_on_that_message(
    upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    upstream.script(_answer("oa"))
    oai.chat.completions.create(model="oa", messages=PREFIX_TURN)  # type: ignore[arg-type]
    (got,) = upstream.requests()
    assert got.body["messages"][1] == {"role": "assistant", "content": "Autumn", "prefix": True}


@pytest.mark.parametrize("target", ["an", "rs", "ge"])
def test_a_vendor_key_on_a_message_toward_another_api_is_refused_by_name(
    target: str, upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    turn = [PREFIX_TURN[0], {"role": "assistant", "content": "Autumn", "x_rank": 2}, PREFIX_TURN[0]]
    with pytest.raises(openai.BadRequestError) as exc:
        oai.chat.completions.create(model=target, messages=turn)  # type: ignore[arg-type]
    assert exc.value.body["param"] == "messages[1].x_rank"  # type: ignore[index]
    assert upstream.requests() == []  # (a prefix: true prefill: tests/wire/test_prefill_wire.py)


TOOL_EXTRAS = [{"type": "function", "function": FN, "eager_input_streaming": True, "x_rank": 2}]


def test_a_tool_entrys_own_keys_reach_openai_chat_on_that_tool(
    upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    upstream.script(_answer("oa"))
    oai.chat.completions.create(model="oa", messages=[{"role": "user", "content": "hi"}], tools=TOOL_EXTRAS)  # type: ignore[list-item]
    (got,) = upstream.requests()
    (tool,) = got.body["tools"]
    assert (tool["eager_input_streaming"], tool["x_rank"], tool["function"]["name"]) == (True, 2, "f")


def test_a_tool_entrys_own_keys_toward_another_api_are_refused_or_dropped_by_name(
    upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    with pytest.raises(openai.BadRequestError) as exc:
        oai.chat.completions.create(
            model="an", messages=[{"role": "user", "content": "hi"}], tools=TOOL_EXTRAS
        )  # type: ignore[list-item]
    assert exc.value.body["param"] == "tools[0].x_rank"  # type: ignore[index]
    assert upstream.requests() == []
    upstream.script(_answer("an"))
    serving_only = [{"type": "function", "function": FN, "eager_input_streaming": True}]
    raw = oai.chat.completions.with_raw_response.create(
        model="an",
        messages=[{"role": "user", "content": "hi"}],
        tools=serving_only,  # type: ignore[arg-type]
    )
    assert raw.headers["x-turnstile-dropped"] == "tools[0].eager_input_streaming"
    (got,) = upstream.requests()
    assert "eager_input_streaming" not in got.body["tools"][0]


def test_a_tool_calls_cache_mark_reaches_claude_on_its_tool_use_block(
    upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    upstream.script(_answer("an"))
    oai.chat.completions.create(
        model="an",
        messages=_with_call({**CALL, "cache_control": {"type": "ephemeral"}}),  # type: ignore[arg-type]
    )
    (got,) = upstream.requests()
    (block,) = [b for m in got.body["messages"] for b in m["content"] if b["type"] == "tool_use"]
    assert block["cache_control"] == {"type": "ephemeral"}


# ---------------------------------------------------------------------------- Responses

RS_FN = {
    "type": "function",
    "name": "f",
    "description": "F.",
    "parameters": {"type": "object", "properties": {}},
}
RS_CALL = {"type": "function_call", "call_id": "call_1", "name": "f", "arguments": "{}"}
RS_UNKNOWN: list[tuple[str, dict[str, Any]]] = [
    ("input[0].colour", {"input": [{"role": "user", "content": "hi", "colour": 1}]}),
    (
        "input[0].content[0].colour",
        {"input": [{"role": "user", "content": [{"type": "input_text", "text": "hi", "colour": 1}]}]},
    ),
    (
        "input[1].colour",
        {"input": [{"role": "user", "content": "hi"}, {**RS_CALL, "colour": 1}]},
    ),
    (
        "input[2].colour",
        {
            "input": [
                {"role": "user", "content": "hi"},
                RS_CALL,
                {"type": "function_call_output", "call_id": "call_1", "output": "ok", "colour": 1},
            ]
        },
    ),
    ("tools[0].colour", {"input": "hi", "tools": [{**RS_FN, "colour": 1}]}),
]


@pytest.mark.parametrize(("path", "kwargs"), RS_UNKNOWN, ids=[p for p, _ in RS_UNKNOWN])
@pytest.mark.parametrize("target", ["rs", "oa"])
def test_an_unknown_nested_responses_key_is_refused_by_name_on_every_target(
    target: str, path: str, kwargs: dict[str, Any], upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    with pytest.raises(openai.BadRequestError) as exc:
        oai.responses.create(model=target, **kwargs)
    assert exc.value.body["param"] == path  # type: ignore[index]
    assert upstream.requests() == []


RS_TOOL_OWN = {
    **RS_FN,
    "defer_loading": True,
    "output_schema": {"type": "object"},
    "allowed_callers": ["direct"],
}


def test_a_responses_tools_own_keys_reach_a_responses_upstream_on_that_tool(
    upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    upstream.script(_answer("rs"))
    raw = oai.responses.with_raw_response.create(model="rs", input="hi", tools=[RS_TOOL_OWN])  # type: ignore[list-item]
    assert "x-turnstile-dropped" not in raw.headers
    (got,) = upstream.requests()
    (tool,) = got.body["tools"]
    assert {k: tool[k] for k in ("name", "defer_loading", "output_schema", "allowed_callers")} == {
        "name": "f",
        "defer_loading": True,
        "output_schema": {"type": "object"},
        "allowed_callers": ["direct"],
    }


@pytest.mark.parametrize("target", ["oa", "an", "ge"])
def test_a_responses_tools_own_keys_toward_another_api_are_dropped_and_named(
    target: str, upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    upstream.script(_answer(target))
    raw = oai.responses.with_raw_response.create(model=target, input="hi", tools=[RS_TOOL_OWN])  # type: ignore[list-item]
    assert raw.headers["x-turnstile-dropped"] == (
        "tools[0].defer_loading,tools[0].output_schema,tools[0].allowed_callers"
    )
    (got,) = upstream.requests()
    assert "defer_loading" not in str(got.body) and "allowed_callers" not in str(got.body)


# ---------------------------------------------------------------------------- part keys

BREAK = {"ttl": "1h"}
PDF_URI = "data:application/pdf;base64,JVBERi0xLjQKJSVFT0YK"


def test_a_chat_text_parts_cache_breakpoint_reaches_openai_chat_on_that_part(
    upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    upstream.script(_answer("oa"))
    raw = oai.chat.completions.with_raw_response.create(
        model="oa",
        messages=[
            {
                "role": "system",
                "content": [{"type": "text", "text": "Rules.", "prompt_cache_breakpoint": BREAK}],
            },
            {"role": "user", "content": [{"type": "text", "text": "hi", "prompt_cache_breakpoint": BREAK}]},
        ],
    )
    assert "x-turnstile-dropped" not in raw.headers
    (got,) = upstream.requests()
    assert [m["content"] for m in got.body["messages"]] == [
        [{"type": "text", "text": "Rules.", "prompt_cache_breakpoint": BREAK}],
        [{"type": "text", "text": "hi", "prompt_cache_breakpoint": BREAK}],
    ]


@pytest.mark.parametrize("target", ["an", "rs", "ge"])
def test_a_chat_text_parts_cache_breakpoint_toward_another_api_is_dropped_and_named(
    target: str, upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    upstream.script(_answer(target))
    raw = oai.chat.completions.with_raw_response.create(
        model=target,
        messages=[
            {"role": "user", "content": [{"type": "text", "text": "hi", "prompt_cache_breakpoint": BREAK}]}
        ],
    )
    assert raw.headers["x-turnstile-dropped"] == "messages[0].content[0].prompt_cache_breakpoint"
    (got,) = upstream.requests()
    assert "prompt_cache_breakpoint" not in str(got.body)


RS_PARTS = [
    {
        "role": "user",
        "content": [
            {"type": "input_text", "text": "Read it.", "prompt_cache_breakpoint": BREAK},
            {"type": "input_file", "file_data": PDF_URI, "filename": "a.pdf", "detail": "high"},
        ],
    }
]


def test_a_responses_parts_own_keys_reach_a_responses_upstream_on_those_parts(
    upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    upstream.script(_answer("rs"))
    raw = oai.responses.with_raw_response.create(model="rs", input=RS_PARTS)  # type: ignore[arg-type]
    assert "x-turnstile-dropped" not in raw.headers
    (got,) = upstream.requests()
    text, doc = got.body["input"][0]["content"]
    assert text == {"type": "input_text", "text": "Read it.", "prompt_cache_breakpoint": BREAK}
    assert (doc["type"], doc["detail"], doc["filename"]) == ("input_file", "high", "a.pdf")


def test_a_responses_parts_own_keys_toward_another_api_are_dropped_and_named(
    upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    upstream.script(_answer("oa"))
    raw = oai.responses.with_raw_response.create(model="oa", input=RS_PARTS)  # type: ignore[arg-type]
    assert raw.headers["x-turnstile-dropped"] == (
        "input[0].content[0].prompt_cache_breakpoint,input[0].content[1].detail"
    )
    (got,) = upstream.requests()
    assert "prompt_cache_breakpoint" not in str(got.body) and "'detail'" not in str(got.body)


ANNOTATION = {
    "type": "url_citation",
    "url": "https://example.com",
    "title": "Ex",
    "start_index": 0,
    "end_index": 2,
}
RS_ITEMS = [
    {"role": "user", "content": "Look it up."},
    {
        "type": "message",
        "role": "assistant",
        "id": "msg_1",
        "status": "completed",
        "phase": "final_answer",
        "content": [{"type": "output_text", "text": "Ex says hi.", "annotations": [ANNOTATION]}],
    },
    {**RS_CALL, "id": "fc_1", "status": "completed", "caller": {"type": "direct"}, "async": True},
    {"type": "function_call_output", "call_id": "call_1", "output": "ok", "status": "incomplete"},
    {"role": "user", "content": "Thanks."},
]
RS_MESSAGE_SENT = {
    "type": "message",
    "role": "assistant",
    "phase": "final_answer",
    "content": [{"type": "output_text", "text": "Ex says hi.", "annotations": [ANNOTATION]}],
}
RS_CALL_SENT = {**RS_CALL, "async": True}  # status completed and a direct caller ask for nothing


def test_a_responses_items_own_keys_reach_a_responses_upstream_on_those_items(
    upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    upstream.script(_answer("rs"))
    raw = oai.responses.with_raw_response.create(model="rs", input=RS_ITEMS, tools=[RS_FN], store=False)  # type: ignore[arg-type, list-item]
    assert "x-turnstile-dropped" not in raw.headers
    (got,) = upstream.requests()
    message, call, output = got.body["input"][1:4]
    assert message == RS_MESSAGE_SENT
    assert call == RS_CALL_SENT
    assert (output["type"], output["status"]) == ("function_call_output", "incomplete")


def test_a_stored_turns_items_own_keys_reach_a_responses_upstream_from_the_session_log(
    upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    upstream.script(_answer("rs"), _answer("rs"))
    first = oai.responses.create(model="rs", input=RS_ITEMS, tools=[RS_FN])  # type: ignore[arg-type, list-item]
    oai.responses.create(model="rs", input="And then?", previous_response_id=first.id, tools=[RS_FN])  # type: ignore[list-item]
    stored, rebuilt = upstream.requests()
    # both turns' contexts are rebuilt from the log: the first turn's items keep their own keys
    for got in (stored, rebuilt):
        message, call, output = got.body["input"][1:4]
        assert message == RS_MESSAGE_SENT
        assert call == RS_CALL_SENT
        assert (output["type"], output["status"]) == ("function_call_output", "incomplete")
    assert rebuilt.body["input"][-1]["content"] == "And then?"


def test_an_earlier_turns_own_keys_toward_another_api_are_dropped_and_named_as_history(
    upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    upstream.script(_answer("rs"), _answer("oa"))
    first = oai.responses.create(model="rs", input=RS_ITEMS, tools=[RS_FN])  # type: ignore[arg-type, list-item]
    raw = oai.responses.with_raw_response.create(
        model="oa",
        input="And then?",
        previous_response_id=first.id,
        tools=[RS_FN],  # type: ignore[list-item]
    )
    assert raw.headers["x-turnstile-dropped"] == (
        "history.annotations,history.phase,history.async,history.status"
    )
    _, got = upstream.requests()
    assert "final_answer" not in str(got.body) and "url_citation" not in str(got.body)


def test_a_program_caller_on_a_responses_call_is_refused_toward_another_api_by_its_path(
    upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    items = [*RS_ITEMS[:2], {**RS_CALL, "caller": {"type": "program", "caller_id": "ci_1"}}, *RS_ITEMS[3:]]
    with pytest.raises(openai.BadRequestError) as err:
        oai.responses.create(model="oa", input=items, tools=[RS_FN])  # type: ignore[arg-type, list-item]
    assert "input[2].caller" in str(err.value)
    assert upstream.requests() == []
    upstream.script(_answer("rs"))
    oai.responses.create(model="rs", input=items, tools=[RS_FN], store=False)  # type: ignore[arg-type, list-item]
    (got,) = upstream.requests()
    assert got.body["input"][2]["caller"] == {"type": "program", "caller_id": "ci_1"}


def test_a_responses_items_own_keys_toward_another_api_are_dropped_and_named(
    upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    upstream.script(_answer("oa"))
    raw = oai.responses.with_raw_response.create(model="oa", input=RS_ITEMS, tools=[RS_FN])  # type: ignore[arg-type, list-item]
    assert raw.headers["x-turnstile-dropped"] == (
        "input[1].content[0].annotations,input[1].phase,input[2].async,input[3].status"
    )
    (got,) = upstream.requests()
    assert "final_answer" not in str(got.body) and "url_citation" not in str(got.body)


def test_an_assistants_reasoning_content_reaches_openai_chat_on_its_message(
    upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    upstream.script(_answer("oa"))
    turn = [
        {"role": "user", "content": "2+2?"},
        {"role": "assistant", "content": "4", "reasoning_content": "Two and two make four."},
        {"role": "user", "content": "And 3+3?"},
    ]
    raw = oai.chat.completions.with_raw_response.create(model="oa", messages=turn)  # type: ignore[arg-type]
    assert "x-turnstile-dropped" not in raw.headers
    (got,) = upstream.requests()
    assert got.body["messages"][1] == {
        "role": "assistant",
        "content": "4",
        "reasoning_content": "Two and two make four.",
    }


def test_a_responses_system_parts_cache_breakpoint_reaches_a_responses_upstream_on_that_part(
    upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    upstream.script(_answer("rs"))
    part = {"type": "input_text", "text": "Rules.", "prompt_cache_breakpoint": BREAK}
    oai.responses.create(
        model="rs",
        input=[{"role": "developer", "content": [part]}, {"role": "user", "content": "hi"}],  # type: ignore[list-item]
        store=False,
    )
    (got,) = upstream.requests()
    assert got.body["input"][0] == {"role": "developer", "content": [part]}


def test_a_leading_system_parts_cache_breakpoint_keeps_it_in_place_as_a_system_item(
    upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    upstream.script(_answer("rs"))
    part = {"type": "input_text", "text": "Rules.", "prompt_cache_breakpoint": BREAK}
    oai.responses.create(
        model="rs",
        input=[{"role": "system", "content": [part]}, {"role": "user", "content": "hi"}],  # type: ignore[list-item]
        store=False,
    )
    (got,) = upstream.requests()
    assert "instructions" not in got.body
    assert got.body["input"][0] == {"role": "system", "content": [part]}
