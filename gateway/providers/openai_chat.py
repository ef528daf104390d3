"""Native OpenAI Chat Completions wire module (OpenAI and every OpenAI-compatible server:
vLLM, llama.cpp, Ollama, Groq, DeepSeek, xAI, OpenRouter…).

Implements the :class:`gateway.providers.wire.WireModule` verbs at module level, plus the
dict-level functions the litellm adapter reuses: :func:`to_wire_body`,
:func:`from_wire_response` and the stream parser's ``feed_obj``. The stop-reason table, usage
and the message readers shared with the stream parser are in
:mod:`gateway.providers.openai_common`.

Reference: https://platform.openai.com/docs/api-reference/chat/create. Vendor differences
come from ``Deployment.quirks`` (:class:`gateway.config.Quirks`).

Decisions worth knowing
-----------------------
* Tool names are rewritten to ``^[a-zA-Z0-9_-]{1,64}$`` and tool-call ids longer than 40
  characters are rewritten to 40 (OpenAI rejects longer ids: "Invalid
  'messages[2].tool_calls[0].id': string too long. Expected a string with maximum length 40",
  reported in agno-agi/agno#5382, Portkey-AI/gateway#1062); both are mapped back on the way in.
* Thinking and redacted-thinking parts are not sendable to Chat Completions and are dropped
  (the pipeline has already applied the foreign-thinking policy).
* Consecutive assistant messages are merged and an assistant message left with neither text
  nor tool calls is dropped (simonw-llm kimi-k2 recording: an empty assistant message before
  the one with tool_calls). Empty text is never sent beside tool calls: ``content`` is null.
* Images in tool results: with ``quirks.images_in_tool_results`` the ``role: tool`` message
  carries ``[text, image_url]`` parts; otherwise it carries the text and ONE user message after
  the run of tool messages carries a label and the ``image_url`` parts (handed case C09). A
  deployment with ``supports_images: false`` raises :class:`CapabilityError`.
* ``is_error`` of a tool result has no slot in Chat Completions: its text starts with
  ``Error: `` instead (:func:`gateway.providers.wire_common.mark_error`).
* ``finish_reason: "stop"`` while tool calls are present is reported as ``tool_use``
  (OpenRouter mock function calling, corpus ``openhands/`` recordings), whatever
  ``quirks.finish_reason_stop_with_tools`` says.
* ``tool_choice`` and ``parallel_tool_calls`` are sent only with tools (OpenAI rejects them
  otherwise). ``top_k`` is not sent; ``thinking.effort`` becomes ``reasoning_effort``
  when the deployment supports thinking (an OpenAI client's own ``xhigh`` and ``none`` are sent
  as it sent them, unless the thinking policy turned thinking off); a thinking budget alone
  becomes an effort and thinking off ``none``
  (:func:`gateway.providers.wire_common.openai_effort`).
* ``seed``, ``presence_penalty`` and ``frequency_penalty`` are sent as they are. To an OpenAI
  Chat upstream (not litellm, which reuses this body) a message's ``name``, a ``developer``
  system message as ``role: developer`` and an image's ``detail`` are sent too; litellm gets
  neither (the target layer names them dropped: :mod:`gateway.layers.target_fields`).
  Consecutive assistant messages with different names are not merged.
* An OpenAI Chat client's own fields the schema has no place for (``request.native`` of this
  API: ``service_tier``, ``store``, ``metadata``, vendor extensions; the
  table is :data:`gateway.edges.fidelity.OPENAI_CHAT`) are set in the body verbatim, last; a
  Responses client's fields Chat shares (``prompt_cache_key``, ``service_tier``,
  ``text.verbosity`` as ``verbosity``, ...) are translated
  (:func:`gateway.providers.passthrough.sibling_fields`).
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from gateway.config import Deployment
from gateway.errors import CapabilityError, UpstreamProtocolError
from gateway.providers import media_wire, passthrough, wire_common
from gateway.providers.naming import TOOL_NAME, NameMap
from gateway.providers.openai_common import API as API  # the wire API name (WireModule.API)
from gateway.providers.openai_common import (
    content_items,
    map_stop_reason,
    raw_arguments_of,
    reasoning_text,
    thinking_provenance,
    usage_fields,
)
from gateway.providers.openai_stream import OpenAIChatStreamParser
from gateway.providers.wire import CallContext, StreamParser, UpstreamRequest
from gateway.schema import (
    AssistantMessage,
    AudioPart,
    DocumentPart,
    ImagePart,
    Request,
    Response,
    StopReason,
    SystemMessage,
    TextPart,
    ToolCallPart,
    ToolDefinition,
    ToolResultMessage,
    UserMessage,
)

DEFAULT_BASE_URL = "https://api.openai.com/v1"

OPENAI_ID = re.compile(r"^.{1,40}$", re.DOTALL)
"""Tool-call ids OpenAI accepts: any string of 1 to 40 characters."""
OPENAI_ID_MAX = 40


# ---------------------------------------------------------------------------- verbs


def build_request(
    request: Request, deployment: Deployment, api_key: str | None
) -> tuple[UpstreamRequest, CallContext]:
    """Internal request -> ``POST {base_url}/chat/completions``.

    ``base_url`` defaults to ``https://api.openai.com/v1``; the key goes in
    ``Authorization: Bearer``; ``deployment.quirks.extra_headers`` are added last.
    Raises :class:`CapabilityError` for images the deployment cannot take.
    """
    ctx = CallContext(deployment=deployment, request=request, names=NameMap())
    body = to_wire_body(request, deployment, ctx.names)
    headers = {"content-type": "application/json", "accept": "application/json"}
    if request.stream:
        headers["accept"] = "text/event-stream"
    if api_key:
        headers["authorization"] = f"Bearer {api_key}"
    headers.update(deployment.quirks.extra_headers)
    url = (deployment.base_url or DEFAULT_BASE_URL).rstrip("/") + "/chat/completions"
    return UpstreamRequest(url=url, headers=headers, body=orjson.dumps(body), stream=request.stream), ctx


def parse_response(body: bytes, ctx: CallContext) -> Response:
    """A non-streaming ``chat.completion`` body -> :class:`Response`.

    Raises :class:`UpstreamProtocolError` for non-JSON or a body without choices, and
    :class:`UnknownStopReason` for an unknown ``finish_reason``.
    """
    obj = wire_common.loads_object(body, what="chat completion", deployment=ctx.deployment.name)
    return from_wire_response(obj, ctx)


def new_stream_parser(ctx: CallContext) -> StreamParser:
    """A fresh :class:`gateway.providers.openai_stream.OpenAIChatStreamParser`."""
    return OpenAIChatStreamParser(ctx)


def stop_reason_with_tools(raw: str | None, has_tool_calls: bool) -> StopReason:
    """:func:`map_stop_reason`, but ``stop`` with tool calls present is ``tool_use``
    (OpenRouter mock function calling, corpus ``openhands/`` recordings)."""
    reason = map_stop_reason(raw)
    if reason == "stop" and has_tool_calls:
        return "tool_use"
    return reason


def error_message(status: int, body: bytes) -> str:
    """``error.message`` of an OpenAI-style error body, else the raw text (see
    :func:`gateway.providers.wire_common.error_message`)."""
    return wire_common.error_message(status, body)


# ---------------------------------------------------------------------------- request


def output_budget(request: Request, deployment: Deployment) -> int | None:
    """The output budget sent upstream (tokens, in ``quirks.max_tokens_field``), or None when
    the body carries none (the model's own limit applies, which the gateway does not know)."""
    return request.max_output_tokens


def upstream_id(names: NameMap, id_: str) -> str:
    """The tool-call id sent upstream for client id ``id_`` (rewritten only when longer than
    40 characters or empty)."""
    return names.ids.get(id_) or names.to_upstream_id(
        id_, OPENAI_ID, OPENAI_ID_MAX
    )  # a call's id comes back in its result


def upstream_name(names: NameMap, name: str) -> str:
    """The tool name sent upstream for client name ``name`` (``^[a-zA-Z0-9_-]{1,64}$``)."""
    return names.names.get(name) or names.to_upstream_name(name, TOOL_NAME, 64)


def _image_url(part: ImagePart) -> str:
    if part.url:
        return part.url
    return f"data:{part.media_type or 'image/png'};base64,{part.data or ''}"


def _image_block(part: ImagePart, own: bool = False) -> dict[str, Any]:
    """An ``image_url`` part; ``own``: an OpenAI Chat upstream (not litellm), which gets the
    image's ``detail`` too."""
    if own and part.detail is not None:
        return {"type": "image_url", "image_url": {"url": _image_url(part), "detail": part.detail}}
    return {"type": "image_url", "image_url": {"url": _image_url(part)}}


# Parts and messages are told apart by exact class (``type(x) is C``): models are never
# subclassed, and isinstance on a pydantic model goes through ABCMeta (several times slower,
# and this runs for every part of every message of every call).


def _where(msg: Any, i: int) -> str:
    return msg.src or f"messages[{i}]"


def _text_blocks(parts: list[TextPart]) -> list[dict[str, Any]]:
    """Text parts as ``text`` blocks, each with the client's own keys (``own_keys``)."""
    return [{"type": "text", "text": p.text, **(p.own_keys or {})} for p in parts if p.text]


def _user_content(
    msg: UserMessage, deployment: Deployment, i: int, own_parts: bool = False
) -> str | list[dict[str, Any]]:
    """A user message's ``content``; ``own_parts``: the parts' ``own_keys`` are an OpenAI Chat
    client's, for this OpenAI Chat upstream."""
    content = msg.content
    if len(content) == 1 and type(content[0]) is TextPart and content[0].own_keys is None:
        return content[0].text
    blocks: list[dict[str, Any]] = []
    own = deployment.api == API
    for part in content:
        if type(part) is TextPart:
            if part.text:
                blocks.append({"type": "text", "text": part.text})
                if own_parts and part.own_keys:
                    blocks[-1].update(part.own_keys)
        elif type(part) is ImagePart:
            if not deployment.supports_images:
                where = _where(msg, i)
                raise CapabilityError(
                    f"{where} contains an image, which deployment {deployment.name!r} "
                    f"(model {deployment.model}) cannot take",
                    param=where,
                )
            blocks.append(_image_block(part, own))
            if own_parts and part.own_keys:
                blocks[-1].update(part.own_keys)
        elif type(part) is DocumentPart:
            if part.text is not None:  # a plain-text document: Chat's files are PDFs
                blocks.append({"type": "text", "text": media_wire.document_text(part)})
            else:
                blocks.append(media_wire.openai_chat_file(part, deployment))
            if own_parts and part.own_keys:
                blocks[-1].update(part.own_keys)
        elif type(part) is AudioPart:
            blocks.append(media_wire.openai_chat_audio(part, deployment))
    return blocks or ""


def _assistant_dict(
    msg: AssistantMessage, names: NameMap, own_parts: bool = False, custom: frozenset[str] = frozenset()
) -> dict[str, Any] | None:
    """An assistant message's wire dict (None when it has neither text nor tool calls);
    ``own_parts``: its text parts' ``own_keys`` are an OpenAI Chat client's
    (``prompt_cache_breakpoint``): its ``content`` is then a list of text blocks carrying them."""
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for p in msg.content:
        if type(p) is TextPart:
            texts.append(p.text)
        elif type(p) is ToolCallPart:
            if custom and p.name in custom and isinstance(p.arguments.get("input"), str):
                calls.append(  # a custom tool's call: its free-form input
                    {
                        "id": upstream_id(names, p.id),
                        "type": "custom",
                        "custom": {"name": upstream_name(names, p.name), "input": p.arguments["input"]},
                    }
                )
                continue
            calls.append(
                {
                    "id": upstream_id(names, p.id),
                    "type": "function",
                    "function": {"name": upstream_name(names, p.name), "arguments": p.raw_arguments},
                }
            )
    content: str | list[dict[str, Any]] | None
    if own_parts and any(type(p) is TextPart and p.own_keys for p in msg.content):
        content = _text_blocks([p for p in msg.content if type(p) is TextPart]) or None  # type: ignore[misc]
    else:
        content = "".join(texts) or None
    if not content and not calls:
        return None
    out: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        out["tool_calls"] = calls
    return out


def _without_refusal_text(msg: AssistantMessage, refusal: Any) -> AssistantMessage:
    """``msg`` less the text part the OpenAI Chat edge made of its ``refusal`` (the last one
    with that text): an OpenAI Chat upstream gets the ``refusal`` key itself, as sent."""
    content = msg.content
    for j in range(len(content) - 1, -1, -1):
        p = content[j]
        if type(p) is TextPart and p.text == refusal:
            return msg.model_copy(update={"content": [*content[:j], *content[j + 1 :]]})
    return msg


_MERGEABLE = frozenset({"role", "content", "tool_calls", "name"})
"""An assistant wire dict with other keys (the client's own: ``audio``) is never merged into."""


def _merge_assistant(prev: dict[str, Any], new: dict[str, Any]) -> bool:
    """Fold ``new`` into ``prev`` (consecutive assistant messages of one name): text joined,
    tool calls appended; False (nothing done) when either holds text blocks or own keys."""
    a, b = prev.get("content"), new.get("content")
    if type(a) is list or type(b) is list or not prev.keys() <= _MERGEABLE:
        return False
    prev["content"] = ((a or "") + (b or "")) or None
    if new.get("tool_calls"):
        prev.setdefault("tool_calls", []).extend(new["tool_calls"])
    return True


def _messages(
    request: Request, deployment: Deployment, names: NameMap, custom: frozenset[str] = frozenset()
) -> list[dict[str, Any]]:
    """The ``messages`` list; ``custom``: the free-form tools sent as Chat ``custom`` tools (their
    calls in assistant messages go as ``custom`` tool calls)."""
    out: list[dict[str, Any]] = []
    image_followup: list[dict[str, Any]] = []
    inline_images = deployment.quirks.images_in_tool_results
    own = deployment.api == API  # not litellm: names, developer role, image detail
    for i, msg in enumerate(request.messages):
        if image_followup and type(msg) is not ToolResultMessage:
            out.append({"role": "user", "content": image_followup})
            image_followup = []
        o = msg.own
        if o is not None and (not own or o.api != API):
            o = None  # another wire API's own keys: not ours to send
        tm = type(msg)
        if tm is AssistantMessage:
            if o is not None and "refusal" in o.keys:
                msg = _without_refusal_text(msg, o.keys["refusal"])  # type: ignore[arg-type]
            item = _assistant_dict(msg, names, o is not None, custom)  # type: ignore[arg-type]
            if item is None:
                if o is not None and o.keys:
                    item = {"role": "assistant"}  # only the client's own keys (an audio reference)
                elif own and not msg.content:
                    item = {"role": "assistant", "content": ""}  # the client's empty turn, kept
                else:
                    continue
            if own and msg.name is not None:
                item["name"] = msg.name
            if o is not None and o.keys:
                item.update(o.keys)  # the client's own keys on this message (audio): never merged
                out.append(item)
            elif not (
                out
                and out[-1]["role"] == "assistant"
                and out[-1].get("name") == item.get("name")
                and _merge_assistant(out[-1], item)
            ):
                out.append(item)
            continue
        if tm is ToolResultMessage:
            out.append(_tool_message(msg, deployment, names, i, inline_images, image_followup, o is not None))  # type: ignore[arg-type]
            if msg.is_error:  # type: ignore[union-attr]
                wire_common.mark_error(out[-1], "content")
        elif tm is UserMessage:
            out.append({"role": "user", "content": _user_content(msg, deployment, i, o is not None)})  # type: ignore[arg-type]
            if own and msg.name is not None:
                out[-1]["name"] = msg.name
        elif tm is SystemMessage:
            role = "developer" if own and msg.developer else "system"  # type: ignore[union-attr]
            if o is not None and any(p.own_keys for p in msg.content):  # type: ignore[union-attr]
                out.append({"role": role, "content": _text_blocks(msg.content)})  # type: ignore[arg-type]
            else:
                out.append({"role": role, "content": "\n\n".join(p.text for p in msg.content)})  # type: ignore[union-attr, misc]
            if own and msg.name is not None:
                out[-1]["name"] = msg.name
        if o is not None and o.keys:
            out[-1].update(o.keys)
    if image_followup:
        out.append({"role": "user", "content": image_followup})
    return out


def _tool_message(
    msg: ToolResultMessage,
    deployment: Deployment,
    names: NameMap,
    i: int,
    inline_images: bool,
    image_followup: list[dict[str, Any]],
    own_parts: bool = False,
) -> dict[str, Any]:
    """One ``role: tool`` message; image parts go inline or are appended to
    ``image_followup`` (the user message that follows the run of tool messages); ``own_parts``:
    the parts' ``own_keys`` are an OpenAI Chat client's (text parts then go as blocks with them)."""
    call_id = upstream_id(names, msg.tool_call_id)
    content = msg.content
    if own_parts and any(type(p) is TextPart and p.own_keys for p in content):
        if not any(type(p) is ImagePart for p in content):
            blocks = _text_blocks([p for p in content if type(p) is TextPart])  # type: ignore[misc]
            return {"role": "tool", "tool_call_id": call_id, "content": blocks}
    elif len(content) == 1 and type(content[0]) is TextPart:  # the common case
        return {"role": "tool", "tool_call_id": call_id, "content": content[0].text}
    images = [p for p in content if type(p) is ImagePart]
    if images and not deployment.supports_images:
        where = _where(msg, i)
        raise CapabilityError(
            f"the tool result for tool call {msg.tool_call_id!r} ({where}) contains an image, which "
            f"deployment {deployment.name!r} (model {deployment.model}) cannot take",
            param=where,
        )
    wire: str | list[dict[str, Any]]
    if images and inline_images:
        wire = []
        for p in content:
            if type(p) is TextPart:
                if p.text:
                    wire.append({"type": "text", "text": p.text})
            elif type(p) is ImagePart:
                wire.append(_image_block(p, deployment.api == API))
            else:
                continue
            if own_parts and p.own_keys:
                wire[-1].update(p.own_keys)
    else:
        wire = "\n".join(p.text for p in content if type(p) is TextPart)
        if images:
            image_followup.append({"type": "text", "text": f"Image output of tool call {call_id}:"})
            image_followup.extend(_image_block(p, deployment.api == API) for p in images)
    return {"role": "tool", "tool_call_id": call_id, "content": wire}


def custom_tools(request: Request) -> frozenset[str]:
    """Names of the request's free-form tools (:attr:`gateway.schema.ToolDefinition.freeform`),
    sent to an OpenAI Chat upstream as Chat ``custom`` tools."""
    return frozenset(t.name for t in request.tools if t.freeform is not None)


def _custom_tool(t: ToolDefinition, names: NameMap) -> dict[str, Any]:
    """A free-form tool as a Chat ``custom`` tool: its format in Chat's shape (``{"type":
    "grammar", "grammar": {"definition", "syntax"}}``), its own description (without the
    emulation's grammar note)."""
    custom: dict[str, Any] = {"name": upstream_name(names, t.name)}
    description = wire_common.native_description(t)
    if description is not None:
        custom["description"] = description
    fmt = t.freeform or {}
    if fmt.get("type") == "grammar":
        custom["format"] = {
            "type": "grammar",
            "grammar": {"definition": fmt.get("definition"), "syntax": fmt.get("syntax")},
        }
    return {"type": "custom", "custom": custom}


def _tool_choice(request: Request, names: NameMap, custom: frozenset[str]) -> Any:
    tc = request.tool_choice
    if tc is None:
        return None
    if tc.allowed is not None and tc.mode in ("auto", "required"):
        tools = [
            {"type": "custom", "custom": {"name": upstream_name(names, n)}}
            if n in custom
            else {"type": "function", "function": {"name": upstream_name(names, n)}}
            for n in tc.allowed
        ]
        return {"type": "allowed_tools", "allowed_tools": {"mode": tc.mode, "tools": tools}}
    if tc.mode == "tool":
        if not tc.name:
            return "required"
        if tc.name in custom:
            return {"type": "custom", "custom": {"name": upstream_name(names, tc.name)}}
        return {"type": "function", "function": {"name": upstream_name(names, tc.name)}}
    return tc.mode


def to_wire_body(request: Request, deployment: Deployment, names: NameMap) -> dict[str, Any]:
    """The Chat Completions JSON body (a dict) for ``request`` on ``deployment``.

    Fills ``names`` with the tool name / id rewrites applied. ``max_output_tokens`` goes in
    ``quirks.max_tokens_field``; ``stream`` adds ``stream_options.include_usage`` when
    ``quirks.stream_usage``. Raises :class:`CapabilityError` for images the deployment cannot
    take.
    """
    custom = custom_tools(request) if request.tools and deployment.api == API else frozenset()  # not litellm
    body: dict[str, Any] = {
        "model": deployment.model,
        "messages": _messages(request, deployment, names, custom),
    }
    if request.tools:
        tools = []
        for t in request.tools:
            if t.name in custom:
                tools.append(_custom_tool(t, names))
                continue
            fn: dict[str, Any] = {"name": upstream_name(names, t.name)}
            if t.description is not None:
                fn["description"] = t.description
            fn["parameters"] = t.parameters
            if t.strict is not None:
                fn["strict"] = t.strict
            tools.append({"type": "function", "function": fn})
        body["tools"] = tools
        choice = _tool_choice(request, names, custom)
        if choice is not None:
            body["tool_choice"] = choice
        if request.tool_choice is not None and request.tool_choice.parallel is not None:
            body["parallel_tool_calls"] = request.tool_choice.parallel
    if request.max_output_tokens is not None:
        body[deployment.quirks.max_tokens_field] = request.max_output_tokens
    if request.temperature is not None:
        body["temperature"] = request.temperature
    if request.top_p is not None:
        body["top_p"] = request.top_p
    if request.seed is not None:
        body["seed"] = request.seed
    if request.presence_penalty is not None:
        body["presence_penalty"] = request.presence_penalty
    if request.frequency_penalty is not None:
        body["frequency_penalty"] = request.frequency_penalty
    if request.stop:
        body["stop"] = list(request.stop)
    rf = request.response_format
    if rf is not None and rf.type != "text":
        if rf.type == "json_object":
            body["response_format"] = {"type": "json_object"}
        else:
            js: dict[str, Any] = {"name": rf.name or "response", "schema": rf.schema_ or {}}
            if rf.description is not None:
                js["description"] = rf.description
            strict = wire_common.openai_strict(rf)
            if strict is not None:
                js["strict"] = strict
            body["response_format"] = {"type": "json_schema", "json_schema": js}
    native = request.native
    own = native.fields if native is not None and native.api == deployment.api == API else None
    thinking = request.thinking
    if thinking is not None and deployment.supports_thinking:
        verbatim = own.get("reasoning_effort") if own else _responses_effort(request)
        if deployment.api == API:
            effort: str | None = wire_common.openai_effort(thinking, deployment.model)
        else:  # litellm maps reasoning_effort per provider: only an effort, or the client's own none
            effort = thinking.effort if thinking.enabled else ("none" if verbatim == "none" else None)
        if verbatim == ("xhigh" if thinking.enabled else "none"):
            effort = verbatim  # an OpenAI client's own value, as sent
        if effort is not None:
            body["reasoning_effort"] = effort
    if request.user:
        body["user"] = request.user
    if request.stream:
        body["stream"] = True
        if deployment.quirks.stream_usage:
            body["stream_options"] = {"include_usage": True}
    if own:  # not for litellm, which reuses this function
        for key, value in own.items():
            if key == "tool_fields":  # tool name -> the client's own keys on that tool entry
                by_name = {upstream_name(names, n): f for n, f in value.items()}
                for tool in body.get("tools", ()):
                    tool.update(by_name.get(tool["function"]["name"], ()))
            elif key != "reasoning_effort" and key != "message_fields":  # placed already
                body[key] = value
    elif native is not None and native.api == "openai_responses" and deployment.api == API:
        body.update(passthrough.sibling_fields(request, API))  # a Responses client's shared fields
    return body


def _responses_effort(request: Request) -> str | None:
    """An OpenAI Responses client's ``reasoning.effort`` of ``none`` or ``xhigh`` as sent (kept
    in its ``request.native``: the schema reads them as thinking off and ``high``); Chat's
    ``reasoning_effort`` takes both values (``openai.types.shared.ReasoningEffort``)."""
    native = request.native
    if native is None or native.api != "openai_responses":
        return None
    reasoning = native.fields.get("reasoning")
    value = reasoning.get("effort") if isinstance(reasoning, dict) else None
    return value if isinstance(value, str) else None


# ---------------------------------------------------------------------------- response


def from_wire_response(obj: dict[str, Any], ctx: CallContext) -> Response:
    """A decoded ``chat.completion`` object -> :class:`Response`.

    Reads ``choices[0].message``: reasoning (``reasoning_content`` / ``reasoning``) becomes a
    :class:`ThinkingPart` without signature, then text (``content``; ``refusal`` text too),
    then tool calls (``tool_calls``, or a legacy ``function_call`` with a synthesised id) with
    names and ids mapped back through ``ctx.names``. The answer is assembled as plain dicts and
    validated once (:func:`gateway.providers.wire_common.validate_response`). Raises
    :class:`UpstreamProtocolError` when there is no choice or a ``tool_calls`` entry is not an
    object, and :class:`UnknownStopReason` for an unknown ``finish_reason``.
    """
    dep = ctx.deployment
    choices = obj.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise UpstreamProtocolError("chat completion without choices", deployment=dep.name)
    choice = choices[0]
    msg = choice.get("message")
    if not isinstance(msg, dict):
        msg = {}
    resp_id = str(obj.get("id") or "")
    parts: list[dict[str, Any]] = []
    reasoning = reasoning_text(msg)
    if reasoning:
        parts.append({"type": "thinking", "text": reasoning, "provenance": thinking_provenance(dep)})
    content = msg.get("content")
    if isinstance(content, str):  # the common case: plain text
        if content:
            parts.append({"type": "text", "text": content})
    else:
        for kind, text in content_items(content):
            if kind == "thinking":
                parts.append({"type": "thinking", "text": text, "provenance": thinking_provenance(dep)})
            else:
                parts.append({"type": "text", "text": text})
    refusal = msg.get("refusal")
    if isinstance(refusal, str) and refusal:
        parts.append({"type": "text", "text": refusal})
    calls = msg.get("tool_calls")
    has_calls = False
    if isinstance(calls, list) and calls:
        names = ctx.names
        for n, tc in enumerate(calls):
            if not isinstance(tc, dict):
                raise UpstreamProtocolError(
                    f"chat completion choices[0].message.tool_calls[{n}] is not an object",
                    deployment=dep.name,
                )
            fn = tc.get("function")
            custom = tc.get("custom")
            if isinstance(custom, dict):  # a custom tool's call: its input is the argument "input"
                fn = {
                    "name": custom.get("name"),
                    "arguments": orjson.dumps({"input": str(custom.get("input") or "")}).decode(),
                }
            if not isinstance(fn, dict):
                fn = {}
            raw = raw_arguments_of(fn.get("arguments"))
            tid = tc.get("id") or wire_common.synth_id("call", resp_id, n)
            parts.append(
                {
                    "type": "tool_call",
                    "id": names.from_upstream_id(str(tid)),
                    "name": names.from_upstream_name(str(fn.get("name") or "")),
                    "arguments": wire_common.parse_arguments(raw),
                    "raw_arguments": raw,
                }
            )
        has_calls = True
    else:
        legacy = msg.get("function_call")
        if isinstance(legacy, dict):
            raw = raw_arguments_of(legacy.get("arguments"))
            parts.append(
                {
                    "type": "tool_call",
                    "id": wire_common.synth_id("call", resp_id, 0),
                    "name": ctx.names.from_upstream_name(str(legacy.get("name") or "")),
                    "arguments": wire_common.parse_arguments(raw),
                    "raw_arguments": raw,
                }
            )
            has_calls = True
    usage = obj.get("usage")
    data = {
        "id": resp_id,
        "model": str(obj.get("model") or dep.model),
        "message": {"content": parts},
        "stop_reason": stop_reason_with_tools(choice.get("finish_reason"), has_calls),
        "usage": usage_fields(usage) if isinstance(usage, dict) else {},
    }
    return wire_common.validate_response(data, what="chat completion", deployment=dep.name)
