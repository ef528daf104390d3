"""Internal answers -> Gemini bodies: parts, finish reasons, usage, errors, the model list."""

from __future__ import annotations

import base64

from gateway.edges import gemini
from gateway.edges.signatures import unwrap_b64_signature
from gateway.errors import GuardProblem, GuardViolation, InvalidRequest, ModelNotFound
from gateway.schema import (
    AssistantMessage,
    Provenance,
    Request,
    Response,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    Usage,
    UserMessage,
    WithheldToolCall,
)

REQ = Request(model="g", messages=[UserMessage(content=[TextPart(text="hi")])])
PROV = Provenance(api="gemini", provider="google", model="gemini-3-pro-preview")


def _resp(*parts: object, stop: str = "stop", **kw: object) -> Response:
    return Response(
        id="r1", model="m1", message=AssistantMessage(content=list(parts)), stop_reason=stop, **kw
    )  # type: ignore[arg-type]


def test_a_text_answer_in_gemini_shape() -> None:
    body = gemini.render_response(
        _resp(
            TextPart(text="Olá"),
            usage=Usage(input_tokens=7, cache_read_tokens=3, output_tokens=10, reasoning_tokens=4),
        ),
        REQ,
    )
    assert body["candidates"] == [
        {"content": {"role": "model", "parts": [{"text": "Olá"}]}, "finishReason": "STOP", "index": 0}
    ]
    assert body["usageMetadata"] == {
        "promptTokenCount": 10,
        "candidatesTokenCount": 6,
        "totalTokenCount": 20,
        "cachedContentTokenCount": 3,
        "thoughtsTokenCount": 4,
    }
    assert (body["modelVersion"], body["responseId"]) == ("m1", "r1")


def test_calls_carry_their_id_and_signature_and_text_signatures_go_on_the_text() -> None:
    body = gemini.render_response(
        _resp(
            ThinkingPart(text="hmm", signature="T1", provenance=PROV),
            TextPart(text="so"),
            ThinkingPart(text="", signature="T2", provenance=PROV),
            ToolCallPart(
                id="c1",
                name="f",
                arguments={"a": 1},
                raw_arguments='{"a": 1}',
                signature="S",
                provenance=PROV,
            ),
            stop="tool_use",
        ),
        REQ,
    )
    parts = body["candidates"][0]["content"]["parts"]
    assert parts[0]["thought"] is True and parts[0]["text"] == "hmm"
    assert unwrap_b64_signature(parts[0]["thoughtSignature"]) == ("T1", PROV, False)
    assert parts[1]["text"] == "so" and unwrap_b64_signature(parts[1]["thoughtSignature"])[0] == "T2"
    assert parts[2]["functionCall"] == {"id": "c1", "name": "f", "args": {"a": 1}}
    assert unwrap_b64_signature(parts[2]["thoughtSignature"]) == ("S", PROV, False)
    base64.b64decode(parts[2]["thoughtSignature"], validate=True)  # the SDKs keep it as bytes
    assert body["candidates"][0]["finishReason"] == "STOP"


def test_finish_reasons() -> None:
    assert gemini.FINISH_REASONS == {
        "stop": "STOP",
        "length": "MAX_TOKENS",
        "tool_use": "STOP",
        "content_filter": "SAFETY",
        "error": "OTHER",
        "aborted": "OTHER",
        "pause": "STOP",
    }


def test_withheld_calls_are_stated_under_turnstile_and_never_rendered() -> None:
    withheld = WithheldToolCall(id="c9", name="f", raw_arguments='{"a": ', reason="not complete JSON")
    body = gemini.render_response(
        _resp(TextPart(text="x"), stop="length", withheld_tool_calls=[withheld]), REQ
    )
    assert body["candidates"][0]["finishReason"] == "MAX_TOKENS"
    assert body["candidates"][0]["content"]["parts"] == [{"text": "x"}]
    assert body["turnstile"]["withheld_tool_calls"][0]["id"] == "c9"


def test_errors_in_gemini_shape() -> None:
    status, body = gemini.render_error(InvalidRequest("bad thing", param="contents[0]"))
    assert status == 400
    assert body == {"error": {"code": 400, "message": "contents[0]: bad thing", "status": "INVALID_ARGUMENT"}}
    status, body = gemini.render_error(ModelNotFound("no such model"))
    assert (status, body["error"]["status"]) == (404, "NOT_FOUND")
    violation = GuardViolation([GuardProblem("orphan_tool_result", "c1", "contents[2].parts[0]", "orphan")])
    status, body = gemini.render_error(violation)
    assert status == 400 and body["error"]["details"][0]["problems"][0]["id"] == "c1"


def test_models_and_count_tokens() -> None:
    listed = gemini.render_models([{"id": "ge", "description": "d", "context_window": 1000}])
    assert listed["models"][0]["name"] == "models/ge"
    assert listed["models"][0]["inputTokenLimit"] == 1000
    assert "generateContent" in listed["models"][0]["supportedGenerationMethods"]
    assert gemini.render_count_tokens(12) == {"totalTokens": 12}


def _parsed(thinking_config: dict[str, object]) -> Request:
    import orjson

    body = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
    body["generationConfig"] = {"thinkingConfig": thinking_config}
    return gemini.parse_request(orjson.dumps(body), model="g")


def test_without_include_thoughts_the_answer_keeps_thought_signatures_but_no_thought_text() -> None:
    resp = _resp(
        ThinkingPart(text="secret reasoning", signature="T1", provenance=PROV),
        ThinkingPart(text="unsigned musing", provenance=PROV),
        TextPart(text="answer"),
    )
    hidden = gemini.render_response(resp, _parsed({"thinkingBudget": 512}))
    parts = hidden["candidates"][0]["content"]["parts"]
    assert "secret reasoning" not in str(hidden) and "unsigned musing" not in str(hidden)
    assert parts[0]["text"] == "" and unwrap_b64_signature(parts[0]["thoughtSignature"])[0] == "T1"
    assert parts[1:] == [{"text": "answer"}]
    shown = gemini.render_response(resp, _parsed({"thinkingBudget": 512, "include_thoughts": True}))
    assert shown["candidates"][0]["content"]["parts"][0]["text"] == "secret reasoning"
