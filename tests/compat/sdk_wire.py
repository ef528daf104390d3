"""What an official SDK's turn left at the upstream, read in each wire API's own terms, and
answers the SDK scenarios script (for the official ``openai``, ``anthropic``, ``google-genai``
and ``openai-agents`` clients).

* :func:`calls_sent` / :func:`results_sent`: the tool calls an upstream request's history holds
  (``(call id, name)``) and the tool results paired to them (``(call id, result text)``), from
  OpenAI Chat ``tool_calls`` / ``role: tool``, Responses ``function_call`` /
  ``function_call_output``, Anthropic ``tool_use`` / ``tool_result``, Gemini ``functionCall`` /
  ``functionResponse`` (id, or name where the call has none).
* :func:`schema_sent`: where the request put a JSON Schema for structured output, as
  ``(slot, schema)``.
* :func:`answer_structured`: an answer holding a minimal instance of the requested schema, for
  every wire API including Responses (``text.format``).
* :func:`call_id`: a call id in the shape the upstream issues them.
"""

from __future__ import annotations

import json
from typing import Any

from standins.recordings import Exchange
from standins.structured_output import instance, structured
from standins.tool_answers import text_answer
from standins.upstream import Received, UpstreamStandin, answering

from .conftest import UPSTREAM_MODEL

_ID_PREFIX = {
    "openai_chat": "call_",
    "openai_responses": "call_",
    "anthropic_messages": "toolu_",
    "gemini": "gem_",
}


def call_id(api: str, n: int) -> str:
    """The ``n``-th tool call id, shaped as ``api`` issues them (``call_…``, ``toolu_…``)."""
    return f"{_ID_PREFIX[api]}compat{n:02d}"


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(_text(v) for v in value)
    if isinstance(value, dict):
        if isinstance(value.get("text"), str):
            return str(value["text"])
        return json.dumps(value, sort_keys=True)
    return "" if value is None else json.dumps(value)


def system_text(rec: Received) -> str:
    """The system prompt the request carries in its API's own slot (Anthropic ``system``, Gemini
    ``systemInstruction``, Responses ``instructions`` and system/developer items, Chat
    system/developer messages), joined."""
    body = rec.body or {}
    if rec.api == "anthropic_messages":
        system = body.get("system")
        return system if isinstance(system, str) else "".join(b["text"] for b in system or [])
    if rec.api == "gemini":
        return "".join(p.get("text", "") for p in (body.get("systemInstruction") or {}).get("parts") or [])
    if rec.api == "openai_responses":
        instructions = body.get("instructions") or ""
        items = body.get("input") if isinstance(body.get("input"), list) else []
        return instructions + "".join(
            m["content"]
            if isinstance(m.get("content"), str)
            else "".join(p.get("text", "") for p in m["content"])
            for m in items
            if m.get("role") in ("system", "developer")
        )
    return "".join(
        m["content"] if isinstance(m["content"], str) else "".join(p.get("text", "") for p in m["content"])
        for m in body.get("messages") or []
        if m.get("role") in ("system", "developer")
    )


def calls_sent(rec: Received) -> list[tuple[str, str]]:
    """The ``(call id, tool name)`` of every tool call in the request's history, in order."""
    body: dict[str, Any] = rec.body or {}
    out: list[tuple[str, str]] = []
    if rec.api == "openai_chat":
        for m in body.get("messages") or []:
            for c in m.get("tool_calls") or []:
                out.append((c["id"], c["function"]["name"]))
    elif rec.api == "openai_responses":
        items = body.get("input")
        for item in items if isinstance(items, list) else []:
            if item.get("type") == "function_call":
                out.append((item["call_id"], item["name"]))
    elif rec.api == "anthropic_messages":
        for m in body.get("messages") or []:
            content = m.get("content")
            for b in content if isinstance(content, list) else []:
                if b.get("type") == "tool_use":
                    out.append((b["id"], b["name"]))
    else:
        for content in body.get("contents") or []:
            for p in content.get("parts") or []:
                if "functionCall" in p:
                    fc = p["functionCall"]
                    out.append((fc.get("id") or fc["name"], fc["name"]))
    return out


def results_sent(rec: Received) -> list[tuple[str, str]]:
    """The ``(call id, result text)`` of every tool result in the request, in order (Gemini: the
    ``functionResponse`` id, else its name; its ``response`` object as JSON text)."""
    body: dict[str, Any] = rec.body or {}
    out: list[tuple[str, str]] = []
    if rec.api == "openai_chat":
        for m in body.get("messages") or []:
            if m.get("role") == "tool":
                out.append((m["tool_call_id"], _text(m.get("content"))))
    elif rec.api == "openai_responses":
        items = body.get("input")
        for item in items if isinstance(items, list) else []:
            if item.get("type") == "function_call_output":
                out.append((item["call_id"], _text(item.get("output"))))
    elif rec.api == "anthropic_messages":
        for m in body.get("messages") or []:
            content = m.get("content")
            for b in content if isinstance(content, list) else []:
                if b.get("type") == "tool_result":
                    out.append((b["tool_use_id"], _text(b.get("content"))))
    else:
        for content in body.get("contents") or []:
            for p in content.get("parts") or []:
                if "functionResponse" in p:
                    fr = p["functionResponse"]
                    out.append((fr.get("id") or fr["name"], json.dumps(fr.get("response"), sort_keys=True)))
    return out


def schema_sent(rec: Received) -> tuple[str, Any]:
    """``(slot, schema)``: where the request carries a structured-output JSON Schema
    (``response_format``, ``text.format``, ``output_config.format``, ``json_output`` forced tool,
    ``responseJsonSchema`` / ``responseSchema``); ``("", None)`` when it carries none."""
    body: dict[str, Any] = rec.body or {}
    if rec.api == "openai_chat":
        fmt = body.get("response_format") or {}
        if fmt.get("type") == "json_schema":
            return "response_format", fmt["json_schema"]["schema"]
    elif rec.api == "openai_responses":
        fmt = (body.get("text") or {}).get("format") or {}
        if fmt.get("type") == "json_schema":
            return "text.format", fmt["schema"]
    elif rec.api == "anthropic_messages":
        fmt = (body.get("output_config") or {}).get("format")
        if fmt:
            return "output_config.format", fmt["schema"]
        choice = body.get("tool_choice") or {}
        for t in body.get("tools") or []:
            if choice.get("type") == "tool" and t.get("name") == choice.get("name"):
                return "forced tool", t["input_schema"]
    else:
        gen = body.get("generationConfig") or {}
        for slot in ("responseJsonSchema", "responseSchema"):
            if slot in gen:
                return slot, gen[slot]
    return "", None


def _structured(api: str, body: Any, stream: bool) -> Exchange:
    if api != "openai_responses":
        return structured(api, body, stream)
    fmt = (body.get("text") or {}).get("format") or {}
    schema = fmt.get("schema")
    text = json.dumps(instance(schema)) if schema is not None else json.dumps({"answer": "x"})
    return text_answer(api, text, stream=stream)


def answer_structured(upstream: UpstreamStandin, api: str, model: str | None = None) -> None:
    """Queue one answer of ``api`` holding a minimal instance of the schema the request asks for,
    in the request's own slot (for Responses too, whose ``text.format`` the stand-in's
    :func:`standins.upstream.structured_answer` does not read); ``model`` is the upstream model id
    it answers (default :data:`UPSTREAM_MODEL` of ``api``)."""
    upstream.script(answering(_structured, api=api, model=model or UPSTREAM_MODEL[api]))
