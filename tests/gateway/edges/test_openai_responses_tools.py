"""OpenAI Responses tools -> the schema's tools: namespace tools flattened to
``<namespace>.<name>``, ``additional_tools`` input items adding their tools, calls of namespaced
tools read back by ``namespace`` and ``name``, and what is refused by name; the requests Codex
CLI 0.171 sends (tests/fixtures/e2e/) parse whole."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest

from gateway.edges.openai_responses import parse_request
from gateway.errors import InvalidRequest, PayloadTooLarge
from gateway.schema import AssistantMessage, SystemMessage, ToolCallPart, ToolResultMessage, UserMessage

FIXTURES = Path(__file__).parents[2] / "fixtures" / "e2e"


def _parse(**body: Any) -> Any:
    body.setdefault("model", "m")
    body.setdefault("input", "hi")
    return parse_request(orjson.dumps(body))


def _refused(**body: Any) -> InvalidRequest:
    with pytest.raises(InvalidRequest) as err:
        _parse(**body)
    return err.value


def _ns(name: str, *tools: dict[str, Any], description: str = "") -> dict[str, Any]:
    return {"type": "namespace", "name": name, "description": description, "tools": list(tools)}


EXEC = {"type": "custom", "name": "exec", "description": "Run JS", "format": {"type": "text"}}
WAIT = {
    "type": "function",
    "name": "wait",
    "parameters": {"type": "object", "properties": {}},
    "strict": False,
}


def _additional(*tools: dict[str, Any]) -> dict[str, Any]:
    return {"type": "additional_tools", "id": "at_1", "role": "developer", "tools": list(tools)}


def _codex(name: str, n: int) -> dict[str, Any]:
    body: dict[str, Any] = json.loads((FIXTURES / name).read_text())["requests"][n]["body"]
    return body


def test_a_namespaces_members_are_tools_named_namespace_dot_name() -> None:
    req = _parse(
        tools=[_ns("crm", WAIT, EXEC, description="Customer tools"), {"type": "function", "name": "top"}]
    )
    assert [t.name for t in req.tools] == ["crm.wait", "crm.exec", "top"]
    assert req.tools[0].description == "Customer tools"
    assert req.tools[1].description == "Customer tools\n\nRun JS"
    assert req.tools[1].freeform == {"type": "text"}
    assert req.tools[1].parameters["required"] == ["input"]
    assert req.echo["namespaced"] == {"crm.wait": ("crm", "wait"), "crm.exec": ("crm", "exec")}
    assert req.echo["custom_tools"] == {"crm.exec"}


def test_additional_tools_items_add_their_tools_and_make_no_message() -> None:
    req = _parse(
        tools=[{"type": "function", "name": "top"}],
        input=[_additional(_ns("functions", EXEC)), {"role": "user", "content": "go"}],
    )
    assert [t.name for t in req.tools] == ["top", "functions.exec"]
    assert [type(m) for m in req.messages] == [UserMessage]


def test_a_call_with_a_namespace_is_a_call_of_the_flattened_tool() -> None:
    req = _parse(
        input=[
            _additional(_ns("functions", EXEC)),
            {"role": "user", "content": "go"},
            {
                "type": "custom_tool_call",
                "id": "ctc_1",
                "status": "completed",
                "call_id": "call_1",
                "name": "exec",
                "namespace": "functions",
                "input": "text(1)",
            },
            {
                "type": "custom_tool_call_output",
                "id": "ctco_1",
                "call_id": "call_1",
                "output": [{"type": "input_text", "text": "1"}],
            },
        ]
    )
    assistant, result = req.messages[1], req.messages[2]
    assert isinstance(assistant, AssistantMessage) and isinstance(result, ToolResultMessage)
    call = assistant.content[0]
    assert isinstance(call, ToolCallPart)
    assert (call.name, call.arguments) == ("functions.exec", {"input": "text(1)"})
    assert (result.tool_call_id, result.name) == ("call_1", "functions.exec")


def test_a_tool_choice_naming_a_namespace_chooses_the_flattened_tool() -> None:
    req = _parse(
        tools=[_ns("crm", WAIT)], tool_choice={"type": "function", "name": "wait", "namespace": "crm"}
    )
    assert req.tool_choice is not None and (req.tool_choice.mode, req.tool_choice.name) == (
        "tool",
        "crm.wait",
    )


@pytest.mark.parametrize(
    ("body", "param", "words"),
    [
        ({"tools": [_ns("crm", WAIT), {"type": "function", "name": "crm.wait"}]}, "tools[1].name", "also"),
        ({"tools": [_ns("a", _ns("b", WAIT))]}, "tools[0].tools[0].type", "function and custom"),
        ({"tools": [_ns("a", {"type": "web_search"})]}, "tools[0].tools[0].type", "function and custom"),
        ({"tools": [_ns("a.b", WAIT)]}, "tools[0].name", "'.'"),
        ({"tools": [_ns("a", {**WAIT, "defer_loading": True})]}, "tools[0].tools[0].defer_loading", "defer"),
        ({"input": [{**_additional(WAIT), "role": "user"}]}, "input[0].role", "developer"),
        ({"input": [{**_additional(WAIT), "content": "x"}]}, "input[0].content", "unknown field"),
        (
            {"input": [_additional({"type": "web_search"}), {"role": "user", "content": "x"}]},
            "input[0].tools[0].type",
            "hosted tool",
        ),
        (
            {"tools": [WAIT], "input": [_additional(WAIT), {"role": "user", "content": "x"}]},
            "input[0].tools[0].name",
            "also tools[0]",
        ),
    ],
)
def test_what_a_namespace_or_additional_tools_cannot_carry_is_refused_by_name(
    body: dict[str, Any], param: str, words: str
) -> None:
    err = _refused(**body)
    assert err.param == param and words in err.message


def test_the_namespaces_members_count_toward_the_tool_limit() -> None:
    members = [{"type": "function", "name": f"f{i}"} for i in range(300)]
    with pytest.raises(PayloadTooLarge, match="max_request_tools"):  # 600 > 512, each list < 512
        _parse(tools=[_ns("a", *members), _ns("b", *members)])


def test_codex_code_mode_requests_parse_with_their_namespaced_tools() -> None:
    first = parse_request(orjson.dumps(_codex("codex-0.171.0-exec-tool-loop.json", 0)))
    names = [t.name for t in first.tools]
    assert names[:2] == ["functions.exec", "functions.wait"] and "clock.sleep" in names
    assert "collaboration.spawn_agent" in names
    assert first.tools[0].freeform is not None and first.tools[0].freeform["syntax"] == "lark"
    assert isinstance(first.messages[0], SystemMessage)
    assert first.native is not None and first.native.api == "openai_responses"
    extra = first.native.fields
    assert extra["reasoning"] == {"context": "all_turns"} and extra["text"] == {"verbosity": "low"}
    assert set(extra["client_metadata"]) >= {"session_id", "turn_id"} and "prompt_cache_key" in extra
    second = parse_request(orjson.dumps(_codex("codex-0.171.0-exec-tool-loop.json", 1)))
    assert isinstance(second.messages[-1], ToolResultMessage)
    assert "the secret is 42" in second.messages[-1].content[1].text  # type: ignore[union-attr]


def test_codex_requests_for_a_model_outside_its_catalog_parse_with_the_multi_agent_namespace() -> None:
    req = parse_request(orjson.dumps(_codex("codex-0.171.0-exec-model-outside-catalog.json", 1)))
    names = [t.name for t in req.tools]
    assert "exec_command" in names and "multi_agent_v1.spawn_agent" in names
    assert isinstance(req.messages[-1], ToolResultMessage)


@pytest.mark.parametrize("kind", ["local_shell", "shell", "apply_patch"])
def test_a_client_run_tool_type_is_refused_by_name_saying_how_to_declare_it(kind: str) -> None:
    with pytest.raises(InvalidRequest) as exc:
        parse_request(orjson.dumps({"model": "m", "input": "hi", "tools": [{"type": kind}]}))
    assert exc.value.param == "tools[0].type"
    assert kind in str(exc.value) and "function or custom tool" in str(exc.value)
