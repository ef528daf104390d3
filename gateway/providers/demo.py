"""The built-in ``demo`` deployment: a deterministic local stand-in for a model.

It lets the embedded default configuration serve with no API key and no network. It is
labelled as a stand-in in ``GET /v1/models`` and in every answer's text. Behaviour:

* last message a user turn, tools offered, and the user text names a tool (or ``tool_choice``
  requires one): it calls that tool, arguments built from the tool's JSON Schema (strings get
  the user's text, numbers 1, booleans true, arrays one item, objects recursively);
* last message a tool result: it summarises the results it received;
* otherwise it answers with a fixed sentence quoting the user's last message;
* a JSON ``response_format`` makes any text answer (the two cases above) JSON instead: for
  ``json_schema`` a minimal instance that validates against the schema
  (:func:`gateway.providers.demo_instance.minimal_instance`), for ``json_object``
  ``{"answer": <the sentence>}``.

``max_output_tokens`` is honoured with the same ~4-characters-per-token estimate used for its
usage: an answer longer than the budget is cut and reported with stop reason ``length`` (a cut
tool call keeps its cut arguments, which exercises the truncation guard). Usage is marked
``estimated``.
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from typing import Any

import orjson

from gateway.config import Deployment
from gateway.providers.base import Provider
from gateway.providers.demo_instance import minimal_instance
from gateway.schema import (
    AssistantMessage,
    MessageEnd,
    MessageStart,
    PartDelta,
    PartEnd,
    PartStart,
    Request,
    Response,
    StopReason,
    StreamEvent,
    TextPart,
    ToolCallPart,
    ToolDefinition,
    ToolResultMessage,
    Usage,
    UserMessage,
)

CHARS_PER_TOKEN = 4


def _tokens(text: str) -> int:
    return max(1, (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN)


def _example(schema: Any, text: str, depth: int = 0) -> Any:
    """A value shaped like ``schema``; anything that is not a readable JSON Schema gives a
    string (tool schemas come from clients and may be malformed)."""
    if not isinstance(schema, dict):
        return text[:200]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return enum[0]
    if kind == "object" and depth < 4:
        props = schema.get("properties")
        props = props if isinstance(props, dict) else {}
        required = schema.get("required")
        names = [k for k in required if isinstance(k, str)] if isinstance(required, list) else list(props)
        return {k: _example(props[k], text, depth + 1) for k in names if k in props}
    if kind == "array" and depth < 4:
        return [_example(schema.get("items") or {"type": "string"}, text, depth + 1)]
    if kind in ("number", "integer"):
        return 1
    if kind == "boolean":
        return True
    return text[:200]


def _structured(request: Request, reply: str) -> str:
    """``reply`` as the JSON the request's response format asks for (module docstring)."""
    fmt = request.response_format
    if fmt is None or fmt.type == "text":
        return reply
    if fmt.type == "json_object" or fmt.schema_ is None:
        return orjson.dumps({"answer": reply}).decode()
    return orjson.dumps(minimal_instance(fmt.schema_)).decode()


def _last_user_text(request: Request) -> str:
    for msg in reversed(request.messages):
        if isinstance(msg, UserMessage):
            return " ".join(p.text for p in msg.content if isinstance(p, TextPart)).strip()
    return ""


def _choose_tool(request: Request, text: str) -> ToolDefinition | None:
    choice = request.tool_choice
    if not request.tools or (choice is not None and choice.mode == "none"):
        return None
    if choice is not None and choice.mode == "tool":
        return next((t for t in request.tools if t.name == choice.name), None)
    lowered = text.lower()
    for tool in request.tools:
        if tool.name.lower() in lowered:
            return tool
    if choice is not None and choice.mode == "required":
        return request.tools[0]
    return None


def answer(request: Request, deployment: Deployment) -> Response:
    """The demo model's deterministic answer to ``request`` (see module docstring)."""
    budget = request.max_output_tokens or deployment.max_output_tokens or 4096
    last = request.messages[-1] if request.messages else None
    text = _last_user_text(request)
    seed = hashlib.sha256(orjson.dumps(request.model_dump(mode="json"))).hexdigest()
    parts: list[TextPart | ToolCallPart] = []
    stop: StopReason = "stop"
    tool = _choose_tool(request, text) if isinstance(last, UserMessage) else None
    if tool is not None:
        example = _example(tool.parameters, text)
        raw = orjson.dumps(example if isinstance(example, dict) else {"input": example}).decode()
        stop = "tool_use"
        if _tokens(raw) > budget:
            raw = raw[: budget * CHARS_PER_TOKEN]
            stop = "length"
        try:
            args = orjson.loads(raw)
        except orjson.JSONDecodeError:
            args = {}
        parts.append(
            ToolCallPart(id=f"call_demo_{seed[:20]}", name=tool.name, arguments=args, raw_arguments=raw)
        )
    else:
        if isinstance(last, ToolResultMessage):
            results = [m for m in request.messages if isinstance(m, ToolResultMessage)]
            body = "; ".join(
                " ".join(p.text for p in r.content if isinstance(p, TextPart))[:200] for r in results[-5:]
            )
            reply = f"[turnstile demo deployment] I received {len(results)} tool result(s): {body}"
        else:
            reply = (
                f"[turnstile demo deployment] This is a local stand-in, not a model. You said: {text[:500]}"
            )
        reply = _structured(request, reply)
        if _tokens(reply) > budget:
            reply = reply[: budget * CHARS_PER_TOKEN]
            stop = "length"
        parts.append(TextPart(text=reply))
    prompt_chars = len(orjson.dumps([m.model_dump(mode="json") for m in request.messages]))
    out_chars = sum(len(p.text) if isinstance(p, TextPart) else len(p.raw_arguments) for p in parts)
    usage = Usage(
        input_tokens=max(1, prompt_chars // CHARS_PER_TOKEN),
        output_tokens=max(1, out_chars // CHARS_PER_TOKEN),
        estimated=True,
    )
    return Response(
        id=f"demo_{seed[:24]}",
        model=deployment.model,
        message=AssistantMessage(content=list(parts)),
        stop_reason=stop,
        usage=usage,
    )


def response_events(resp: Response, chunk_chars: int = 16) -> list[StreamEvent]:
    """A complete internal event stream that carries ``resp`` (text in ``chunk_chars`` pieces,
    tool-call arguments in pieces of the raw string)."""
    events: list[StreamEvent] = [
        MessageStart(id=resp.id, model=resp.model, usage=Usage(input_tokens=resp.usage.input_tokens))
    ]
    for i, part in enumerate(resp.message.content):
        if isinstance(part, TextPart):
            events.append(PartStart(index=i, kind="text"))
            for k in range(0, len(part.text), chunk_chars):
                events.append(PartDelta(index=i, text=part.text[k : k + chunk_chars]))
        elif isinstance(part, ToolCallPart):
            events.append(PartStart(index=i, kind="tool_call", id=part.id, name=part.name))
            for k in range(0, len(part.raw_arguments), chunk_chars):
                events.append(PartDelta(index=i, arguments=part.raw_arguments[k : k + chunk_chars]))
        else:
            continue
        events.append(PartEnd(index=i))
    events.append(MessageEnd(stop_reason=resp.stop_reason, usage=resp.usage))
    return events


class DemoProvider(Provider):
    """Provider for ``api: demo`` deployments."""

    api = "demo"

    async def complete(self, request: Request, deployment: Deployment, api_key: str | None) -> Response:
        """The demo answer (never raises for a well-formed request)."""
        return answer(request, deployment)

    async def stream(
        self, request: Request, deployment: Deployment, api_key: str | None
    ) -> AsyncIterator[StreamEvent]:
        """The demo answer as internal stream events."""
        for ev in response_events(answer(request, deployment)):
            yield ev
