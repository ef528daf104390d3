"""The OpenAI Responses edge over the wire, driven by the official ``openai`` SDK
(``client.responses``) against the upstream stand-in: the SDK's own helpers (``stream``,
``parse``), the tool loop with ``function_call_output``, the guards in the Responses error shape,
custom tools emulated as functions, refusals named, signed reasoning round trips, token counts,
and the stored-response endpoints that answer 404.

Recordings: charmbracelet/fantasy ``TestXCommon`` (``simple``) and ``TestAnthropicThinking``;
tool answers built by :mod:`standins.tool_answers`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from pydantic import BaseModel
from standins import recordings
from standins.drive import ask, tool_results
from standins.recordings import json_exchange
from standins.tool_answers import LENGTH_STOP, Call, text_answer, tool_call_answer
from standins.topology import MATRIX
from standins.upstream import UpstreamStandin, replay, reset_mid_stream
from standins.wirekit import recorded_text, transcript_row

APIS = ["openai_chat", "anthropic_messages", "gemini"]
STREAMS = [False, True]
WEATHER = [
    {
        "type": "function",
        "name": "weather",
        "description": "Get weather information for a location",
        "parameters": {
            "type": "object",
            "required": ["location"],
            "properties": {"location": {"type": "string"}},
        },
    }
]
APPLY_PATCH = {
    "type": "custom",
    "name": "apply_patch",
    "description": "Apply a patch to the files",
    "format": {"type": "grammar", "syntax": "lark", "definition": 'start: "*** Begin Patch" /.+/'},
}
PATCH = "*** Begin Patch\n*** Add File: hello.txt\n+hi\n*** End Patch"


def _ids(p: Any) -> str:
    return "stream" if p is True else "nonstream" if p is False else str(p)


def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


@pytest.mark.parametrize("stream", STREAMS, ids=_ids)
def test_create_answers_a_response_object_with_usage(
    stream: bool, upstream: UpstreamStandin, oai: Any
) -> None:
    ex = recordings.common("openai_chat", "simple", stream)[0]
    upstream.script(replay(ex, api="openai_chat"))
    name = MATRIX["openai_chat"][0]
    if stream:
        events = list(oai.responses.create(model=name, input="Say hi in Portuguese", stream=True))
        types = [e.type for e in events]
        assert types[:2] == ["response.created", "response.in_progress"]
        assert types[-1] == "response.completed"
        assert [e.sequence_number for e in events] == list(range(len(events)))
        response = events[-1].response
        assert {
            e.response.id for e in events if e.type.startswith("response.") and hasattr(e, "response")
        } == {response.id}
    else:
        response = oai.responses.create(model=name, input="Say hi in Portuguese", instructions="Be brief")
        assert response.instructions == "Be brief"
    assert response.id.startswith("resp_")
    assert response.object == "response"
    assert response.status == "completed"
    assert response.output_text == recorded_text(ex, "openai_chat")
    assert response.output[0].type == "message" and response.output[0].content[0].annotations == []
    assert response.usage is not None and response.usage.total_tokens > 0
    assert response.store is True  # OpenAI's default: stored, and it can be read back
    assert oai.responses.retrieve(response.id).output_text == response.output_text


def test_sdk_stream_helper_accumulates_the_final_response(upstream: UpstreamStandin, oai: Any) -> None:
    upstream.script(replay(text_answer("anthropic_messages", "Olá!", stream=True), api="anthropic_messages"))
    with oai.responses.stream(model=MATRIX["anthropic_messages"][0], input="Say hi in Portuguese") as stream:
        deltas = [e.delta for e in stream if e.type == "response.output_text.delta"]
        final = stream.get_final_response()
    assert "".join(deltas) == "Olá!"
    assert final.output_text == "Olá!"
    assert final.status == "completed"


class City(BaseModel):
    name: str
    population: int


@pytest.mark.parametrize("api", ["openai_chat", "anthropic_messages", "gemini", "openai_responses"])
def test_parse_with_a_pydantic_model_sends_the_schema_upstream(
    api: str, upstream: UpstreamStandin, oai: Any
) -> None:
    upstream.script(
        replay(text_answer(api, '{"name": "Lisbon", "population": 545923}', stream=False), api=api)
    )
    parsed = oai.responses.parse(model=MATRIX[api][0], input="The capital of Portugal?", text_format=City)
    assert parsed.output_parsed == City(name="Lisbon", population=545923)
    body = upstream.requests()[0].body
    schema_sent = json.dumps(body)
    assert "population" in schema_sent, "the JSON schema must reach the upstream as structured output"


@pytest.mark.parametrize("stream", STREAMS, ids=_ids)
@pytest.mark.parametrize("api", APIS)
def test_tool_loop_with_function_call_output(
    api: str, stream: bool, upstream: UpstreamStandin, oai: Any
) -> None:
    call = Call("call_w1", "weather", '{"location":"Florence"}')
    upstream.script(
        replay(tool_call_answer(api, [call], stream=stream), api=api),
        replay(text_answer(api, "Sunny in Florence.", stream=stream), api=api),
    )
    name = MATRIX[api][0]
    history = [_user("Weather in Florence?")]
    turn1 = ask("responses", oai, model=name, stream=stream, messages=history, tools=_neutral(WEATHER))
    assert turn1.error is None, turn1.error
    assert turn1.stop == "tool_use"
    assert [(c["name"], c["args"]) for c in turn1.calls] == [("weather", {"location": "Florence"})]
    cid = turn1.calls[0]["id"]
    turn2 = ask(
        "responses",
        oai,
        model=name,
        stream=stream,
        messages=[*history, *turn1.echo_items, *tool_results("responses", [(cid, "sunny, 24C", False)])],
        tools=_neutral(WEATHER),
    )
    assert turn2.error is None, turn2.error
    assert turn2.text == "Sunny in Florence."
    assert "sunny, 24C" in json.dumps(upstream.requests()[1].body)


def _neutral(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in t.items() if k != "type"} for t in tools]


def test_orphan_function_call_output_is_refused_naming_the_call_id(
    upstream: UpstreamStandin, oai: Any
) -> None:
    with pytest.raises(openai.BadRequestError) as err:
        oai.responses.create(
            model=MATRIX["openai_chat"][0],
            input=[_user("hi"), {"type": "function_call_output", "call_id": "call_orphan", "output": "42"}],
        )
    assert "call_orphan" in err.value.message
    body = err.value.body
    assert isinstance(body, dict) and body["type"] == "invalid_request_error"  # the SDK unwraps "error"
    assert upstream.requests() == []


def test_duplicate_call_ids_are_refused(upstream: UpstreamStandin, oai: Any) -> None:
    call = {"type": "function_call", "call_id": "call_dup", "name": "weather", "arguments": "{}"}
    out = {"type": "function_call_output", "call_id": "call_dup", "output": "x"}
    with pytest.raises(openai.BadRequestError) as err:
        oai.responses.create(
            model=MATRIX["openai_chat"][0],
            input=[_user("hi"), call, out, _user("again"), call, out],
            tools=WEATHER,
        )
    assert "call_dup" in err.value.message
    assert upstream.requests() == []


@pytest.mark.parametrize("stream", STREAMS, ids=_ids)
def test_truncated_tool_call_is_withheld_and_the_response_incomplete(
    stream: bool, upstream: UpstreamStandin, oai: Any
) -> None:
    api = "openai_chat"
    cut = Call("call_cut", "weather", '{"location": "Flor')
    upstream.script(replay(tool_call_answer(api, [cut], stream=stream, stop=LENGTH_STOP[api]), api=api))
    turn = ask(
        "responses", oai, model=MATRIX[api][0], stream=stream, messages=[_user("w?")], tools=_neutral(WEATHER)
    )
    assert turn.calls == []
    assert turn.stop == "length"
    assert turn.raw_stop == "incomplete"
    if stream:
        kinds = {getattr(getattr(e, "item", None), "type", None) for e in turn.raw}
        assert "function_call" not in kinds, "a withheld call must never appear as an output item"
        assert turn.raw[-1].type == "response.incomplete"


@pytest.mark.parametrize("stream", STREAMS, ids=_ids)
@pytest.mark.parametrize("api", ["openai_chat", "anthropic_messages"])
def test_custom_tool_round_trips_as_an_emulated_function(
    api: str, stream: bool, upstream: UpstreamStandin, oai: Any
) -> None:
    call = Call("call_p1", "apply_patch", json.dumps({"input": PATCH}))
    upstream.script(
        replay(tool_call_answer(api, [call], stream=stream), api=api),
        replay(text_answer(api, "Patched.", stream=stream), api=api),
    )
    name = MATRIX[api][0]
    first = oai.responses.create(model=name, input="add hello.txt", tools=[APPLY_PATCH], stream=stream)
    response = _final(first, stream)
    items = [i for i in response.output if i.type == "custom_tool_call"]
    assert [(i.name, i.input) for i in items] == [("apply_patch", PATCH)]
    sent = upstream.requests()[0].body
    if api == "openai_chat":  # Chat has custom tools too: sent natively with the grammar
        assert sent["tools"][0]["type"] == "custom" and "grammar" in sent["tools"][0]["custom"]["format"]
    else:
        assert "grammar" in json.dumps(sent) and "input" in json.dumps(sent)  # emulated: one string argument
    echo = {"type": "custom_tool_call", "call_id": items[0].call_id, "name": "apply_patch", "input": PATCH}
    result = {"type": "custom_tool_call_output", "call_id": items[0].call_id, "output": "Done!"}
    second = oai.responses.create(
        model=name, input=[_user("add hello.txt"), echo, result], tools=[APPLY_PATCH], stream=stream
    )
    assert _final(second, stream).output_text == "Patched."
    body2 = json.dumps(upstream.requests()[1].body)
    assert "Done!" in body2 and "hello.txt" in body2


def _final(result: Any, stream: bool) -> Any:
    if not stream:
        return result
    return [
        e for e in result if e.type.startswith("response.") and e.type.endswith(("completed", "incomplete"))
    ][-1].response


@pytest.mark.parametrize(
    "tool",
    [
        {"type": "web_search"},
        {"type": "file_search", "vector_store_ids": ["vs_1"]},
        {"type": "code_interpreter"},
    ],
    ids=lambda t: t["type"],
)
def test_hosted_tool_is_refused_by_name(tool: dict[str, Any], upstream: UpstreamStandin, oai: Any) -> None:
    with pytest.raises(openai.BadRequestError) as err:
        oai.responses.create(model=MATRIX["openai_chat"][0], input="hi", tools=[tool])
    assert tool["type"] in err.value.message
    assert err.value.param == "tools[0].type"
    assert upstream.requests() == []


def test_mcp_tool_naming_an_unregistered_server_is_refused(upstream: UpstreamStandin, oai: Any) -> None:
    with pytest.raises(openai.APIStatusError) as err:
        oai.responses.create(
            model=MATRIX["openai_chat"][0],
            input="hi",
            tools=[{"type": "mcp", "server_label": "nope", "require_approval": "never"}],
        )
    assert "nope" in err.value.message
    assert upstream.requests() == []


def test_input_tokens_counts_the_request_and_its_stored_chain(upstream: UpstreamStandin, oai: Any) -> None:
    name = MATRIX["openai_chat"][0]
    counted = oai.responses.input_tokens.count(model=name, input="Say hi in Portuguese")
    assert counted.object == "response.input_tokens"
    assert counted.input_tokens > 0
    assert upstream.requests() == []
    upstream.script(replay(text_answer("openai_chat", "Olá! " * 50, stream=False), api="openai_chat"))
    first = oai.responses.create(model=name, input="Say hi in Portuguese")
    chained = oai.responses.input_tokens.count(
        model=name, input="Say hi in Portuguese", previous_response_id=first.id
    )
    assert chained.input_tokens > counted.input_tokens + 40  # the stored question and answer count too


def test_unknown_response_ids_answer_not_found(oai: Any, gateway_url: str, upstream: UpstreamStandin) -> None:
    with pytest.raises(openai.NotFoundError) as err:
        oai.responses.retrieve("resp_unknown")
    assert "resp_unknown" in err.value.message
    with pytest.raises(openai.NotFoundError):
        oai.responses.delete("resp_unknown")
    with pytest.raises(openai.NotFoundError):
        oai.responses.input_items.list("resp_unknown")
    raw = httpx.get(f"{gateway_url}/v1/responses/resp_x", headers={"authorization": "Bearer sk-client-key"})
    assert raw.status_code == 404
    assert raw.json()["error"] == {
        "message": raw.json()["error"]["message"],
        "type": "invalid_request_error",
        "param": "response_id",
        "code": "not_found",
    }
    with pytest.raises(openai.NotFoundError) as err:
        oai.responses.create(model=MATRIX["openai_chat"][0], input="hi", previous_response_id="resp_nope")
    assert "resp_nope" in err.value.message
    assert upstream.requests() == []


def _texts(body: dict[str, Any]) -> list[str]:
    """The text of every chat message sent upstream (openai_chat wire), in order."""
    out = []
    for m in body["messages"]:
        content = m.get("content")
        if isinstance(content, str):
            out.append(content)
        elif isinstance(content, list):
            out.append("".join(p.get("text", "") for p in content))
    return out


@pytest.mark.parametrize("stream", STREAMS, ids=_ids)
def test_previous_response_id_continues_the_stored_chain_and_forks_are_branches(
    stream: bool, upstream: UpstreamStandin, oai: Any
) -> None:
    api = "openai_chat"
    name = MATRIX[api][0]
    upstream.script(*(replay(text_answer(api, t, stream=stream), api=api) for t in ("A1", "A2", "A3")))
    r1 = _final(oai.responses.create(model=name, input="Q1", instructions="sys", stream=stream), stream)
    r2 = _final(
        oai.responses.create(model=name, input="Q2", previous_response_id=r1.id, stream=stream), stream
    )
    r3 = _final(
        oai.responses.create(model=name, input="Q3", previous_response_id=r1.id, stream=stream), stream
    )
    assert r2.previous_response_id == r1.id and len({r1.id, r2.id, r3.id}) == 3
    sent = [_texts(r.body) for r in upstream.requests()]
    assert sent[1] == ["Q1", "A1", "Q2"]  # r2 continues r1; instructions are not carried over
    assert sent[2] == ["Q1", "A1", "Q3"], "a second continuation of r1 is a branch: r2 is not in it"
    assert oai.responses.retrieve(r2.id).output_text == "A2"
    items = oai.responses.input_items.list(r2.id, order="asc")
    assert [(i.type, i.role) for i in items.data] == [("message", "user")]
    assert items.data[0].content[0].text == "Q2"


def test_a_tool_result_continues_the_stored_call(upstream: UpstreamStandin, oai: Any) -> None:
    api = "anthropic_messages"
    name = MATRIX[api][0]
    call = Call("toolu_1", "weather", '{"location":"Florence"}')
    upstream.script(
        replay(tool_call_answer(api, [call], stream=False), api=api),
        replay(text_answer(api, "Sunny.", stream=False), api=api),
    )
    r1 = oai.responses.create(model=name, input="Weather in Florence?", tools=WEATHER)
    (fc,) = [i for i in r1.output if i.type == "function_call"]
    r2 = oai.responses.create(
        model=name,
        previous_response_id=r1.id,
        input=[{"type": "function_call_output", "call_id": fc.call_id, "output": "sunny"}],
        tools=WEATHER,
    )
    assert r2.output_text == "Sunny."
    msgs = upstream.requests()[1].body["messages"]
    assert [m["role"] for m in msgs] == ["user", "assistant", "user"]
    assert (
        msgs[2]["content"][0]["type"] == "tool_result" and msgs[2]["content"][0]["tool_use_id"] == "toolu_1"
    )


def test_store_false_keeps_nothing_and_deleted_responses_are_gone(
    upstream: UpstreamStandin, oai: Any
) -> None:
    api = "openai_chat"
    name = MATRIX[api][0]
    upstream.script(*(replay(text_answer(api, t, stream=False), api=api) for t in ("A1", "A2")))
    unstored = oai.responses.create(model=name, input="Q1", store=False)
    assert unstored.store is False
    with pytest.raises(openai.NotFoundError):
        oai.responses.retrieve(unstored.id)
    stored = oai.responses.create(model=name, input="Q2")
    oai.responses.delete(stored.id)
    with pytest.raises(openai.NotFoundError):
        oai.responses.retrieve(stored.id)
    with pytest.raises(openai.NotFoundError):
        oai.responses.create(model=name, input="Q3", previous_response_id=stored.id)


@pytest.mark.parametrize("field", ["conversation", "background"])
def test_stateful_fields_are_refused_by_name(field: str, upstream: UpstreamStandin, oai: Any) -> None:
    value = {"conversation": "conv_1", "background": True}[field]
    with pytest.raises(openai.BadRequestError) as err:
        oai.responses.create(model=MATRIX["openai_chat"][0], input="hi", **{field: value})
    assert err.value.param == field
    assert upstream.requests() == []


@pytest.mark.parametrize("stream", STREAMS, ids=_ids)
def test_anthropic_signed_reasoning_round_trips_as_encrypted_content(
    stream: bool, upstream: UpstreamStandin, oai: Any
) -> None:
    first, second = recordings.anthropic_thinking(stream)[:2]
    upstream.script(replay(first, api="anthropic_messages"), replay(second, api="anthropic_messages"))
    name = MATRIX["anthropic_messages"][0]
    kwargs: dict[str, Any] = {
        "model": name,
        "tools": WEATHER,
        "reasoning": {"effort": "high", "summary": "auto"},
        "include": ["reasoning.encrypted_content"],
        "max_output_tokens": 4096,
    }
    history: list[Any] = [_user("What's the weather in Florence, Italy?")]
    r1 = _final(oai.responses.create(input=history, stream=stream, **kwargs), stream)
    reasoning = [i for i in r1.output if i.type == "reasoning"]
    assert reasoning and reasoning[0].encrypted_content and reasoning[0].summary
    echo = [i.to_dict() for i in r1.output]
    call = next(i for i in r1.output if i.type == "function_call")
    history += [*echo, {"type": "function_call_output", "call_id": call.call_id, "output": "sunny"}]
    r2 = _final(oai.responses.create(input=history, stream=stream, **kwargs), stream)
    assert r2.status == "completed"
    sent = upstream.requests()[1].body
    thinking = [
        b
        for m in sent["messages"]
        if m["role"] == "assistant"
        for b in m["content"]
        if b["type"] == "thinking"
    ]
    assert len(thinking) == 1
    assert reasoning[0].encrypted_content.endswith(thinking[0]["signature"])  # the raw signature, unwrapped
    assert thinking[0]["thinking"] == reasoning[0].summary[0].text


def test_error_after_the_stream_started_is_response_failed(upstream: UpstreamStandin, oai: Any) -> None:
    ex = recordings.common("anthropic_messages", "simple", True)[0]
    upstream.script(reset_mid_stream(ex, 3, api="anthropic_messages"))
    events = list(oai.responses.create(model=MATRIX["anthropic_messages"][0], input="hi", stream=True))
    assert events[0].type == "response.created"
    assert events[-1].type == "response.failed"
    assert events[-1].response.error is not None and events[-1].response.error.code


def test_upstream_structured_output_json_answer(upstream: UpstreamStandin, oai: Any) -> None:
    """``text.format`` json_object is the structured-output field chat's response_format maps to."""
    upstream.script(replay(json_exchange(_chat_body('{"a": 1}')), api="openai_chat"))
    response = oai.responses.create(
        model=MATRIX["openai_chat"][0], input="json please", text={"format": {"type": "json_object"}}
    )
    assert response.output_text == '{"a": 1}'
    assert upstream.requests()[0].body["response_format"] == {"type": "json_object"}


def _chat_body(text: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-4o-mini",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8},
    }


def _chat_and_responses_status(oai: Any, chat_messages: list[Any], items: list[Any]) -> tuple[Any, Any]:
    """The error (or None) each dialect gets for the same conversation."""
    out = []
    for send in (
        lambda: oai.chat.completions.create(
            model=MATRIX["openai_chat"][0],
            messages=chat_messages,
            tools=[{"type": "function", "function": _neutral(WEATHER)[0]}],
        ),
        lambda: oai.responses.create(model=MATRIX["openai_chat"][0], input=items, tools=WEATHER),
    ):
        try:
            send()
            out.append(None)
        except openai.APIStatusError as exc:
            out.append(exc)
    return out[0], out[1]


@pytest.mark.parametrize("case", ["result_before_call", "orphan_call"])
def test_ordering_guards_treat_responses_input_as_chat_messages(
    case: str, upstream: UpstreamStandin, oai: Any
) -> None:
    api = "openai_chat"
    upstream.script(*(replay(text_answer(api, "ok", stream=False), api=api) for _ in range(2)))
    call_chat = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "call_o", "type": "function", "function": {"name": "weather", "arguments": "{}"}}
        ],
    }
    result_chat = {"role": "tool", "tool_call_id": "call_o", "content": "x"}
    call_item = {"type": "function_call", "call_id": "call_o", "name": "weather", "arguments": "{}"}
    result_item = {"type": "function_call_output", "call_id": "call_o", "output": "x"}
    if case == "result_before_call":
        chat = [{"role": "user", "content": "hi"}, result_chat, call_chat, {"role": "user", "content": "go"}]
        items = [_user("hi"), result_item, call_item, _user("go")]
    else:
        chat = [{"role": "user", "content": "hi"}, call_chat, {"role": "user", "content": "go on"}]
        items = [_user("hi"), call_item, _user("go on")]
    chat_err, resp_err = _chat_and_responses_status(oai, chat, items)
    assert chat_err is not None and resp_err is not None, "the default guards refuse both"
    assert resp_err.status_code == chat_err.status_code == 400
    assert "call_o" in resp_err.message
    assert isinstance(resp_err.body, dict) and resp_err.body["type"] == "invalid_request_error"


CODEX_SHAPED = {
    # the shape Codex CLI sends (openai/codex codex-rs/core/src/client_common.rs ResponsesApiRequest):
    # instructions, input items, function + custom tools, reasoning with a summary, encrypted
    # reasoning included, nothing stored, a prompt cache key, streamed
    "instructions": "You are Codex, a coding agent.",
    "input": [
        {
            "type": "message",
            "role": "developer",
            "content": [{"type": "input_text", "text": "<permissions/>"}],
        },
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "<environment_context/>"}],
        },
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "list the files"}]},
    ],
    "tools": [
        {
            "type": "function",
            "name": "shell",
            "description": "Runs a shell command and returns its output.",
            "strict": False,
            "parameters": {
                "type": "object",
                "properties": {"command": {"type": "array", "items": {"type": "string"}}},
                "required": ["command"],
                "additionalProperties": False,
            },
        },
        APPLY_PATCH,
    ],
    "tool_choice": "auto",
    "parallel_tool_calls": False,
    "reasoning": {"effort": "medium", "summary": "auto"},
    "store": False,
    "stream": True,
    "include": ["reasoning.encrypted_content"],
    "prompt_cache_key": "0199a0d2-conversation",
    "text": {"verbosity": "medium"},
    "client_metadata": {"x-codex-installation-id": "0199a0d2-install"},
}


@pytest.mark.parametrize("api", APIS)
def test_a_codex_shaped_turn_runs_its_tool_loop(
    api: str, upstream: UpstreamStandin, gateway_url: str
) -> None:
    call = Call("call_ls", "shell", '{"command":["ls"]}')
    upstream.script(
        replay(tool_call_answer(api, [call], stream=True), api=api),
        replay(text_answer(api, "Two files.", stream=True), api=api),
    )
    body = {**CODEX_SHAPED, "model": MATRIX[api][0]}
    headers = {"authorization": "Bearer sk-client-key", "session_id": "0199a0d2-conversation"}
    with httpx.stream("POST", f"{gateway_url}/v1/responses", json=body, headers=headers, timeout=15) as resp:
        assert resp.status_code == 200, resp.read()
        events = _data_events(resp)
    done = [e["item"] for e in events if e["type"] == "response.output_item.done"]
    fc = next(i for i in done if i["type"] == "function_call")
    assert (fc["name"], json.loads(fc["arguments"])) == ("shell", {"command": ["ls"]})
    assert events[-1]["type"] == "response.completed" and events[-1]["response"]["store"] is False
    # the next turn, as Codex sends it: everything again, plus the call and its output
    body2 = {
        **body,
        "input": [
            *CODEX_SHAPED["input"],
            *[{k: v for k, v in i.items() if k not in ("id", "status")} for i in done],
            {"type": "function_call_output", "call_id": fc["call_id"], "output": "a.txt\nb.txt"},
        ],
    }
    with httpx.stream("POST", f"{gateway_url}/v1/responses", json=body2, headers=headers, timeout=15) as resp:
        assert resp.status_code == 200, resp.read()
        events2 = _data_events(resp)
    assert events2[-1]["type"] == "response.completed"
    assert "".join(e["delta"] for e in events2 if e["type"] == "response.output_text.delta") == "Two files."
    assert "a.txt" in json.dumps(upstream.requests()[1].body)


def _data_events(resp: Any) -> list[dict[str, Any]]:
    """The ``data:`` JSON of each SSE event; every event also names its type on an ``event:`` line."""
    out = []
    name = None
    for line in resp.iter_lines():
        if line.startswith("event: "):
            name = line[7:]
        elif line.startswith("data: "):
            data = json.loads(line[6:])
            assert data["type"] == name
            out.append(data)
    return out


def test_store_false_may_continue_a_stored_response_and_a_client_bound_session_may_not(
    upstream: UpstreamStandin, oai: Any
) -> None:
    api = "openai_chat"
    name = MATRIX[api][0]
    upstream.script(*(replay(text_answer(api, t, stream=False), api=api) for t in ("A1", "A2")))
    first = oai.responses.create(model=name, input="Q1")
    second = oai.responses.create(model=name, input="Q2", previous_response_id=first.id, store=False)
    assert second.store is False and second.previous_response_id == first.id
    assert _texts(upstream.requests()[1].body) == ["Q1", "A1", "Q2"]
    with pytest.raises(openai.NotFoundError):
        oai.responses.retrieve(second.id)
    with pytest.raises(openai.BadRequestError) as err:
        oai.responses.create(
            model=name,
            input="Q3",
            previous_response_id=first.id,
            extra_headers={"x-turnstile-session": "my-session"},
        )
    assert err.value.param == "previous_response_id" and "my-session" in err.value.message


CODEX_FIXTURES = Path(__file__).parents[1] / "fixtures" / "e2e"
# The tool name each upstream wire API is offered Codex's code-mode tool under: a dot is
# refused by OpenAI's and Anthropic's name rule (NameMap: ``__``), Gemini's allows it.
EXEC_UPSTREAM = {
    "openai_chat": "functions__exec",
    "anthropic_messages": "functions__exec",
    "gemini": "functions.exec",
    "openai_responses": "functions__exec",
}
CODEX_DROPPED = "client_metadata,prompt_cache_key,reasoning.context,text.verbosity"
JS = 'text(await tools.exec_command({cmd: "cat note.txt"}));'


def _codex_body(n: int, model: str) -> dict[str, Any]:
    """Request ``n`` Codex CLI 0.171 sent in code mode (its default model), for ``model``."""
    recorded = json.loads((CODEX_FIXTURES / "codex-0.171.0-exec-tool-loop.json").read_text())
    return {**recorded["requests"][n]["body"], "model": model}


@pytest.mark.parametrize(
    ("api", "deployment"),
    [(api, MATRIX[api][0]) for api in APIS] + [("openai_responses", "rs-gpt-5")],
    ids=[*APIS, "openai_responses"],
)
def test_codex_code_mode_recorded_turns_run_their_tool_loop_on_every_upstream_api(
    api: str, deployment: str, upstream: UpstreamStandin, gateway_url: str
) -> None:
    call = Call("call_e2e", EXEC_UPSTREAM[api], json.dumps({"input": JS}))
    upstream.script(
        replay(tool_call_answer(api, [call], stream=True), api=api),
        replay(text_answer(api, "The note says hi.", stream=True), api=api),
    )
    headers = {"authorization": "Bearer sk-client-key", "accept": "text/event-stream"}
    url = f"{gateway_url}/v1/responses"
    with httpx.stream("POST", url, json=_codex_body(0, deployment), headers=headers, timeout=15) as resp:
        assert resp.status_code == 200, resp.read()
        dropped = resp.headers.get("x-turnstile-dropped")
        events = _data_events(resp)
    (item,) = [e["item"] for e in events if e["type"] == "response.output_item.done"]
    assert {k: item[k] for k in ("type", "name", "namespace", "input")} == {
        "type": "custom_tool_call",
        "name": "exec",
        "namespace": "functions",
        "input": JS,
    }
    assert events[-1]["type"] == "response.completed"
    sent = upstream.requests()[0].body
    if api == "openai_responses":
        assert dropped is None
        exec_tool = next(t for t in sent["tools"] if t["name"] == "functions__exec")
        assert exec_tool["type"] == "custom" and exec_tool["format"]["syntax"] == "lark"
        assert sent["reasoning"]["context"] == "all_turns" and sent["text"] == {"verbosity": "low"}
        assert sent["prompt_cache_key"] and set(sent["client_metadata"]) >= {"session_id", "turn_id"}
    elif api == "gemini":  # Codex's parallel_tool_calls: false has no Gemini setting
        assert dropped == f"{CODEX_DROPPED},parallel_tool_calls"
        assert "client_metadata" not in json.dumps(sent)
    elif api == "openai_chat":  # the fields Chat shares are translated (prompt_cache_key, verbosity)
        # gpt-4o-mini has no reasoning: Codex's reasoning.effort is named, as toward Responses
        assert dropped == "client_metadata,reasoning.context,reasoning.effort"
        assert "client_metadata" not in json.dumps(sent)
        assert sent["prompt_cache_key"] and sent["verbosity"] == "low"
    else:
        assert dropped == CODEX_DROPPED
        assert "client_metadata" not in json.dumps(sent)
    # turn 2 as Codex sends it: the recorded request, with this answer's call echoed back
    body2 = _codex_body(1, deployment)
    body2["input"] = [
        {**i, "call_id": item["call_id"], "namespace": "functions", "input": JS}
        if i["type"] == "custom_tool_call"
        else {**i, "call_id": item["call_id"]}
        if i["type"] == "custom_tool_call_output"
        else i
        for i in body2["input"]
    ]
    with httpx.stream("POST", url, json=body2, headers=headers, timeout=15) as resp:
        assert resp.status_code == 200, resp.read()
        events2 = _data_events(resp)
    assert events2[-1]["type"] == "response.completed"
    assert (
        "".join(e["delta"] for e in events2 if e["type"] == "response.output_text.delta")
        == "The note says hi."
    )
    sent2 = upstream.requests()[1].body
    assert "the secret is 42" in json.dumps(sent2)
    if api == "openai_responses":
        kinds = [i.get("type") for i in sent2["input"]]
        assert "custom_tool_call" in kinds and "custom_tool_call_output" in kinds


def test_fields_another_wire_api_cannot_carry_are_named_in_a_header_and_the_transcript(
    upstream: UpstreamStandin, gateway_url: str, db_path: Path
) -> None:
    upstream.script(replay(text_answer("gemini", "Hi.", stream=False), api="gemini"))
    body = {
        "model": MATRIX["gemini"][0],
        "input": "hi",
        "prompt_cache_key": "k1",
        "service_tier": "priority",
        "text": {"verbosity": "low"},
    }
    resp = httpx.post(f"{gateway_url}/v1/responses", json=body, timeout=15)
    assert resp.status_code == 200, resp.text
    assert resp.json()["output"][0]["content"][0]["text"] == "Hi."
    assert resp.headers["x-turnstile-dropped"] == "prompt_cache_key,service_tier,text.verbosity"
    sent = json.dumps(upstream.requests()[0].body)
    assert "k1" not in sent and "priority" not in sent
    row = transcript_row(db_path, resp.headers["x-turnstile-request-id"])
    notes = [r for r in json.loads(row["repairs"]) if r.get("kind") == "dropped"]
    assert [(n["field"], n["values"], n["deployment"]) for n in notes] == [
        ("prompt_cache_key", ["k1"], MATRIX["gemini"][0]),
        ("service_tier", ["priority"], MATRIX["gemini"][0]),
        ("text.verbosity", ["low"], MATRIX["gemini"][0]),
    ]
