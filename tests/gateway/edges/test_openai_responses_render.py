"""Internal answers -> OpenAI Responses objects: output items per part, status and incomplete
details, usage, the echo of the request, withheld calls kept out, errors and token counts."""

from __future__ import annotations

from typing import Any

import openai.types.responses as rt
import orjson

from gateway.edges.openai_responses import parse_request, render_error, render_input_tokens, render_response
from gateway.edges.signatures import unwrap_signature
from gateway.errors import InvalidRequest, ModelNotFound
from gateway.schema import (
    AssistantMessage,
    Provenance,
    RedactedThinkingPart,
    Response,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    Usage,
    WithheldToolCall,
)

PROV = Provenance(api="anthropic_messages", provider="anthropic", model="claude-x")


def _request(**body: Any) -> Any:
    body.setdefault("model", "m")
    body.setdefault("input", "hi")
    return parse_request(orjson.dumps(body))


def _response(*parts: Any, stop: str = "stop", **kw: Any) -> Response:
    return Response(
        id="msg_1",
        model="up-model",
        message=AssistantMessage(content=list(parts)),
        stop_reason=stop,  # type: ignore[arg-type]
        usage=Usage(input_tokens=10, cache_read_tokens=5, output_tokens=7, reasoning_tokens=2),
        **kw,
    )


def test_output_items_follow_the_answer_parts_and_the_sdk_reads_them() -> None:
    body = render_response(
        _response(
            ThinkingPart(text="hmm", signature="SIG", provenance=PROV),
            TextPart(text="hello"),
            ToolCallPart(id="c1", name="f", arguments={"a": 1}, raw_arguments='{"a":1}'),
            stop="tool_use",
        ),
        _request(include=["reasoning.encrypted_content"]),
    )
    parsed = rt.Response.model_validate(body)
    assert parsed.id == "resp_msg_1" and parsed.status == "completed"
    reasoning, message, call = parsed.output
    assert isinstance(reasoning, rt.ResponseReasoningItem) and reasoning.summary[0].text == "hmm"
    assert unwrap_signature(reasoning.encrypted_content or "") == ("SIG", PROV)
    assert isinstance(message, rt.ResponseOutputMessage) and parsed.output_text == "hello"
    assert isinstance(call, rt.ResponseFunctionToolCall)
    assert (call.call_id, call.name, call.arguments) == ("c1", "f", '{"a":1}')
    assert len({reasoning.id, message.id, call.id}) == 3
    assert body["usage"] == {
        "input_tokens": 15,
        "input_tokens_details": {"cached_tokens": 5, "cache_write_tokens": 0},
        "output_tokens": 7,
        "output_tokens_details": {"reasoning_tokens": 2},
        "total_tokens": 22,
    }


def test_encrypted_content_only_when_included() -> None:
    body = render_response(
        _response(ThinkingPart(text="t", signature="S", provenance=PROV), RedactedThinkingPart(data="D")),
        _request(),
    )
    assert [("encrypted_content" in item) for item in body["output"]] == [False, False]


def test_a_custom_tool_call_is_rendered_with_its_input() -> None:
    request = _request(tools=[{"type": "custom", "name": "patch"}])
    call = ToolCallPart(
        id="c1", name="patch", arguments={"input": "*** Begin"}, raw_arguments='{"input":"*** Begin"}'
    )
    (item,) = render_response(_response(call, stop="tool_use"), request)["output"]
    assert item["type"] == "custom_tool_call" and item["input"] == "*** Begin"
    assert isinstance(
        rt.Response.model_validate(render_response(_response(call), request)).output[0],
        rt.ResponseCustomToolCall,
    )


def test_a_call_of_a_namespaced_tool_has_the_members_name_and_the_namespace() -> None:
    request = _request(
        input=[
            {
                "type": "additional_tools",
                "id": "at_1",
                "role": "developer",
                "tools": [
                    {
                        "type": "namespace",
                        "name": "functions",
                        "description": "",
                        "tools": [{"type": "custom", "name": "exec"}, {"type": "function", "name": "wait"}],
                    }
                ],
            },
            {
                "type": "message",
                "id": "msg_1",
                "role": "user",
                "content": [{"type": "input_text", "text": "go"}],
            },
        ]
    )
    custom = ToolCallPart(
        id="c1", name="functions.exec", arguments={"input": "js"}, raw_arguments='{"input":"js"}'
    )
    function = ToolCallPart(id="c2", name="functions.wait", arguments={}, raw_arguments="{}")
    body = render_response(_response(custom, function, stop="tool_use"), request)
    first, second = body["output"]
    assert first == {
        "id": first["id"],
        "type": "custom_tool_call",
        "status": "completed",
        "call_id": "c1",
        "name": "exec",
        "namespace": "functions",
        "input": "js",
    }
    assert first["id"].startswith("ctc_") and second["id"].startswith("fc_")
    assert (second["type"], second["name"], second["namespace"]) == ("function_call", "wait", "functions")
    output = rt.Response.model_validate(body).output
    assert isinstance(output[0], rt.ResponseCustomToolCall) and output[0].namespace == "functions"
    assert isinstance(output[1], rt.ResponseFunctionToolCall) and output[1].namespace == "functions"


def test_length_stop_is_incomplete_and_withheld_calls_are_not_output_items() -> None:
    withheld = [WithheldToolCall(id="c9", name="f", raw_arguments='{"a": ', reason="cut")]
    body = render_response(
        _response(TextPart(text="par"), stop="length", withheld_tool_calls=withheld), _request()
    )
    assert body["status"] == "incomplete"
    assert body["incomplete_details"] == {"reason": "max_output_tokens"}
    assert [i["type"] for i in body["output"]] == ["message"]
    assert body["turnstile"]["withheld_tool_calls"][0]["id"] == "c9"


def test_an_answer_ended_in_error_is_a_failed_response() -> None:
    body = render_response(_response(stop="error"), _request())
    assert body["status"] == "failed" and body["error"]["code"] == "server_error"


def test_the_request_settings_are_echoed() -> None:
    tools = [{"type": "function", "name": "f", "parameters": {"type": "object"}}]
    body = render_response(
        _response(TextPart(text="x")),
        _request(
            instructions="be brief",
            tools=tools,
            tool_choice="required",
            parallel_tool_calls=False,
            text={"format": {"type": "json_object"}, "verbosity": "low"},
            reasoning={"effort": "low", "summary": "auto"},
            max_output_tokens=50,
            temperature=0.2,
            metadata={"k": "v"},
            prompt_cache_key="pk",
            truncation="auto",
            store=True,
        ),
    )
    assert body["instructions"] == "be brief"
    assert body["tools"] == tools and body["tool_choice"] == "required"
    assert body["parallel_tool_calls"] is False
    assert body["text"] == {"format": {"type": "json_object"}, "verbosity": "low"}
    assert body["reasoning"] == {"effort": "low", "summary": "auto"}
    assert (body["max_output_tokens"], body["temperature"], body["top_p"]) == (50, 0.2, 1.0)
    assert body["metadata"] == {"k": "v"} and body["prompt_cache_key"] == "pk"
    assert body["truncation"] == "auto"
    assert body["store"] is False, "nothing is stored: the answer must not claim it"
    rt.Response.model_validate(body)


def test_errors_in_the_openai_shape() -> None:
    status, body = render_error(InvalidRequest("input[1].call_id: orphan", param="input[1].call_id"))
    assert status == 400
    assert body == {
        "error": {
            "message": "input[1].call_id: orphan",
            "type": "invalid_request_error",
            "param": "input[1].call_id",
            "code": None,
        }
    }
    assert render_error(ModelNotFound("no model"))[1]["error"]["code"] == "model_not_found"


def test_input_tokens_body() -> None:
    assert render_input_tokens(12) == {"object": "response.input_tokens", "input_tokens": 12}
