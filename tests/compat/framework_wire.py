"""What the framework clients' scenarios (pydantic-ai, LangChain, langgraph, litellm, instructor,
``llm``) script and read back, in every upstream wire API's own terms.

Scripting: :func:`answer_structured` answers with a minimal instance of the schema the request
asks for, in the request's own slot (native format, or the forced tool), on all four APIs
(the shared :func:`standins.upstream.structured_answer` has no Responses or forced OpenAI /
Gemini tool); :func:`call_schema_tool` calls one named tool with an instance of its declared
parameters (an output tool the client offers without forcing it).

Reading: :func:`schema_slot` names where a request carried a JSON Schema for the answer;
:func:`tool_calls` / :func:`tool_results` list a request's assistant tool calls and the tool
results that answer them, as ``(id, name, ...)`` tuples, so a test can check the pairing.
"""

from __future__ import annotations

import json
from typing import Any

from standins.recordings import Exchange
from standins.structured_output import instance
from standins.tool_answers import Call, text_answer, tool_call_answer
from standins.upstream import Received, UpstreamStandin, answering

from .conftest import UPSTREAM_MODEL

# ------------------------------------------------------------------------------ reading


def declared_tools(api: str, body: dict[str, Any]) -> dict[str, Any]:
    """The function tools ``body`` declares: name -> JSON Schema of its arguments."""
    if api == "gemini":
        return {
            d["name"]: d.get("parametersJsonSchema") or d.get("parameters") or {}
            for t in body.get("tools") or []
            for d in t.get("functionDeclarations") or []
        }
    out: dict[str, Any] = {}
    for t in body.get("tools") or []:
        if isinstance(t.get("function"), dict):
            out[t["function"]["name"]] = t["function"].get("parameters") or {}
        elif "name" in t:
            out[t["name"]] = t.get("input_schema") or t.get("parameters") or {}
    return out


def forced_tool(api: str, body: dict[str, Any]) -> str | None:
    """The tool the request forces (a named choice, or "any"/"required" with one tool), else None."""
    tools = list(declared_tools(api, body))
    if api == "gemini":
        cfg = (body.get("toolConfig") or {}).get("functionCallingConfig") or {}
        if cfg.get("mode") != "ANY":
            return None
        allowed = cfg.get("allowedFunctionNames") or tools
        return str(allowed[0]) if allowed else None
    choice = body.get("tool_choice")
    if isinstance(choice, dict):
        if api == "anthropic_messages":
            if choice.get("type") == "tool":
                return str(choice["name"])
            return tools[0] if choice.get("type") == "any" and tools else None
        name = (choice.get("function") or {}).get("name") or choice.get("name")
        return str(name) if name else None
    if choice == "required" and tools:
        return tools[0]
    return None


def native_schema(api: str, body: dict[str, Any]) -> tuple[str, Any] | None:
    """``(slot, schema)`` of the API's native structured-output slot, when the request uses it."""
    if api == "openai_chat":
        fmt = body.get("response_format") or {}
        if fmt.get("type") == "json_schema":
            return "response_format", fmt["json_schema"].get("schema")
    elif api == "openai_responses":
        fmt = (body.get("text") or {}).get("format") or {}
        if fmt.get("type") == "json_schema":
            return "text.format", fmt.get("schema")
    elif api == "anthropic_messages":
        fmt = (body.get("output_config") or {}).get("format") or body.get("output_format")
        if fmt:
            return "output_config.format", fmt.get("schema")
    else:
        gen = body.get("generationConfig") or {}
        for key in ("responseJsonSchema", "responseSchema"):
            if key in gen:
                return key, gen[key]
    return None


def schema_slot(rec: Received) -> tuple[str, Any]:
    """Where ``rec`` asks for a structured answer: ``(slot, schema)`` with slot the native one
    (``response_format``, ``text.format``, ``output_config.format``, ``responseJsonSchema``) or
    ``tool:<name>`` for a forced tool. Raises ``AssertionError`` when it asks for neither."""
    body = rec.body or {}
    native = native_schema(rec.api, body)
    if native is not None:
        return native
    name = forced_tool(rec.api, body)
    assert name is not None, f"no schema slot and no forced tool in the request: {json.dumps(body)[:3000]}"
    return f"tool:{name}", declared_tools(rec.api, body)[name]


def json_mode(rec: Received) -> bool:
    """Whether ``rec`` asks for a JSON object answer (no schema): OpenAI ``json_object``,
    Gemini ``responseMimeType: application/json`` without a schema."""
    body = rec.body or {}
    if rec.api == "openai_chat":
        return (body.get("response_format") or {}).get("type") == "json_object"
    if rec.api == "openai_responses":
        return ((body.get("text") or {}).get("format") or {}).get("type") == "json_object"
    if rec.api == "gemini":
        return (body.get("generationConfig") or {}).get("responseMimeType") == "application/json"
    return False


def schema_props(schema: Any) -> set[str]:
    """The property names at a schema's root (following a root ``$ref``)."""
    if isinstance(schema, dict) and isinstance(schema.get("$ref"), str):
        node: Any = schema
        for key in schema["$ref"].lstrip("#/").split("/"):
            node = node.get(key, {})
        schema = node
    props = schema.get("properties") if isinstance(schema, dict) else None
    return set(props or {})


def tool_calls(rec: Received) -> list[tuple[str, str, dict[str, Any]]]:
    """The assistant tool calls the request's history carries: ``(id, name, arguments)``
    (Gemini: id ``""`` when the part has none)."""
    body = rec.body or {}
    out: list[tuple[str, str, dict[str, Any]]] = []
    if rec.api == "gemini":
        for content in body.get("contents") or []:
            for p in content.get("parts") or []:
                if "functionCall" in p:
                    fc = p["functionCall"]
                    out.append((fc.get("id", ""), fc["name"], fc.get("args") or {}))
        return out
    if rec.api == "openai_responses":
        items = body.get("input")
        for it in items if isinstance(items, list) else []:
            if it.get("type") == "function_call":
                out.append((it["call_id"], it["name"], json.loads(it.get("arguments") or "{}")))
        return out
    for m in body.get("messages") or []:
        if m.get("role") != "assistant":
            continue
        for tc in m.get("tool_calls") or []:
            fn = tc["function"]
            out.append((tc["id"], fn["name"], json.loads(fn.get("arguments") or "{}")))
        content = m.get("content")
        for block in content if isinstance(content, list) else []:
            if block.get("type") == "tool_use":
                out.append((block["id"], block["name"], block.get("input") or {}))
    return out


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(_text_of(c.get("text", c) if isinstance(c, dict) else c) for c in content)
    if isinstance(content, dict):
        return json.dumps(content, sort_keys=True)
    return str(content)


def tool_results(rec: Received) -> list[tuple[str, str]]:
    """The tool results the request carries: ``(id the result answers, result text)`` (Gemini:
    ``(id or name, response as JSON text)``)."""
    body = rec.body or {}
    out: list[tuple[str, str]] = []
    if rec.api == "gemini":
        for content in body.get("contents") or []:
            for p in content.get("parts") or []:
                if "functionResponse" in p:
                    fr = p["functionResponse"]
                    out.append((fr.get("id") or fr["name"], _text_of(fr.get("response"))))
        return out
    if rec.api == "openai_responses":
        items = body.get("input")
        for it in items if isinstance(items, list) else []:
            if it.get("type") == "function_call_output":
                out.append((it["call_id"], _text_of(it.get("output"))))
        return out
    for m in body.get("messages") or []:
        if m.get("role") == "tool":
            out.append((m["tool_call_id"], _text_of(m.get("content"))))
        content = m.get("content")
        if m.get("role") == "user" and isinstance(content, list):
            for block in content:
                if block.get("type") == "tool_result":
                    out.append((block["tool_use_id"], _text_of(block.get("content"))))
    return out


def assert_paired(rec: Received, name: str, result_text: str) -> None:
    """``rec`` carries a call of tool ``name`` and, answering it by id (Gemini: by id or name),
    a result containing ``result_text``."""
    calls = [c for c in tool_calls(rec) if c[1] == name]
    assert calls, f"no call of {name!r} in the history: {json.dumps(rec.body)[:3000]}"
    keys = {c[0] or c[1] for c in calls} | ({name} if rec.api == "gemini" else set())
    results = [text for key, text in tool_results(rec) if key in keys]
    assert any(result_text in t for t in results), (
        f"no result holding {result_text!r} paired to {keys}: {tool_results(rec)}"
    )


# ------------------------------------------------------------------------------ scripting


def _structured(api: str, body: Any, stream: bool) -> Exchange:
    native = native_schema(api, body)
    if native is not None:
        return text_answer(api, json.dumps(instance(native[1])), stream=stream)
    name = forced_tool(api, body)
    if name is not None:
        args = instance(declared_tools(api, body)[name])
        return tool_call_answer(api, [Call("call_structured_1", name, json.dumps(args))], stream=stream)
    if json_mode(Received(api, "", "", stream, body, {}, {}, b"")):
        return text_answer(api, json.dumps({"answer": "x"}), stream=stream)
    return text_answer(api, "no schema was asked for", stream=stream)


NATIVE_CLAUDE = "claude-sonnet-4-5"
"""A gateway deployment (and upstream model) of the Anthropic stand-in whose model has the native
structured-output slot (``output_config.format``), unlike ``UPSTREAM_MODEL["anthropic_messages"]``."""


def answer_structured(upstream: UpstreamStandin, api: str, *, model: str | None = None) -> None:
    """Queue one answer of ``api`` (for upstream ``model``, default the matrix model of ``api``):
    a minimal instance of the schema in the request's own slot (native format as JSON text, or
    a call of the forced tool)."""
    upstream.script(answering(_structured, api=api, model=model or UPSTREAM_MODEL[api]))


def call_schema_tool(upstream: UpstreamStandin, api: str, name: str, *, call_id: str = "call_out_1") -> None:
    """Queue one answer of ``api`` calling tool ``name`` with a minimal instance of the
    parameters the request declares for it."""

    def respond(a: str, body: Any, stream: bool) -> Exchange:
        args = instance(declared_tools(a, body)[name])
        return tool_call_answer(a, [Call(call_id, name, json.dumps(args))], stream=stream)

    upstream.script(answering(respond, api=api, model=UPSTREAM_MODEL[api]))


def answer_value(upstream: UpstreamStandin, api: str, value: Any) -> None:
    """Queue one answer of ``api`` holding ``value``: a call of the forced tool with ``value``
    as its arguments when the request forces one, else ``value`` as JSON text (for a JSON mode
    whose schema is only in the prompt)."""

    def respond(a: str, body: Any, stream: bool) -> Exchange:
        name = forced_tool(a, body)
        if name is not None:
            return tool_call_answer(a, [Call("call_value_1", name, json.dumps(value))], stream=stream)
        return text_answer(a, json.dumps(value), stream=stream)

    upstream.script(answering(respond, api=api, model=UPSTREAM_MODEL[api]))


def system_texts(rec: Received) -> list[str]:
    """The system / developer texts ``rec`` carries, whatever the wire API."""
    body = rec.body or {}
    out: list[str] = []
    if rec.api == "gemini":
        parts = (body.get("systemInstruction") or {}).get("parts") or []
        return [p["text"] for p in parts if "text" in p]
    if rec.api == "anthropic_messages" and body.get("system"):
        out.append(_text_of(body["system"]))
    if isinstance(body.get("instructions"), str):
        out.append(body["instructions"])
    items = body.get("input") if rec.api == "openai_responses" else body.get("messages")
    for m in items if isinstance(items, list) else []:
        if m.get("role") in ("system", "developer"):
            out.append(_text_of(m.get("content")))
    return out


def sampling(rec: Received) -> tuple[Any, Any]:
    """``(output token limit, temperature)`` as ``rec`` carries them, whatever the wire API."""
    body = rec.body or {}
    if rec.api == "gemini":
        gen = body.get("generationConfig") or {}
        return gen.get("maxOutputTokens"), gen.get("temperature")
    if rec.api == "openai_responses":
        return body.get("max_output_tokens"), body.get("temperature")
    limit = body.get("max_completion_tokens", body.get("max_tokens"))
    return limit, body.get("temperature")


def images(rec: Received) -> list[tuple[str, str]]:
    """The inline images the request's user turns carry: ``(media type, base64 data)``, whatever
    the wire API (OpenAI data URLs, Anthropic base64 sources, Gemini ``inlineData``)."""
    body = rec.body or {}
    out: list[tuple[str, str]] = []

    def data_url(url: str) -> None:
        head, _, data = url.partition(",")
        out.append((head.removeprefix("data:").removesuffix(";base64"), data))

    if rec.api == "gemini":
        for content in body.get("contents") or []:
            for p in content.get("parts") or []:
                if "inlineData" in p:
                    out.append((p["inlineData"]["mimeType"], p["inlineData"]["data"]))
        return out
    items = body.get("input") if rec.api == "openai_responses" else body.get("messages")
    for m in items if isinstance(items, list) else []:
        content = m.get("content")
        for p in content if isinstance(content, list) else []:
            if p.get("type") == "image_url":
                data_url(p["image_url"]["url"])
            elif p.get("type") == "input_image":
                data_url(p["image_url"])
            elif p.get("type") == "image" and (p.get("source") or {}).get("type") == "base64":
                out.append((p["source"]["media_type"], p["source"]["data"]))
    return out
