"""Read a Gemini ``generateContent`` request body back into the internal schema.

Used by ``turnstile replay`` to check what :func:`gateway.providers.gemini_request.build_body`
sent means (the OpenAI and Anthropic bodies are read back by the client edges, which parse
the same formats). The inverse of the decisions documented in
:mod:`gateway.providers.gemini_request`: ``systemInstruction`` -> one system message;
``functionResponse`` -> a tool result (``response.error`` -> ``is_error``; a Gemini client's
own ``response`` object -> its JSON text, as the Gemini edge reads it); a
``thoughtSignature`` on a text part -> an empty signed thinking part after the text;
``inlineData``/``fileData`` -> images (in a turn with function responses they belong to the
results before them and are attached to the last result, as the builder moved them).
"""

from __future__ import annotations

from typing import Any

import orjson

from gateway.config import Deployment
from gateway.providers.gemini_common import provenance
from gateway.providers.naming import NameMap
from gateway.schema import (
    AssistantMessage,
    ImagePart,
    Message,
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
    UserPart,
)


def _image(p: dict[str, Any]) -> ImagePart:
    if "inlineData" in p:
        d = p["inlineData"]
        return ImagePart(data=d.get("data"), media_type=d.get("mimeType"))
    f = p["fileData"]
    return ImagePart(url=f.get("fileUri"), media_type=f.get("mimeType"))


def _response_text(resp: dict[str, Any]) -> tuple[str, bool]:
    """``functionResponse.response`` -> ``(text, is_error)``: ``{"output": s}`` / ``{"error": s}``
    -> ``s`` (a non-string value its JSON), any other object its JSON (the Gemini edge's
    reading, ``gateway.edges.gemini_parse._response_content``)."""
    if len(resp) == 1:
        key, value = next(iter(resp.items()))
        if key in ("output", "error"):
            return (value if type(value) is str else orjson.dumps(value).decode()), key == "error"
    return orjson.dumps(resp).decode(), False


def _user(parts: list[dict[str, Any]], names: NameMap) -> list[Message]:
    out: list[Message] = []
    content: list[UserPart] = []
    results: list[ToolResultMessage] = []
    for p in parts:
        if "functionResponse" in p:
            fr = p["functionResponse"]
            text, is_error = _response_text(fr.get("response") or {})
            results.append(
                ToolResultMessage(
                    tool_call_id=str(fr.get("id") or ""),
                    name=names.from_upstream_name(str(fr.get("name"))),
                    content=[TextPart(text=str(text))] if text else [],
                    is_error=is_error,
                )
            )
        elif "text" in p:
            content.append(TextPart(text=p["text"]))
        elif "inlineData" in p or "fileData" in p:
            if results and not content:
                results[-1].content.append(_image(p))
            else:
                content.append(_image(p))
    out.extend(results)
    if content:
        out.append(UserMessage(content=content))
    return out


def _model(parts: list[dict[str, Any]], names: NameMap, dep: Deployment) -> AssistantMessage:
    prov = provenance(dep)
    content: list[Any] = []
    for p in parts:
        if "functionCall" in p:
            fc = p["functionCall"]
            args = fc.get("args") or {}
            content.append(
                ToolCallPart(
                    id=str(fc.get("id") or ""),
                    name=names.from_upstream_name(str(fc.get("name"))),
                    arguments=args,
                    raw_arguments=orjson.dumps(args).decode(),
                    signature=p.get("thoughtSignature"),
                    provenance=prov if p.get("thoughtSignature") else None,
                )
            )
        elif p.get("thought"):
            content.append(
                ThinkingPart(
                    text=str(p.get("text") or ""), signature=p.get("thoughtSignature"), provenance=prov
                )
            )
        elif "text" in p:
            content.append(TextPart(text=p["text"]))
            if p.get("thoughtSignature"):
                content.append(ThinkingPart(text="", signature=p["thoughtSignature"], provenance=prov))
    return AssistantMessage(content=content)


def read_request(body: bytes, names: NameMap, dep: Deployment) -> Request:
    """A ``generateContent`` body (JSON bytes) -> :class:`Request`; tool names mapped back
    through ``names``. Raises ``orjson.JSONDecodeError`` / ``KeyError`` on a body that is not
    one (a bug in the builder)."""
    obj = orjson.loads(body)
    messages: list[Message] = []
    system = obj.get("systemInstruction")
    if system:
        messages.append(SystemMessage(content=[TextPart(text=p["text"]) for p in system.get("parts") or []]))
    for turn in obj.get("contents") or []:
        if turn.get("role") == "model":
            messages.append(_model(turn.get("parts") or [], names, dep))
        else:
            messages.extend(_user(turn.get("parts") or [], names))
    tools = [
        ToolDefinition(
            name=names.from_upstream_name(d["name"]),
            description=d.get("description"),
            parameters=d.get("parameters") or {"type": "object", "properties": {}},
        )
        for t in obj.get("tools") or []
        for d in t.get("functionDeclarations") or []
    ]
    choice = None
    fcc = (obj.get("toolConfig") or {}).get("functionCallingConfig")
    if fcc:
        # VALIDATED: a Gemini client's own mode, sent as is (auto with strict tools)
        mode = {"AUTO": "auto", "NONE": "none", "ANY": "required", "VALIDATED": "auto"}[
            fcc.get("mode", "AUTO")
        ]
        if fcc.get("mode") == "VALIDATED":
            tools = [t.model_copy(update={"strict": True}) for t in tools]
        allowed = fcc.get("allowedFunctionNames") or []
        choice = ToolChoice(
            mode="tool" if allowed else mode,  # type: ignore[arg-type]
            name=names.from_upstream_name(allowed[0]) if allowed else None,
        )
    gen = obj.get("generationConfig") or {}
    fmt = None
    if gen.get("responseMimeType") == "application/json":
        schema = gen.get("responseJsonSchema") or gen.get("responseSchema")
        fmt = ResponseFormat(
            type="json_schema" if schema else "json_object",
            schema=schema,
        )
    thinking = None
    tc = gen.get("thinkingConfig")
    if tc is not None:  # as the Gemini edge reads it (a client's own thinkingConfig is sent as is)
        budget, level = tc.get("thinkingBudget"), tc.get("thinkingLevel")
        if budget == 0:
            thinking = ThinkingConfig(enabled=False)
        elif level:
            thinking = ThinkingConfig(effort=str(level).lower())  # type: ignore[arg-type]
        elif budget is not None and budget > 0:
            thinking = ThinkingConfig(budget_tokens=budget)
        elif budget == -1 or tc.get("includeThoughts"):
            thinking = ThinkingConfig()
    return Request(
        model=dep.model,
        messages=messages,
        tools=tools,
        tool_choice=choice,
        max_output_tokens=gen.get("maxOutputTokens"),
        temperature=gen.get("temperature"),
        top_p=gen.get("topP"),
        top_k=gen.get("topK"),
        stop=gen.get("stopSequences") or [],
        response_format=fmt,
        thinking=thinking,
    )
