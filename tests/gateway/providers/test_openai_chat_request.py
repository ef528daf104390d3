"""Request side of gateway/providers/openai_chat.py: internal schema -> Chat Completions body."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from _wire_helpers import cassette, request_body

from gateway.config import Deployment, Quirks
from gateway.errors import CapabilityError
from gateway.providers import openai_chat
from gateway.providers.naming import NameMap
from gateway.schema import (
    AssistantMessage,
    ImagePart,
    NativeFields,
    Provenance,
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

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="


def dep(**kw: Any) -> Deployment:
    quirks = kw.pop("quirks", {})
    return Deployment(name="oa", api="openai_chat", model="gpt-4o-mini", quirks=Quirks(**quirks), **kw)


def body_of(req: Request, d: Deployment | None = None) -> dict[str, Any]:
    up, _ = openai_chat.build_request(req, d or dep(), "sk-test")
    return dict(orjson.loads(up.body))


def call(id_: str, name: str, raw: str) -> ToolCallPart:
    return ToolCallPart(id=id_, name=name, arguments=orjson.loads(raw) if raw else {}, raw_arguments=raw)


def test_url_auth_and_extra_headers() -> None:
    d = dep(base_url="http://localhost:8000/v1/", quirks={"extra_headers": {"HTTP-Referer": "x"}})
    up, ctx = openai_chat.build_request(
        Request(model="m", messages=[UserMessage(content=[TextPart(text="hi")])]), d, "k"
    )
    assert up.url == "http://localhost:8000/v1/chat/completions"
    assert up.headers["authorization"] == "Bearer k"
    assert up.headers["HTTP-Referer"] == "x"
    assert up.stream is False and ctx.deployment is d
    default = openai_chat.build_request(Request(model="m", messages=[]), dep(), None)[0]
    assert default.url == "https://api.openai.com/v1/chat/completions"
    assert "authorization" not in default.headers


def test_recorded_fantasy_tool_round_trip_request_is_reproduced() -> None:
    """The second request of fantasy TestOpenAICommon/openai-gpt-4o-mini/multi_tool.yaml, rebuilt
    from the internal schema, has the same messages and tools as the recorded one."""
    recorded = request_body(
        cassette("fantasy/providertests/testdata/TestOpenAICommon/openai-gpt-4o-mini/multi_tool.yaml")[1]
    )
    params = recorded["tools"][0]["function"]["parameters"]
    req = Request(
        model="gpt-4o-mini",
        messages=[
            SystemMessage(content=[TextPart(text=recorded["messages"][0]["content"])]),
            UserMessage(content=[TextPart(text="Add and multiply the number 2 and 3")]),
            AssistantMessage(
                content=[
                    call("call_2wt6qUGrlxczUadZYf3qXyH0", "add", '{"a": 2, "b": 3}'),
                    call("call_vZOWZaH7tzu0rLZeogtafvrf", "multiply", '{"a": 2, "b": 3}'),
                ]
            ),
            ToolResultMessage(tool_call_id="call_2wt6qUGrlxczUadZYf3qXyH0", content=[TextPart(text="5")]),
            ToolResultMessage(tool_call_id="call_vZOWZaH7tzu0rLZeogtafvrf", content=[TextPart(text="6")]),
        ],
        tools=[
            ToolDefinition(name="add", description="Add two numbers", parameters=params, strict=False),
            ToolDefinition(
                name="multiply", description="Multiply two numbers", parameters=params, strict=False
            ),
        ],
        tool_choice=ToolChoice(mode="auto"),
        max_output_tokens=4000,
    )
    body = body_of(req, dep(quirks={"max_tokens_field": "max_tokens"}))
    expected = recorded["messages"]
    expected[2]["content"] = None  # the recording omits content; null is the documented equivalent
    assert body["messages"] == expected
    assert body["tools"] == recorded["tools"]
    assert body["tool_choice"] == "auto"
    assert body["max_tokens"] == 4000
    assert "stream" not in body


def test_C07_empty_assistant_text_beside_tool_calls_becomes_null_content() -> None:
    req = Request(
        model="m",
        messages=[
            UserMessage(content=[TextPart(text="dog")]),
            AssistantMessage(content=[TextPart(text=""), call("call_e2", "type_letter", '{"letter":"o"}')]),
            ToolResultMessage(tool_call_id="call_e2", content=[TextPart(text="OK")]),
        ],
    )
    asst = body_of(req)["messages"][1]
    assert asst == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_e2",
                "type": "function",
                "function": {"name": "type_letter", "arguments": '{"letter":"o"}'},
            }
        ],
    }


def test_raw_arguments_are_sent_byte_exact() -> None:
    raw = '{ "b":1,  "a" : "\\u00e9" }'
    req = Request(model="m", messages=[AssistantMessage(content=[call("c1", "f", raw)])])
    assert body_of(req)["messages"][0]["tool_calls"][0]["function"]["arguments"] == raw


def _image_tool_request(n_results: int = 1) -> Request:
    calls = [call(f"toolu_i{k}", "read_image", '{"path":"shot.png"}') for k in range(n_results)]
    results = [
        ToolResultMessage(
            tool_call_id=f"toolu_i{k}",
            content=[TextPart(text="Image loaded."), ImagePart(data=PNG, media_type="image/png")],
        )
        for k in range(n_results)
    ]
    return Request(
        model="local-vision-model",
        messages=[
            UserMessage(content=[TextPart(text="Open shot.png and tell me its colour.")]),
            AssistantMessage(content=calls),
            *results,
        ],
    )


def test_C09_image_in_tool_result_goes_in_a_following_user_message() -> None:
    msgs = body_of(_image_tool_request())["messages"]
    assert [m["role"] for m in msgs] == ["user", "assistant", "tool", "user"]
    assert msgs[2] == {"role": "tool", "tool_call_id": "toolu_i0", "content": "Image loaded."}
    images = [p for p in msgs[3]["content"] if p["type"] == "image_url"]
    assert images == [{"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}}]
    assert all(PNG not in p.get("text", "") for p in msgs[3]["content"])


def test_C09_image_in_tool_message_when_the_server_accepts_it() -> None:
    msgs = body_of(_image_tool_request(), dep(quirks={"images_in_tool_results": True}))["messages"]
    assert [m["role"] for m in msgs] == ["user", "assistant", "tool"]
    assert msgs[2]["content"] == [
        {"type": "text", "text": "Image loaded."},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
    ]


def test_C09_model_without_images_is_a_capability_error_naming_the_call() -> None:
    with pytest.raises(CapabilityError) as err:
        body_of(_image_tool_request(), dep(supports_images=False))
    assert "toolu_i0" in err.value.message
    assert err.value.status == 400


def test_C09_several_image_results_share_one_user_message_after_the_tool_run() -> None:
    msgs = body_of(_image_tool_request(3))["messages"]
    assert [m["role"] for m in msgs] == ["user", "assistant", "tool", "tool", "tool", "user"]
    follow = msgs[5]["content"]
    assert sum(p["type"] == "image_url" for p in follow) == 3
    labels = [p["text"] for p in follow if p["type"] == "text"]
    assert [lbl for lbl in labels if "toolu_i1" in lbl]


def test_user_images_by_url_and_base64() -> None:
    req = Request(
        model="m",
        messages=[
            UserMessage(
                content=[
                    TextPart(text="look"),
                    ImagePart(url="https://example.com/a.png"),
                    ImagePart(data="QUJD", media_type="image/jpeg"),
                ]
            )
        ],
    )
    assert body_of(req)["messages"][0]["content"] == [
        {"type": "text", "text": "look"},
        {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}},
        {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,QUJD"}},
    ]
    with pytest.raises(CapabilityError):
        body_of(req, dep(supports_images=False))


def test_system_parts_merge_and_thinking_is_not_sent() -> None:
    prov = Provenance(api="anthropic_messages", provider="anthropic", model="claude")
    req = Request(
        model="m",
        messages=[
            SystemMessage(content=[TextPart(text="A"), TextPart(text="B")]),
            UserMessage(content=[TextPart(text="q")]),
            AssistantMessage(
                content=[ThinkingPart(text="hmm", signature="sig", provenance=prov), TextPart(text="ans")]
            ),
        ],
    )
    msgs = body_of(req)["messages"]
    assert msgs[0] == {"role": "system", "content": "A\n\nB"}
    assert msgs[2] == {"role": "assistant", "content": "ans"}


def test_consecutive_assistant_messages_merge_and_empty_ones_drop() -> None:
    """simonw-llm kimi-k2 recording: an empty assistant message, then one with tool_calls."""
    req = Request(
        model="m",
        messages=[
            UserMessage(content=[TextPart(text="q")]),
            AssistantMessage(content=[]),
            AssistantMessage(content=[call("0", "f", "{}")]),
            ToolResultMessage(tool_call_id="0", content=[TextPart(text="r")]),
        ],
    )
    msgs = body_of(req)["messages"]
    assert [m["role"] for m in msgs] == ["user", "assistant", "tool"]
    assert msgs[1]["tool_calls"][0]["id"] == "0"


def test_names_and_long_ids_are_rewritten_and_remembered() -> None:
    long_id = "toolu_" + "x" * 60
    req = Request(
        model="m",
        messages=[
            AssistantMessage(content=[call(long_id, "fs.read file", "{}")]),
            ToolResultMessage(tool_call_id=long_id, content=[TextPart(text="ok")]),
        ],
        tools=[ToolDefinition(name="fs.read file")],
        tool_choice=ToolChoice(mode="tool", name="fs.read file"),
    )
    up, ctx = openai_chat.build_request(req, dep(), None)
    body = orjson.loads(up.body)
    sent_id = body["messages"][0]["tool_calls"][0]["id"]
    sent_name = body["tools"][0]["function"]["name"]
    assert len(sent_id) == 40 and body["messages"][1]["tool_call_id"] == sent_id
    assert openai_chat.OPENAI_ID.match(sent_id)
    assert (
        sent_name.startswith("fs_read_file_")
        and body["messages"][0]["tool_calls"][0]["function"]["name"] == sent_name
    )
    assert body["tool_choice"] == {"type": "function", "function": {"name": sent_name}}
    assert ctx.names.from_upstream_id(sent_id) == long_id
    assert ctx.names.from_upstream_name(sent_name) == "fs.read file"


@pytest.mark.parametrize(
    ("choice", "wire"),
    [
        (ToolChoice(mode="auto"), "auto"),
        (ToolChoice(mode="none"), "none"),
        (ToolChoice(mode="required"), "required"),
        (ToolChoice(mode="tool", name="f"), {"type": "function", "function": {"name": "f"}}),
    ],
)
def test_tool_choice_mapping(choice: ToolChoice, wire: Any) -> None:
    body = body_of(Request(model="m", messages=[], tools=[ToolDefinition(name="f")], tool_choice=choice))
    assert body["tool_choice"] == wire


def test_parallel_false_and_sampling_options() -> None:
    req = Request(
        model="m",
        messages=[],
        tools=[ToolDefinition(name="f", description="d", strict=True)],
        tool_choice=ToolChoice(mode="auto", parallel=False),
        max_output_tokens=77,
        temperature=0.2,
        top_p=0.9,
        top_k=5,
        stop=["END"],
        response_format=ResponseFormat(
            type="json_schema", name="out", schema={"type": "object"}, strict=True
        ),
        thinking=ThinkingConfig(effort="low"),
        user="u1",
        stream=True,
    )
    body = body_of(req)
    assert body["parallel_tool_calls"] is False
    assert body["tools"][0] == {
        "type": "function",
        "function": {
            "name": "f",
            "description": "d",
            "parameters": {"type": "object", "properties": {}},
            "strict": True,
        },
    }
    assert body["max_completion_tokens"] == 77 and "max_tokens" not in body
    assert (body["temperature"], body["top_p"], body["stop"], body["user"]) == (0.2, 0.9, ["END"], "u1")
    assert "top_k" not in body
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "out", "schema": {"type": "object"}, "strict": True},
    }
    assert body["reasoning_effort"] == "low"
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    no_usage = body_of(req, dep(quirks={"stream_usage": False}, supports_thinking=False))
    assert "stream_options" not in no_usage and "reasoning_effort" not in no_usage


def test_to_wire_body_is_the_dict_level_entry_point() -> None:
    names = NameMap()
    body = openai_chat.to_wire_body(
        Request(
            model="m",
            messages=[UserMessage(content=[TextPart(text="hi")])],
            tools=[ToolDefinition(name="a.b")],
        ),
        dep(),
        names,
    )
    assert body["model"] == "gpt-4o-mini"
    assert body["messages"] == [{"role": "user", "content": "hi"}]
    assert names.from_upstream_name(body["tools"][0]["function"]["name"]) == "a.b"


def test_tool_choice_is_not_sent_without_tools() -> None:
    """OpenAI rejects tool_choice when no tools are given."""
    body = body_of(Request(model="m", messages=[], tool_choice=ToolChoice(mode="none", parallel=False)))
    assert "tool_choice" not in body and "parallel_tool_calls" not in body


def _with_native(native: NativeFields, thinking: ThinkingConfig | None = None) -> Request:
    return Request(
        model="m", messages=[UserMessage(content=[TextPart(text="q")])], native=native, thinking=thinking
    )


def test_the_clients_own_fields_are_merged_verbatim() -> None:
    native = NativeFields(
        api="openai_chat", fields={"service_tier": "flex", "logit_bias": {"1": 2}}, paths=["logit_bias"]
    )
    b = body_of(_with_native(native))
    assert b["service_tier"] == "flex" and b["logit_bias"] == {"1": 2}


@pytest.mark.parametrize(
    ("thinking", "effort", "sent"),
    [
        (ThinkingConfig(effort="high"), "xhigh", "xhigh"),
        (ThinkingConfig(enabled=False), "none", "none"),
        (ThinkingConfig(enabled=False, effort="high"), "xhigh", "none"),  # thinking off: OpenAI's own value
    ],
)
def test_the_clients_own_reasoning_effort_is_sent_as_sent_and_thinking_off_is_none(
    thinking: ThinkingConfig, effort: str, sent: str | None
) -> None:
    native = NativeFields(api="openai_chat", fields={"reasoning_effort": effort})
    assert body_of(_with_native(native, thinking)).get("reasoning_effort") == sent


@pytest.mark.parametrize(
    ("thinking", "effort", "sent"),
    [
        (ThinkingConfig(effort="high"), "xhigh", "xhigh"),
        (ThinkingConfig(enabled=False), "none", "none"),
        (ThinkingConfig(enabled=False, effort="high"), "xhigh", "none"),  # thinking off: OpenAI's own value
    ],
)
def test_a_responses_clients_own_reasoning_effort_is_sent_as_sent_and_thinking_off_is_none(
    thinking: ThinkingConfig, effort: str, sent: str | None
) -> None:
    native = NativeFields(api="openai_responses", fields={"reasoning": {"effort": effort}})
    assert body_of(_with_native(native, thinking)).get("reasoning_effort") == sent
    assert "reasoning" not in body_of(_with_native(native, thinking))


def test_fields_of_another_wire_api_are_not_merged() -> None:
    native = NativeFields(api="anthropic_messages", fields={"speed": "fast"}, serving=["speed"])
    assert "speed" not in body_of(_with_native(native))


def test_a_response_format_description_goes_in_json_schema() -> None:
    rf = ResponseFormat(type="json_schema", name="City", description="A city.", schema={"type": "object"})
    body = body_of(Request(model="m", messages=[], response_format=rf))
    assert body["response_format"]["json_schema"] == {
        "name": "City",
        "description": "A city.",
        "schema": {"type": "object"},
    }


def test_a_failed_tool_results_text_starts_with_error_since_chat_has_no_error_flag() -> None:
    req = Request(
        model="m",
        messages=[
            UserMessage(content=[TextPart(text="go")]),
            AssistantMessage(content=[call("c1", "f", "{}"), call("c2", "f", "{}"), call("c3", "f", "{}")]),
            ToolResultMessage(tool_call_id="c1", content=[TextPart(text="no such file")], is_error=True),
            ToolResultMessage(
                tool_call_id="c2", content=[TextPart(text="Error: already said")], is_error=True
            ),
            ToolResultMessage(tool_call_id="c3", content=[TextPart(text="fine")]),
        ],
    )
    results = [m["content"] for m in body_of(req)["messages"] if m["role"] == "tool"]
    assert results == ["Error: no such file", "Error: already said", "fine"]


@pytest.mark.parametrize(
    ("thinking", "sent"),
    [
        (ThinkingConfig(budget_tokens=1500), "low"),
        (ThinkingConfig(budget_tokens=5000), "medium"),
        (ThinkingConfig(budget_tokens=20000), "high"),
        (ThinkingConfig(), "medium"),  # Gemini's dynamic budget, Anthropic adaptive: OpenAI's default
        (ThinkingConfig(enabled=False), "none"),  # Anthropic disabled, thinkingBudget 0
    ],
)
def test_a_thinking_budget_or_thinking_off_of_another_dialect_becomes_reasoning_effort(
    thinking: ThinkingConfig, sent: str
) -> None:
    assert body_of(_with_native(None, thinking)).get("reasoning_effort") == sent
