"""Request side of gateway/providers/anthropic_messages.py: internal schema -> Messages body."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from _wire_helpers import cassette, request_body

from gateway.config import Deployment, Quirks
from gateway.errors import CapabilityError
from gateway.providers import anthropic_messages
from gateway.providers.naming import ANTHROPIC_ID, TOOL_NAME
from gateway.schema import (
    AssistantMessage,
    ImagePart,
    NativeFields,
    NativePart,
    OwnKeys,
    Provenance,
    RedactedThinkingPart,
    Request,
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
PROV = Provenance(api="anthropic_messages", provider="anthropic", model="claude-sonnet-4-20250514")


def dep(**kw: Any) -> Deployment:
    quirks = kw.pop("quirks", {})
    return Deployment(
        name="an", api="anthropic_messages", model="claude-sonnet-4-20250514", quirks=Quirks(**quirks), **kw
    )


def body_of(req: Request, d: Deployment | None = None) -> dict[str, Any]:
    up, _ = anthropic_messages.build_request(req, d or dep(), "sk-ant")
    return dict(orjson.loads(up.body))


def call(id_: str, name: str, args: dict[str, Any]) -> ToolCallPart:
    return ToolCallPart(id=id_, name=name, arguments=args, raw_arguments=orjson.dumps(args).decode())


def test_url_and_headers() -> None:
    req = Request(model="m", messages=[UserMessage(content=[TextPart(text="hi")])], stream=True)
    up, _ = anthropic_messages.build_request(
        req, dep(quirks={"extra_headers": {"anthropic-beta": "b1"}}), "k"
    )
    assert up.url == "https://api.anthropic.com/v1/messages"
    assert up.headers["x-api-key"] == "k"
    assert up.headers["anthropic-version"] == "2023-06-01"
    assert up.headers["content-type"] == "application/json"
    assert up.headers["anthropic-beta"] == "b1"
    assert up.stream is True and orjson.loads(up.body)["stream"] is True
    v1 = anthropic_messages.build_request(req, dep(base_url="http://127.0.0.1:9/v1"), None)[0]
    assert v1.url == "http://127.0.0.1:9/v1/messages" and "x-api-key" not in v1.headers


def test_recorded_fantasy_tool_round_trip_request_is_reproduced() -> None:
    """Second request of fantasy TestAnthropicCommon/claude-sonnet-4/multi_tool.yaml."""
    recorded = request_body(
        cassette("fantasy/providertests/testdata/TestAnthropicCommon/claude-sonnet-4/multi_tool.yaml")[1]
    )
    params = recorded["tools"][0]["input_schema"]
    req = Request(
        model="claude",
        messages=[
            SystemMessage(content=[TextPart(text=recorded["system"][0]["text"])]),
            UserMessage(content=[TextPart(text="Add and multiply the number 2 and 3")]),
            AssistantMessage(
                content=[
                    TextPart(text="I'll add and multiply the numbers 2 and 3 for you."),
                    call("toolu_01StBeRxDEwsqcc3arbDgpS9", "add", {"a": 2, "b": 3}),
                    call("toolu_01AC6WQhj2iRkdYHgTAGMpVQ", "multiply", {"a": 2, "b": 3}),
                ]
            ),
            ToolResultMessage(tool_call_id="toolu_01StBeRxDEwsqcc3arbDgpS9", content=[TextPart(text="5")]),
            ToolResultMessage(tool_call_id="toolu_01AC6WQhj2iRkdYHgTAGMpVQ", content=[TextPart(text="6")]),
        ],
        tools=[
            ToolDefinition(name="add", description="Add two numbers", parameters=params),
            ToolDefinition(name="multiply", description="Multiply two numbers", parameters=params),
        ],
        tool_choice=ToolChoice(mode="auto"),
        max_output_tokens=4000,
    )
    body = body_of(req)
    assert body["messages"] == recorded["messages"]
    assert body["system"] == recorded["system"]
    assert body["tools"] == recorded["tools"]
    assert body["max_tokens"] == 4000 and body["model"] == "claude-sonnet-4-20250514"
    assert body["tool_choice"] == {"type": "auto"}


def test_C04_tool_result_comes_first_in_the_user_turn() -> None:
    req = Request(
        model="m",
        messages=[
            UserMessage(content=[TextPart(text="List the current folder.")]),
            AssistantMessage(content=[call("toolu_l1", "list_dir", {"path": "."})]),
            UserMessage(content=[TextPart(text="Here is the listing:")]),
            ToolResultMessage(tool_call_id="toolu_l1", content=[TextPart(text="a.txt\nb.txt")]),
        ],
    )
    msgs = body_of(req)["messages"]
    assert [m["role"] for m in msgs] == ["user", "assistant", "user"]
    assert msgs[2]["content"] == [
        {
            "type": "tool_result",
            "tool_use_id": "toolu_l1",
            "content": [{"type": "text", "text": "a.txt\nb.txt"}],
        },
        {"type": "text", "text": "Here is the listing:"},
    ]


def test_C07_empty_text_block_beside_tool_use_is_not_sent() -> None:
    req = Request(
        model="m",
        messages=[
            UserMessage(content=[TextPart(text="dog")]),
            AssistantMessage(content=[TextPart(text=""), call("toolu_e1", "type_letter", {"letter": "d"})]),
            ToolResultMessage(tool_call_id="toolu_e1", content=[TextPart(text="OK")]),
        ],
    )
    msgs = body_of(req)["messages"]
    assert msgs[1] == {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "toolu_e1", "name": "type_letter", "input": {"letter": "d"}}],
    }


def test_C07_whitespace_only_text_and_empty_messages_are_dropped_without_placeholder() -> None:
    req = Request(
        model="m",
        messages=[
            UserMessage(content=[TextPart(text="q")]),
            AssistantMessage(content=[TextPart(text="\n\n")]),
            UserMessage(content=[TextPart(text="again")]),
        ],
    )
    msgs = body_of(req)["messages"]
    assert msgs == [
        {"role": "user", "content": [{"type": "text", "text": "q"}, {"type": "text", "text": "again"}]}
    ]


def test_C08_tool_result_with_image_is_an_array_with_identical_base64() -> None:
    req = Request(
        model="m",
        messages=[
            UserMessage(content=[TextPart(text="What colour is the screen?")]),
            AssistantMessage(content=[call("call_s1", "take_screenshot", {})]),
            ToolResultMessage(
                tool_call_id="call_s1",
                content=[
                    TextPart(text="Screenshot captured."),
                    ImagePart(url=f"data:image/png;base64,{PNG}"),
                ],
            ),
        ],
    )
    result = body_of(req)["messages"][2]["content"][0]
    assert result == {
        "type": "tool_result",
        "tool_use_id": "call_s1",
        "content": [
            {"type": "text", "text": "Screenshot captured."},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
        ],
    }
    with pytest.raises(CapabilityError) as err:
        body_of(req, dep(supports_images=False))
    assert "call_s1" in err.value.message


def test_images_by_url_and_is_error_and_cache_control_pass_through() -> None:
    cc = {"type": "ephemeral"}
    req = Request(
        model="m",
        messages=[
            SystemMessage(content=[TextPart(text="sys", cache_control=cc)]),
            UserMessage(
                content=[
                    ImagePart(url="https://x/y.png", cache_control=cc),
                    TextPart(text="see", cache_control=cc),
                ]
            ),
            AssistantMessage(content=[call("t1", "f", {})]),
            ToolResultMessage(
                tool_call_id="t1", content=[TextPart(text="boom")], is_error=True, cache_control=cc
            ),
        ],
        tools=[ToolDefinition(name="f", cache_control=cc)],
    )
    body = body_of(req)
    assert body["system"] == [{"type": "text", "text": "sys", "cache_control": cc}]
    assert body["messages"][0]["content"] == [
        {"type": "image", "source": {"type": "url", "url": "https://x/y.png"}, "cache_control": cc},
        {"type": "text", "text": "see", "cache_control": cc},
    ]
    assert body["messages"][2]["content"][0] == {
        "type": "tool_result",
        "tool_use_id": "t1",
        "content": [{"type": "text", "text": "boom"}],
        "is_error": True,
        "cache_control": cc,
    }
    assert body["tools"][0]["cache_control"] == cc


def test_thinking_goes_back_with_identical_signature_and_unsigned_thinking_is_dropped() -> None:
    sig = "Es8DCkYICxgCKkBROcM3239oIjVRtMTZin6UAjoE9xO0SXVQMr4UmHPaf8AB+/="
    req = Request(
        model="m",
        messages=[
            UserMessage(content=[TextPart(text="q")]),
            AssistantMessage(
                content=[
                    ThinkingPart(text="let me think", signature=sig, provenance=PROV),
                    RedactedThinkingPart(data="EmwKAhgBEgy3va", provenance=PROV),
                    ThinkingPart(text="unsigned", provenance=PROV),
                    call("toolu_1", "weather", {"location": "Florence, Italy"}),
                ]
            ),
        ],
    )
    content = body_of(req)["messages"][1]["content"]
    assert content[0] == {"type": "thinking", "thinking": "let me think", "signature": sig}
    assert content[1] == {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va"}
    assert [b["type"] for b in content] == ["thinking", "redacted_thinking", "tool_use"]


def test_ids_and_names_outside_anthropic_rules_are_rewritten_consistently() -> None:
    req = Request(
        model="m",
        messages=[
            AssistantMessage(content=[call("call:1/2", "mcp.fs/read", {"p": 1})]),
            ToolResultMessage(tool_call_id="call:1/2", content=[TextPart(text="ok")]),
        ],
        tools=[ToolDefinition(name="mcp.fs/read")],
        tool_choice=ToolChoice(mode="tool", name="mcp.fs/read"),
    )
    up, ctx = anthropic_messages.build_request(req, dep(), None)
    body = orjson.loads(up.body)
    use = body["messages"][0]["content"][0]
    result = body["messages"][1]["content"][0]
    assert ANTHROPIC_ID.match(use["id"]) and use["id"] == result["tool_use_id"]
    assert TOOL_NAME.match(use["name"]) and body["tools"][0]["name"] == use["name"]
    assert body["tool_choice"] == {"type": "tool", "name": use["name"]}
    assert ctx.names.from_upstream_id(use["id"]) == "call:1/2"
    assert ctx.names.from_upstream_name(use["name"]) == "mcp.fs/read"


@pytest.mark.parametrize(
    ("choice", "wire"),
    [
        (ToolChoice(mode="auto"), {"type": "auto"}),
        (ToolChoice(mode="required"), {"type": "any"}),
        (ToolChoice(mode="none"), {"type": "none"}),
        (ToolChoice(mode="tool", name="f"), {"type": "tool", "name": "f"}),
        (ToolChoice(mode="auto", parallel=False), {"type": "auto", "disable_parallel_tool_use": True}),
        (ToolChoice(mode="required", parallel=False), {"type": "any", "disable_parallel_tool_use": True}),
    ],
)
def test_tool_choice_mapping(choice: ToolChoice, wire: dict[str, Any]) -> None:
    assert (
        body_of(Request(model="m", messages=[], tools=[ToolDefinition(name="f")], tool_choice=choice))[
            "tool_choice"
        ]
        == wire
    )


def test_max_tokens_is_always_present() -> None:
    assert body_of(Request(model="m", messages=[]))["max_tokens"] == 4096
    assert body_of(Request(model="m", messages=[]), dep(max_output_tokens=64000))["max_tokens"] == 64000
    assert (
        body_of(Request(model="m", messages=[], max_output_tokens=10), dep(max_output_tokens=64000))[
            "max_tokens"
        ]
        == 10
    )


def test_thinking_budget_rules() -> None:
    b = body_of(
        Request(model="m", messages=[], max_output_tokens=4096, thinking=ThinkingConfig(budget_tokens=4000))
    )
    assert b["thinking"] == {"type": "enabled", "budget_tokens": 4000} and b["max_tokens"] == 4096
    b = body_of(Request(model="m", messages=[], max_output_tokens=256, thinking=ThinkingConfig()))
    assert b["thinking"] == {"type": "enabled", "budget_tokens": 1024} and b["max_tokens"] == 1024 + 256
    b = body_of(
        Request(model="m", messages=[], max_output_tokens=20000, thinking=ThinkingConfig(effort="medium"))
    )
    assert b["thinking"]["budget_tokens"] == 8192 and b["max_tokens"] == 20000
    b = body_of(Request(model="m", messages=[], thinking=ThinkingConfig(budget_tokens=10)))
    assert b["thinking"]["budget_tokens"] == 1024
    assert body_of(Request(model="m", messages=[], thinking=ThinkingConfig(enabled=False)))["thinking"] == {
        "type": "disabled"
    }
    assert "thinking" not in body_of(
        Request(model="m", messages=[], thinking=ThinkingConfig()), dep(supports_thinking=False)
    )


def test_sampling_stop_and_user() -> None:
    b = body_of(Request(model="m", messages=[], temperature=0.5, top_p=0.8, top_k=3, stop=["X"], user="u9"))
    assert (b["temperature"], b["top_p"], b["top_k"], b["stop_sequences"]) == (0.5, 0.8, 3, ["X"])
    assert b["metadata"] == {"user_id": "u9"}
    assert "stream" not in b and "tools" not in b and "system" not in b


def test_tool_choice_is_not_sent_without_tools() -> None:
    assert "tool_choice" not in body_of(Request(model="m", messages=[], tool_choice=ToolChoice(mode="none")))


def test_a_system_message_after_the_conversation_began_stays_in_place() -> None:
    req = Request(
        model="m",
        messages=[
            SystemMessage(content=[TextPart(text="lead")]),
            UserMessage(content=[TextPart(text="q")]),
            AssistantMessage(content=[TextPart(text="a")]),
            SystemMessage(content=[TextPart(text="from now on, annotate")]),
            UserMessage(content=[TextPart(text="again")]),
        ],
    )
    b = body_of(req)
    assert b["system"] == [{"type": "text", "text": "lead"}]
    assert b["messages"][2] == {
        "role": "system",
        "content": [{"type": "text", "text": "from now on, annotate"}],
    }
    assert [m["role"] for m in b["messages"]] == ["user", "assistant", "system", "user"]


def _native(**fields: Any) -> NativeFields:
    return NativeFields(api="anthropic_messages", fields=fields)


def test_the_clients_own_fields_are_merged_thinking_verbatim_and_max_tokens_kept() -> None:
    req = Request(
        model="m",
        messages=[UserMessage(content=[TextPart(text="q")])],
        max_output_tokens=100,
        tools=[ToolDefinition(name="a.b", parameters={"type": "object"})],
        thinking=ThinkingConfig(effort="high"),
        native=_native(
            thinking={"type": "adaptive", "display": "omitted"},
            output_config={"effort": "max"},
            tool_fields={"a.b": {"defer_loading": True}},
            cache_control={"type": "ephemeral"},
            speed="fast",
        ),
    )
    b = body_of(req)
    assert b["thinking"] == {"type": "adaptive", "display": "omitted"}
    assert b["output_config"] == {"effort": "max"}
    assert b["max_tokens"] == 100
    assert b["tools"][0]["defer_loading"] is True and b["tools"][0]["name"] != "a.b"
    assert b["cache_control"] == {"type": "ephemeral"} and b["speed"] == "fast"


def test_the_thinking_policy_turning_thinking_off_wins_over_the_clients_own_thinking() -> None:
    req = Request(
        model="m",
        messages=[UserMessage(content=[TextPart(text="q")])],
        thinking=ThinkingConfig(enabled=False),
        native=_native(thinking={"type": "adaptive"}),
    )
    assert body_of(req)["thinking"] == {"type": "disabled"}


def test_fields_of_another_wire_api_are_not_merged() -> None:
    req = Request(
        model="m",
        messages=[UserMessage(content=[TextPart(text="q")])],
        native=NativeFields(api="openai_chat", fields={"seed": 1}, serving=["seed"]),
    )
    assert "seed" not in body_of(req)


def test_server_tools_and_server_blocks_and_tool_references_are_sent_verbatim() -> None:
    """Tool search (Claude Code's deferred tools) and a web search round trip: what the
    Anthropic edge carries as native content reaches the upstream body unchanged."""
    search = {"type": "web_search_20250305", "name": "web_search", "max_uses": 2}
    call = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "x"}}
    result = {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []}
    ref = {"type": "tool_reference", "tool_name": "Read"}
    req = Request(
        model="m",
        messages=[
            UserMessage(content=[TextPart(text="q")]),
            AssistantMessage(
                content=[
                    NativePart(api="anthropic_messages", block=call),
                    NativePart(api="anthropic_messages", block=result),
                    ToolCallPart(id="toolu_1", name="ToolSearch", arguments={"query": "read"}),
                ]
            ),
            ToolResultMessage(
                tool_call_id="toolu_1", content=[NativePart(api="anthropic_messages", block=ref)]
            ),
        ],
        tools=[ToolDefinition(name="Read", parameters={"type": "object"})],
        native=_native(server_tools=[search], tool_fields={"Read": {"defer_loading": True}}),
    )
    b = body_of(req)
    assert b["tools"][1] == search and b["tools"][0]["defer_loading"] is True
    assert b["messages"][1]["content"][:2] == [call, result]
    want = {"type": "tool_result", "tool_use_id": "toolu_1", "content": [ref]}
    assert b["messages"][2]["content"] == [want]


def test_server_tools_keep_their_place_among_the_tools() -> None:
    """The tools are a cached prefix: each server tool goes where the client put it."""
    search = {"type": "web_search_20250305", "name": "web_search"}
    fetch = {"type": "web_fetch_20250910", "name": "web_fetch"}
    tools = [ToolDefinition(name=n, parameters={"type": "object"}) for n in ("Read", "Write")]
    req = Request(
        model="m",
        messages=[UserMessage(content=[TextPart(text="q")])],
        tools=tools,
        native=_native(server_tools=[search, fetch], server_tool_at=[0, 2]),
    )
    assert [t["name"] for t in body_of(req)["tools"]] == ["web_search", "Read", "web_fetch", "Write"]


def test_server_tools_alone_are_sent_with_the_tool_choice() -> None:
    search = {"type": "web_search_20250305", "name": "web_search"}
    req = Request(
        model="m",
        messages=[UserMessage(content=[TextPart(text="q")])],
        tool_choice=ToolChoice(mode="tool", name="web_search"),
        native=_native(server_tools=[search]),
    )
    b = body_of(req)
    assert b["tools"] == [search]
    assert b["tool_choice"] == {"type": "tool", "name": "web_search"}


def test_a_messages_own_keys_go_back_on_it_as_sent() -> None:
    """A system message's per-turn ``output_config`` (Claude Code) is sent on that message; a
    leading system message with own keys stays in place rather than joining ``system``."""
    req = Request(
        model="m",
        messages=[
            SystemMessage(content=[TextPart(text="lead")], own=_own(x_key=True)),
            UserMessage(content=[TextPart(text="q")]),
            SystemMessage(content=[TextPart(text="env")], own=_own(output_config={"effort": "medium"})),
            ToolResultMessage(tool_call_id="t1", content=[TextPart(text="r")], own=_own(y_key=1)),
            UserMessage(content=[TextPart(text="more")], own=_own(y_key=1)),
            UserMessage(content=[TextPart(text="chat's")], own=OwnKeys(api="openai_chat", keys={"z": 1})),
        ],
    )
    b = body_of(req)
    assert "system" not in b
    assert b["messages"][0] == {
        "role": "system",
        "content": [{"type": "text", "text": "lead"}],
        "x_key": True,
    }
    assert b["messages"][2] == {
        "role": "system",
        "content": [{"type": "text", "text": "env"}],
        "output_config": {"effort": "medium"},
    }
    assert b["messages"][3]["y_key"] == 1 and [c["type"] for c in b["messages"][3]["content"]] == [
        "tool_result",
        "text",
    ]
    assert b["messages"][4] == {"role": "user", "content": [{"type": "text", "text": "chat's"}]}


def _own(**keys: Any) -> OwnKeys:
    return OwnKeys(api="anthropic_messages", keys=keys)


def test_forwarded_client_headers_are_sent_under_the_deployments_own() -> None:
    req = Request(model="m", messages=[], anthropic_headers={"x-app": "cli", "x-claude-code-session-id": "s"})
    up, _ = anthropic_messages.build_request(req, dep(quirks={"extra_headers": {"x-app": "mine"}}), "k")
    assert up.headers["x-claude-code-session-id"] == "s" and up.headers["x-app"] == "mine"
    assert up.headers["anthropic-version"] == "2023-06-01" and up.headers["x-api-key"] == "k"


STRICT_TOOL = ToolDefinition(
    name="get_weather",
    parameters={
        "type": "object",
        "properties": {"city": {"type": "string", "minLength": 2}},
        "required": ["city"],
    },
    strict=True,
)


def test_a_strict_tool_reaches_a_claude_with_structured_outputs_with_its_schema_normalised() -> None:
    req = Request(model="m", messages=[UserMessage(content=[TextPart(text="hi")])], tools=[STRICT_TOOL])
    claude = Deployment(name="c", api="anthropic_messages", model="claude-sonnet-4-5")
    (tool,) = body_of(req, claude)["tools"]
    assert tool["strict"] is True
    assert tool["input_schema"]["additionalProperties"] is False
    assert "minLength" not in tool["input_schema"]["properties"]["city"]  # moved into the description


def test_a_strict_tool_goes_without_strict_to_a_claude_without_structured_outputs() -> None:
    req = Request(model="m", messages=[UserMessage(content=[TextPart(text="hi")])], tools=[STRICT_TOOL])
    (tool,) = body_of(req)["tools"]
    assert "strict" not in tool and tool["input_schema"] == STRICT_TOOL.parameters
