"""Request side of gateway/providers/openai_responses.py (openai_responses_request.py): the
Responses body built from the internal schema, checked against what the fantasy recordings sent
to the real API (tests/fixtures/fantasy/.../TestOpenAIResponses*)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from _wire_helpers import cassette, request_body

from gateway.config import Deployment
from gateway.errors import CapabilityError
from gateway.providers import openai_responses
from gateway.providers.naming import NameMap
from gateway.providers.passthrough import serving_names
from gateway.schema import (
    AssistantMessage,
    ImagePart,
    NativeFields,
    OwnKeys,
    Provenance,
    RedactedThinkingPart,
    Request,
    ResponseFormat,
    SystemMessage,
    TextPart,
    ThinkingConfig,
    ThinkingPart,
    ToolCallPart,
    ToolChoice,
    ToolDefinition,
    ToolResultMessage,
    UserMessage,
)

DEP = Deployment(name="rs", api="openai_responses", model="gpt-5", base_url="http://up/v1")
SIGNED = Provenance(api="openai_responses", provider="openai", model="gpt-5")
THINKING = "fantasy/providertests/testdata/TestOpenAIResponsesWithSummaryThinking/openai-gpt-5/thinking.yaml"
ADD = ToolDefinition(
    name="add",
    description="Add two numbers",
    parameters={"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
)


def _body(request: Request, dep: Deployment = DEP) -> dict[str, Any]:
    up, _ = openai_responses.build_request(request, dep, "sk-test")
    return dict(orjson.loads(up.body))


def _req(*messages: Any, **extra: Any) -> Request:
    return Request(model="m", messages=list(messages), **extra)


def _user(text: str) -> UserMessage:
    return UserMessage(content=[TextPart(text=text)])


def test_url_headers_and_stateless_defaults() -> None:
    up, _ = openai_responses.build_request(_req(_user("hi"), stream=True), DEP, "sk-test")
    assert up.url == "http://up/v1/responses"
    assert up.headers["authorization"] == "Bearer sk-test"
    assert up.headers["accept"] == "text/event-stream"
    body = orjson.loads(up.body)
    assert body["store"] is False
    assert body["include"] == ["reasoning.encrypted_content"]
    assert body["stream"] is True
    assert "previous_response_id" not in body


def test_default_base_url_is_openai() -> None:
    up, _ = openai_responses.build_request(
        _req(_user("hi")), Deployment(name="x", api="openai_responses", model="gpt-5"), None
    )
    assert up.url == "https://api.openai.com/v1/responses"
    assert "authorization" not in up.headers


def test_no_include_for_a_deployment_without_thinking() -> None:
    dep = DEP.model_copy(update={"supports_thinking": False})
    body = _body(_req(_user("hi"), thinking=ThinkingConfig(effort="high")), dep)
    assert "include" not in body and "reasoning" not in body


@pytest.mark.parametrize("model", ["gpt-4o-mini", "gpt-4.1-mini"])
def test_no_include_or_reasoning_for_a_model_without_reasoning(model: str) -> None:
    dep = DEP.model_copy(update={"model": model})
    body = _body(_req(_user("hi"), thinking=ThinkingConfig(effort="high")), dep)
    assert "include" not in body and "reasoning" not in body
    assert body["store"] is False


def test_a_model_the_catalog_does_not_know_is_trusted_to_supports_thinking() -> None:
    dep = DEP.model_copy(update={"model": "local-reasoner-7b", "provider": "vllm"})
    assert _body(_req(_user("hi")), dep)["include"] == ["reasoning.encrypted_content"]


def test_leading_system_becomes_instructions_later_ones_stay_in_place() -> None:
    body = _body(
        _req(
            SystemMessage(content=[TextPart(text="a")]),
            SystemMessage(content=[TextPart(text="b")]),
            _user("hi"),
            SystemMessage(content=[TextPart(text="c")]),
        )
    )
    assert body["instructions"] == "a\n\nb"
    assert body["input"] == [{"role": "user", "content": "hi"}, {"role": "system", "content": "c"}]


def test_tool_loop_history_matches_what_the_recording_sent() -> None:
    """Round 2 of the fantasy thinking recording: function_call then function_call_output with
    the same call_id (the recording's client dropped its reasoning item; ours has none here)."""
    recorded = request_body(cassette(THINKING)[1])
    call = recorded["input"][2]
    request = _req(
        SystemMessage(content=[TextPart(text="You are a helpful assistant")]),
        _user("What's the weather in Florence, Italy?"),
        AssistantMessage(
            content=[ToolCallPart(id=call["call_id"], name="weather", raw_arguments=call["arguments"])]
        ),
        ToolResultMessage(tool_call_id=call["call_id"], content=[TextPart(text="40 C")]),
    )
    items = _body(request)["input"]
    assert items[1] == {
        "type": "function_call",
        "call_id": call["call_id"],
        "name": "weather",
        "arguments": call["arguments"],
    }
    assert items[2] == recorded["input"][3]


def test_signed_reasoning_goes_back_as_a_reasoning_item_in_place() -> None:
    msg = AssistantMessage(
        content=[
            ThinkingPart(text="**Plan**\n\nlook it up", signature="gAAAA-enc", provenance=SIGNED),
            TextPart(text="Let me check."),
            ToolCallPart(id="call_1", name="add", raw_arguments='{"a":1}'),
        ]
    )
    items = _body(
        _req(_user("q"), msg, ToolResultMessage(tool_call_id="call_1", content=[TextPart(text="1")]))
    )["input"]
    assert items[1] == {
        "type": "reasoning",
        "summary": [{"type": "summary_text", "text": "**Plan**\n\nlook it up"}],
        "encrypted_content": "gAAAA-enc",
    }
    assert items[2] == {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "Let me check."}],
    }
    assert items[3]["type"] == "function_call"


def test_reasoning_with_nothing_after_it_in_its_turn_is_not_sent() -> None:
    alone = AssistantMessage(
        content=[TextPart(text="hm"), ThinkingPart(text="t", signature="gAAAA-x", provenance=SIGNED)]
    )
    items = _body(_req(_user("q"), alone, _user("again")))["input"]
    assert [i.get("type", "message") for i in items] == ["message", "message", "message"]
    assert items[1]["content"][0]["text"] == "hm"


@pytest.mark.parametrize(
    "part",
    [
        ThinkingPart(
            text="t", signature="sig", provenance=Provenance(api="anthropic_messages", provider="anthropic")
        ),
        ThinkingPart(text="t", signature=None, provenance=SIGNED),
        ThinkingPart(text="t", signature="sig", provenance=None),
        RedactedThinkingPart(
            data="opaque", provenance=Provenance(api="anthropic_messages", provider="anthropic")
        ),
    ],
    ids=["anthropic-signed", "unsigned", "unknown-signer", "anthropic-redacted"],
)
def test_reasoning_not_made_by_a_responses_upstream_is_never_sent(part: Any) -> None:
    msg = AssistantMessage(content=[part, TextPart(text="ok")])
    body = _body(_req(_user("q"), msg, _user("again")))
    assert [i.get("type", "message") for i in body["input"]] == ["message", "message", "message"]
    assert "sig" not in orjson.dumps(body).decode() and "opaque" not in orjson.dumps(body).decode()


def test_function_tools_are_not_strict_unless_asked() -> None:
    strict = ADD.model_copy(update={"name": "strict_add", "strict": True})
    body = _body(
        _req(_user("q"), tools=[ADD, strict], tool_choice=ToolChoice(mode="tool", name="add", parallel=False))
    )
    assert body["tools"] == [
        {
            "type": "function",
            "name": "add",
            "description": "Add two numbers",
            "parameters": ADD.parameters,
            "strict": False,
        },
        {
            "type": "function",
            "name": "strict_add",
            "description": "Add two numbers",
            "parameters": ADD.parameters,
            "strict": True,
        },
    ]
    assert body["tool_choice"] == {"type": "function", "name": "add"}
    assert body["parallel_tool_calls"] is False


@pytest.mark.parametrize(("mode", "wire"), [("auto", "auto"), ("none", "none"), ("required", "required")])
def test_tool_choice_modes(mode: str, wire: str) -> None:
    assert _body(_req(_user("q"), tools=[ADD], tool_choice=ToolChoice(mode=mode)))["tool_choice"] == wire  # type: ignore[arg-type]


def test_tool_choice_without_tools_is_not_sent() -> None:
    body = _body(_req(_user("q"), tool_choice=ToolChoice(mode="required", parallel=True)))
    assert "tool_choice" not in body and "parallel_tool_calls" not in body and "tools" not in body


def test_structured_output_goes_in_text_format() -> None:
    schema = {"type": "object", "properties": {"x": {"type": "string"}}}
    rf = ResponseFormat(type="json_schema", name="answer", schema=schema, strict=True)
    assert _body(_req(_user("q"), response_format=rf))["text"] == {
        "format": {"type": "json_schema", "name": "answer", "schema": schema, "strict": True}
    }
    assert _body(_req(_user("q"), response_format=ResponseFormat(type="json_object")))["text"] == {
        "format": {"type": "json_object"}
    }
    assert "text" not in _body(_req(_user("q"), response_format=ResponseFormat(type="text")))


@pytest.mark.parametrize(
    ("thinking", "effort"),
    [
        (ThinkingConfig(effort="minimal"), "minimal"),
        (ThinkingConfig(effort="high"), "high"),
        (ThinkingConfig(budget_tokens=1024), "low"),
        (ThinkingConfig(budget_tokens=8000), "medium"),
        (ThinkingConfig(budget_tokens=32000), "high"),
    ],
)
def test_thinking_becomes_reasoning_effort_with_summaries(thinking: ThinkingConfig, effort: str) -> None:
    assert _body(_req(_user("q"), thinking=thinking))["reasoning"] == {"effort": effort, "summary": "auto"}


def test_disabled_thinking_sends_the_least_reasoning_effort_without_summaries() -> None:
    off = _req(_user("q"), thinking=ThinkingConfig(enabled=False, effort="high"))
    assert _body(off)["reasoning"] == {"effort": "minimal"}  # gpt-5 takes no "none"
    newer = DEP.model_copy(update={"model": "gpt-5.1"})
    assert _body(off, newer)["reasoning"] == {"effort": "none"}


def test_sampling_budget_user_and_metadata() -> None:
    body = _body(
        _req(
            _user("q"),
            max_output_tokens=300,
            temperature=0.2,
            top_p=0.9,
            user="u-1",
            metadata={"trace": "abc", "turnstile_session": "s", "_turnstile_retried": True},
        )
    )
    assert (body["max_output_tokens"], body["temperature"], body["top_p"], body["user"]) == (
        300,
        0.2,
        0.9,
        "u-1",
    )
    assert body["metadata"] == {"trace": "abc"}
    assert openai_responses.output_budget(_req(_user("q"), max_output_tokens=300), DEP) == 300


def test_stop_sequences_are_refused_naming_the_field() -> None:
    with pytest.raises(CapabilityError) as info:
        _body(_req(_user("q"), stop=["END"]))
    assert info.value.param == "stop"
    assert "no stop sequences" in info.value.message


def test_images_in_user_messages_and_tool_results() -> None:
    png = ImagePart(data="AAAA", media_type="image/png")
    request = _req(
        UserMessage(content=[TextPart(text="look"), ImagePart(url="https://x/cat.png")]),
        AssistantMessage(content=[ToolCallPart(id="call_1", name="shot")]),
        ToolResultMessage(tool_call_id="call_1", content=[TextPart(text="here"), png]),
    )
    items = _body(request)["input"]
    assert items[0]["content"] == [
        {"type": "input_text", "text": "look"},
        {"type": "input_image", "image_url": "https://x/cat.png", "detail": "auto"},
    ]
    assert items[2]["output"] == [
        {"type": "input_text", "text": "here"},
        {"type": "input_image", "image_url": "data:image/png;base64,AAAA", "detail": "auto"},
    ]


def test_images_for_a_deployment_without_vision_are_refused() -> None:
    dep = DEP.model_copy(update={"supports_images": False})
    with pytest.raises(CapabilityError):
        _body(_req(UserMessage(content=[ImagePart(url="https://x/cat.png")])), dep)


def test_long_call_ids_and_odd_tool_names_are_rewritten_and_mapped_back() -> None:
    long_id = "toolu_" + "x" * 60
    request = _req(
        _user("q"),
        AssistantMessage(content=[ToolCallPart(id=long_id, name="fs.read")]),
        ToolResultMessage(tool_call_id=long_id, content=[TextPart(text="ok")]),
        tools=[ToolDefinition(name="fs.read")],
    )
    names = NameMap()
    body = openai_responses.to_wire_body(request, DEP, names)
    sent_id = body["input"][1]["call_id"]
    assert len(sent_id) <= 40 and body["input"][2]["call_id"] == sent_id
    assert body["tools"][0]["name"] == body["input"][1]["name"] != "fs.read"
    assert names.from_upstream_id(sent_id) == long_id
    assert names.from_upstream_name(body["tools"][0]["name"]) == "fs.read"


EXEC = ToolDefinition(
    name="functions.exec",
    description="Run JS\n\nThe input must match this lark grammar:\nstart: /.+/",
    parameters={
        "type": "object",
        "properties": {"input": {"type": "string"}},
        "required": ["input"],
        "additionalProperties": False,
    },
    freeform={"type": "grammar", "syntax": "lark", "definition": "start: /.+/"},
)
CODEX_FIELDS = {
    "prompt_cache_key": "k1",
    "client_metadata": {"session_id": "s1"},
    "service_tier": "priority",
    "truncation": "auto",
    "text": {"verbosity": "low"},
    "reasoning": {"context": "all_turns", "summary": "concise"},
}
CODEX_PASSTHROUGH = NativeFields(
    api="openai_responses", fields=CODEX_FIELDS, serving=serving_names(CODEX_FIELDS)
)


def test_passed_through_responses_fields_are_sent_verbatim_and_merged() -> None:
    request = _req(_user("hi"), thinking=ThinkingConfig(effort="low"), native=CODEX_PASSTHROUGH)
    body = _body(request)
    assert body["prompt_cache_key"] == "k1" and body["client_metadata"] == {"session_id": "s1"}
    assert body["service_tier"] == "priority" and body["truncation"] == "auto"
    assert body["text"] == {"verbosity": "low"}
    assert body["reasoning"] == {"effort": "low", "summary": "concise", "context": "all_turns"}


def test_passed_through_text_verbosity_joins_the_structured_output_format() -> None:
    fmt = ResponseFormat(type="json_object")
    body = _body(_req(_user("hi"), response_format=fmt, native=CODEX_PASSTHROUGH))
    assert body["text"] == {"format": {"type": "json_object"}, "verbosity": "low"}


def test_passed_through_reasoning_fields_are_not_sent_to_a_model_without_reasoning() -> None:
    body = _body(
        _req(_user("hi"), native=CODEX_PASSTHROUGH), DEP.model_copy(update={"model": "gpt-4.1-mini"})
    )
    assert "reasoning" not in body and body["prompt_cache_key"] == "k1"


PROGRAM = {"type": "program", "caller_id": "prog_1"}
BREAK = {"ttl": "1h"}


def _call_turn(own: bool) -> Request:
    call = ToolCallPart(
        id="call_1",
        name="add",
        arguments={"a": 1},
        raw_arguments='{"a": 1}',
        own_keys={"caller": PROGRAM, "async": True} if own else None,
    )
    mine = OwnKeys(api="openai_responses")
    result = ToolResultMessage(
        tool_call_id="call_1",
        content=[TextPart(text="2", own_keys={"prompt_cache_breakpoint": BREAK})],
        own=OwnKeys(api="openai_responses", keys={"caller": PROGRAM}) if own else None,
    )
    return _req(
        _user("add"), AssistantMessage(content=[call], own=mine if own else None), result, tools=[ADD]
    )


def test_a_responses_clients_call_item_keys_and_output_part_keys_go_back_on_them() -> None:
    call, output = _body(_call_turn(True))["input"][1:3]
    assert call == {
        "type": "function_call",
        "call_id": "call_1",
        "name": "add",
        "arguments": '{"a": 1}',
        "caller": PROGRAM,
        "async": True,
    }
    assert output == {
        "type": "function_call_output",
        "call_id": "call_1",
        "output": [{"type": "input_text", "text": "2", "prompt_cache_breakpoint": BREAK}],
        "caller": PROGRAM,
    }


def test_another_clients_output_part_keys_are_not_sent() -> None:
    output = _body(_call_turn(False))["input"][2]
    assert output == {"type": "function_call_output", "call_id": "call_1", "output": "2"}


def test_passed_through_fields_of_another_api_are_not_sent() -> None:
    native = NativeFields(api="anthropic_messages", fields={"container": "c"}, serving=["container"])
    body = _body(_req(_user("hi"), native=native))
    assert "container" not in body


def test_free_form_tools_are_sent_natively_with_their_format_and_own_description() -> None:
    text_tool = ToolDefinition(name="note", description="Free text", freeform={"type": "text"})
    body = _body(
        _req(_user("hi"), tools=[EXEC, text_tool], tool_choice=ToolChoice(mode="tool", name="functions.exec"))
    )
    assert body["tools"] == [
        {
            "type": "custom",
            "name": "functions__exec",
            "description": "Run JS",
            "format": {"type": "grammar", "syntax": "lark", "definition": "start: /.+/"},
        },
        {"type": "custom", "name": "note", "description": "Free text"},
    ]
    assert body["tool_choice"] == {"type": "custom", "name": "functions__exec"}


def test_calls_of_free_form_tools_go_back_as_custom_tool_call_items() -> None:
    call = ToolCallPart(id="call_1", name="functions.exec", arguments={"input": "text(1)"})
    other = ToolCallPart(id="call_2", name="add", arguments={"a": 1}, raw_arguments='{"a": 1}')
    request = _req(
        _user("go"),
        AssistantMessage(content=[call, other]),
        ToolResultMessage(tool_call_id="call_1", content=[TextPart(text="1")]),
        ToolResultMessage(tool_call_id="call_2", content=[TextPart(text="2")]),
        tools=[EXEC, ADD],
    )
    items = _body(request)["input"][1:]
    assert items == [
        {"type": "custom_tool_call", "call_id": "call_1", "name": "functions__exec", "input": "text(1)"},
        {"type": "function_call", "call_id": "call_2", "name": "add", "arguments": '{"a": 1}'},
        {"type": "custom_tool_call_output", "call_id": "call_1", "output": "1"},
        {"type": "function_call_output", "call_id": "call_2", "output": "2"},
    ]


def test_a_custom_tool_call_in_the_answer_maps_back_to_the_flattened_name() -> None:
    request = _req(_user("go"), tools=[EXEC])
    _up, ctx = openai_responses.build_request(request, DEP, "sk-test")
    answer = {
        "id": "resp_1",
        "status": "completed",
        "output": [
            {
                "type": "custom_tool_call",
                "id": "ctc_1",
                "call_id": "call_9",
                "name": "functions__exec",
                "input": "x",
            }
        ],
    }
    resp = openai_responses.from_wire_response(answer, ctx)
    (call,) = resp.message.tool_calls
    assert (call.name, call.arguments, resp.stop_reason) == ("functions.exec", {"input": "x"}, "tool_use")


def test_a_response_format_description_goes_in_text_format() -> None:
    rf = ResponseFormat(type="json_schema", name="City", description="A city.", schema={"type": "object"})
    assert _body(_req(_user("q"), response_format=rf))["text"]["format"] == {
        "type": "json_schema",
        "name": "City",
        "description": "A city.",
        "schema": {"type": "object"},
    }


def test_a_failed_tool_results_output_starts_with_error_since_responses_has_no_error_flag() -> None:
    req = _req(
        _user("go"),
        AssistantMessage(content=[ToolCallPart(id="c1", name="f", arguments={}, raw_arguments="{}")]),
        ToolResultMessage(tool_call_id="c1", content=[], is_error=True),
    )
    (output,) = [i for i in _body(req)["input"] if i.get("type") == "function_call_output"]
    assert output["output"] == "Error:"


def test_encrypted_reasoning_without_text_made_by_a_responses_upstream_goes_back_as_a_reasoning_item() -> (
    None
):
    history = AssistantMessage(
        content=[RedactedThinkingPart(data="gAAAA-enc", provenance=SIGNED), TextPart(text="a")]
    )
    body = _body(_req(_user("q"), history, _user("more")))
    assert body["input"][1] == {"type": "reasoning", "summary": [], "encrypted_content": "gAAAA-enc"}


@pytest.mark.parametrize(
    ("metadata", "param"),
    [
        ({"a": {"b": 1}, "s": "ok"}, "metadata.a"),
        ({"n": 5}, "metadata.n"),
        ({f"k{i}": "v" for i in range(20)}, "metadata"),
    ],
)
def test_metadata_a_responses_upstream_cannot_take_is_refused_by_name_not_trimmed(
    metadata: dict[str, Any], param: str
) -> None:
    with pytest.raises(CapabilityError) as err:
        _body(_req(_user("q"), metadata=metadata))
    assert err.value.param == param and "openai_responses" in str(err.value)
