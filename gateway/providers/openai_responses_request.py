"""The OpenAI Responses request body built from the internal schema
(https://platform.openai.com/docs/api-reference/responses/create).

Decisions worth knowing
-----------------------
* Stateless: every request carries ``store: false`` and, for a reasoning model
  (:func:`gateway.providers.openai_responses_common.is_reasoning_model`: OpenAI refuses it for
  the others), ``include: ["reasoning.encrypted_content"]``, so reasoning comes back encrypted in
  the answer and travels with the conversation instead of living at OpenAI
  (https://platform.openai.com/docs/guides/reasoning#encrypted-reasoning-items).
  ``previous_response_id`` is never sent: the whole history goes in ``input``.
* System messages before the first other message become ``instructions`` (joined by a blank
  line); a later one stays in place as an input message of role ``system``. A ``developer``
  one (an OpenAI client's ``role: developer``) is an input message of role ``developer`` in
  place, wherever it is (``instructions`` is the system prompt).
* Input items, in the conversation's order: user messages (``input_text``, ``input_image`` with
  the image's ``detail``, else ``auto``), assistant turns split into ``message`` items (``output_text``),
  ``reasoning`` items and ``function_call`` items exactly as the parts were ordered, and one
  ``function_call_output`` per tool result (``output`` a string, or a list of ``input_text`` /
  ``input_image`` when the result holds images).
* Reasoning goes back ONLY when it was made by a Responses upstream and carries its
  ``encrypted_content`` (the thinking signature): the thinking policy
  (:mod:`gateway.guards.thinking`) has already removed reasoning signed elsewhere; here a
  thinking part that is not Responses-signed or has no signature is left out as a last resort
  (OpenAI could not verify it). Its text goes back as one ``summary_text`` part. Encrypted
  reasoning without text that a Responses upstream made (a client's raw ``reasoning`` item with
  an empty ``summary``) goes back as a ``reasoning`` item with its ``encrypted_content`` and no
  summary; other redacted thinking (Anthropic's encrypted reasoning) has no slot and is left
  out. Reasoning item ids are not sent: with ``store: false`` the ``encrypted_content`` is what
  OpenAI reads (Codex CLI sends reasoning items without ``id`` the same way). Reasoning that
  ends an assistant turn with no output after it (its calls were withheld) is not sent: OpenAI
  wants a reasoning item followed by the item it led to ("Item 'rs_…' of type 'reasoning' was
  provided without its required following item", continuedev/continue#8933).
* Free-form tools (:attr:`gateway.schema.ToolDefinition.freeform`: a Responses client's
  ``custom`` tools) are sent natively as ``custom`` tools with their ``format`` and their own
  description (the emulation's grammar note removed); their calls in the history go back as
  ``custom_tool_call`` items (``input``: the call's ``input`` argument) and the results as
  ``custom_tool_call_output``; a tool choice of one is ``{"type": "custom", "name"}``. The
  answer's ``custom_tool_call`` items come back as calls of the emulated function
  (``{"input": ...}``, :mod:`gateway.providers.openai_responses`), as from any other upstream.
* The client's same-wire Responses fields (``Request.native`` of API ``openai_responses``:
  ``prompt_cache_key``, ``client_metadata``, ``service_tier``, ``truncation``,
  ``text.verbosity``, ``reasoning.context`` / ``summary``, ...) are sent verbatim, merged into
  ``text`` and ``reasoning``; ``reasoning.*`` only to a reasoning model
  (:mod:`gateway.providers.passthrough`; toward other wire APIs they are dropped and named,
  as serving-only fields: :class:`gateway.schema.NativeFields`). An OpenAI Chat client's fields
  the Responses API shares (``prompt_cache_key``, ``service_tier``, ``safety_identifier``,
  ``store``, ``moderation``, ``verbosity`` as ``text.verbosity``, ...) are merged the same way
  (:func:`gateway.providers.passthrough.sibling_fields`); a Chat client's ``store: true`` is
  the one case where the upstream is not sent ``store: false``.
* Function tools are sent with ``strict: false`` unless the client asked for strict: the
  Responses API defaults ``strict`` to true, which refuses any schema that is not fully closed
  ("Invalid schema for function ... 'required' is required to be supplied"),
  https://platform.openai.com/docs/guides/function-calling#strict-mode.
* ``tool_choice`` and ``parallel_tool_calls`` are sent only with tools.
* Structured output: ``response_format`` becomes ``text.format`` (``json_object``, or
  ``json_schema`` with ``name``, ``description``, ``schema``, ``strict``).
* ``thinking.effort`` becomes ``reasoning.effort``; a budget alone becomes an effort
  (< 4096 tokens ``low``, < 16384 ``medium``, else ``high``) and thinking off ``none``
  (:func:`gateway.providers.wire_common.openai_effort`); with thinking on, ``reasoning.summary``
  is ``auto`` so the client sees the model's reasoning summary. Only for a reasoning model
  (OpenAI refuses ``reasoning`` for the others): toward another model the target layer has
  already dropped the request's thinking and named it (:mod:`gateway.thinking_fit`), for both
  OpenAI APIs alike.
* ``stop`` sequences have no slot in the Responses API: a request with them is refused
  (:class:`CapabilityError` naming ``stop``) rather than answered without them. ``top_k`` has
  none either and is not sent (as for Chat Completions). ``metadata`` goes in ``metadata``, except
  the gateway's own keys; a value that is not a string or more than 16 keys (OpenAI refuses
  both) is refused by name (:class:`CapabilityError`), never trimmed.
* Tool names are rewritten to ``^[a-zA-Z0-9_-]{1,64}$`` and call ids longer than 40 characters
  to 40, as for Chat Completions (:mod:`gateway.providers.openai_chat`), mapped back on the way in.
  A member of a client's ``namespace`` tool (flattened to ``<namespace>.<name>`` by the edge) is
  sent as the top-level tool ``<namespace>__<name>`` (:class:`NameMap`): the schema keeps no
  namespaces, and the client gets its calls back with ``namespace`` and ``name`` again.
"""

from __future__ import annotations

from typing import Any

from gateway.config import Deployment
from gateway.errors import CapabilityError
from gateway.providers import media_wire, passthrough, wire_common
from gateway.providers.naming import NameMap
from gateway.providers.openai_chat import upstream_id, upstream_name
from gateway.providers.openai_responses_common import (
    API,
    CUSTOM_INPUT,
    is_reasoning_model,
    is_responses_signed,
)
from gateway.providers.wire_common import native_description as native_description
from gateway.schema import (
    AssistantMessage,
    AudioPart,
    DocumentPart,
    ImagePart,
    RedactedThinkingPart,
    Request,
    SystemMessage,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolDefinition,
    ToolResultMessage,
    UserMessage,
)

MAX_METADATA = 16
"""Keys of ``metadata`` OpenAI accepts (https://platform.openai.com/docs/api-reference/responses/create#responses-create-metadata)."""
_OWN_METADATA = ("_turnstile", "turnstile_")


def _image(part: ImagePart) -> dict[str, Any]:
    url = part.url or f"data:{part.media_type or 'image/png'};base64,{part.data or ''}"
    return {"type": "input_image", "image_url": url, "detail": part.detail or "auto"}


def _where(msg: Any, i: int) -> str:
    return msg.src or f"messages[{i}]"


def _no_images(deployment: Deployment, what: str, where: str) -> CapabilityError:
    return CapabilityError(
        f"{what} contains an image, which deployment {deployment.name!r} "
        f"(model {deployment.model}) cannot take",
        param=where,
    )


def _user_item(msg: UserMessage, deployment: Deployment, i: int, own: bool = False) -> dict[str, Any]:
    """A user message's input item; ``own``: the parts' ``own_keys`` are a Responses client's,
    set on the parts."""
    content = msg.content
    if len(content) == 1 and type(content[0]) is TextPart and content[0].own_keys is None:  # the common case
        return {"role": "user", "content": content[0].text}
    parts: list[dict[str, Any]] = []
    for part in content:
        if type(part) is TextPart:
            if not part.text:
                continue
            parts.append({"type": "input_text", "text": part.text})
        elif type(part) is ImagePart:
            if not deployment.supports_images:
                raise _no_images(deployment, _where(msg, i), _where(msg, i))
            parts.append(_image(part))
        elif type(part) is DocumentPart:
            if part.text is not None:  # a plain-text document: as text (input_file is for PDFs)
                parts.append({"type": "input_text", "text": media_wire.document_text(part)})
            else:
                parts.append(media_wire.responses_input_file(part))
        else:
            if type(part) is AudioPart:
                raise media_wire.refuse(part, deployment, "cannot take audio")
            continue
        if own and part.own_keys:
            parts[-1].update(part.own_keys)
    return {"role": "user", "content": parts or ""}


def _system_parts(msg: SystemMessage) -> list[dict[str, Any]]:
    """A system message's text as ``input_text`` parts, each with a Responses client's own keys
    (``own_keys``: ``prompt_cache_breakpoint``)."""
    return [{"type": "input_text", "text": p.text, **(p.own_keys or {})} for p in msg.content if p.text]


def _custom_tools(request: Request) -> set[str]:
    """Names of the request's free-form tools (sent as ``custom`` tools)."""
    return {t.name for t in request.tools if t.freeform is not None}


def _call_item(p: ToolCallPart, names: NameMap, custom: set[str], own: bool = False) -> dict[str, Any]:
    """A tool call -> a ``function_call`` item, or a ``custom_tool_call`` (``input`` its
    ``input`` argument) for a free-form tool; ``own``: with a Responses client's own keys of
    the call (``status``, ``async``, ``caller``)."""
    call_id = upstream_id(names, p.id)
    name = upstream_name(names, p.name)
    value = p.arguments.get(CUSTOM_INPUT)
    item: dict[str, Any]
    if p.name in custom and isinstance(value, str):
        item = {"type": "custom_tool_call", "call_id": call_id, "name": name, "input": value}
    else:
        item = {"type": "function_call", "call_id": call_id, "name": name, "arguments": p.raw_arguments}
    if own and p.own_keys:
        item.update(p.own_keys)
    return item


def _own_text_item(p: TextPart) -> dict[str, Any]:
    """An assistant text part with a Responses client's own keys (``own_keys``) as its own
    ``message`` item: ``phase`` and ``status`` on the item, ``annotations`` / ``logprobs`` on
    the text."""
    own = dict(p.own_keys or {})
    on_item = {k: own.pop(k) for k in _ITEM_KEYS if k in own}
    return {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": p.text, **own}],
        **on_item,
    }


_ITEM_KEYS = ("phase", "status")
"""Own keys of an assistant text part that belong on its ``message`` item."""


def _assistant_items(
    msg: AssistantMessage,
    names: NameMap,
    out: list[dict[str, Any]],
    custom: set[str],
    own: bool = False,
) -> None:
    """Append ``msg``'s items to ``out``; ``own``: its parts' ``own_keys`` are a Responses
    client's (each text part with them is its own message item; a call's go on its item)."""
    texts: list[str] = []
    start = len(out)

    def flush() -> None:
        if texts:
            text = "".join(texts)
            texts.clear()
            if text:
                out.append(
                    {
                        "type": "message",
                        "role": "assistant",
                        "content": [{"type": "output_text", "text": text}],
                    }
                )

    for p in msg.content:
        if type(p) is TextPart:
            if own and p.own_keys and p.text:
                flush()
                out.append(_own_text_item(p))
                continue
            texts.append(p.text)
        elif type(p) is ToolCallPart:
            flush()
            out.append(_call_item(p, names, custom, own))
        elif type(p) is ThinkingPart and p.signature and is_responses_signed(p.provenance):
            flush()
            summary = [{"type": "summary_text", "text": p.text}] if p.text else []
            out.append({"type": "reasoning", "summary": summary, "encrypted_content": p.signature})
        elif type(p) is RedactedThinkingPart and is_responses_signed(p.provenance):
            flush()  # a reasoning item with encrypted content and no summary, as the client sent it
            out.append({"type": "reasoning", "summary": [], "encrypted_content": p.data})
        # any other RedactedThinkingPart (Anthropic's encrypted reasoning): no slot here
    flush()
    while len(out) > start and out[-1]["type"] == "reasoning":
        out.pop()  # reasoning goes with the output that followed it; alone it is not sent


def _tool_output(
    msg: ToolResultMessage, deployment: Deployment, names: NameMap, i: int, kind: str, own: bool = False
) -> dict[str, Any]:
    """A tool result -> a ``function_call_output`` / ``custom_tool_call_output`` item (``kind``):
    ``output`` a string, or parts when it holds images or (``own``) a Responses client's parts
    carry their own keys (``own_keys``: ``prompt_cache_breakpoint``), set on the parts."""
    call_id = upstream_id(names, msg.tool_call_id)
    content = msg.content
    keyed = own and any(type(p) in (TextPart, ImagePart) and p.own_keys for p in content)  # type: ignore[union-attr]
    if not keyed and len(content) == 1 and type(content[0]) is TextPart:  # the common case
        return {"type": kind, "call_id": call_id, "output": content[0].text}
    images = any(type(p) is ImagePart for p in content)
    if not keyed and not images:
        text = "\n".join(p.text for p in content if type(p) is TextPart)
        return {"type": kind, "call_id": call_id, "output": text}
    if images and not deployment.supports_images:
        where = _where(msg, i)
        raise _no_images(deployment, f"the tool result for tool call {msg.tool_call_id!r} ({where})", where)
    parts: list[dict[str, Any]] = []
    for p in content:
        if type(p) is TextPart:
            if not p.text:
                continue
            parts.append({"type": "input_text", "text": p.text})
        elif type(p) is ImagePart:
            parts.append(_image(p))
        else:
            continue
        if own and p.own_keys:
            parts[-1].update(p.own_keys)
    return {"type": kind, "call_id": call_id, "output": parts}


def input_items(
    request: Request, deployment: Deployment, names: NameMap
) -> tuple[str | None, list[dict[str, Any]]]:
    """``(instructions, input)`` for ``request``: the leading system text (None when there is
    none) and the input items (see module docstring). Raises :class:`CapabilityError` for
    images the deployment cannot take."""
    leading: list[str] = []
    items: list[dict[str, Any]] = []
    custom = _custom_tools(request)
    custom_calls: set[str] = set()  # ids of calls sent as custom_tool_call: their outputs match
    ours = deployment.api == API  # not litellm
    for i, msg in enumerate(request.messages):
        tm = type(msg)
        mine = ours and msg.own is not None and msg.own.api == API  # the client's own keys, for us
        own = mine
        extra = msg.own.keys or None if mine else None  # type: ignore[union-attr]
        if tm is SystemMessage:
            text: Any = "\n\n".join(p.text for p in msg.content)  # type: ignore[union-attr,misc]
            if own and any(p.own_keys for p in msg.content):  # type: ignore[union-attr]
                text = _system_parts(msg)  # type: ignore[arg-type]
                extra = extra or {}
            if msg.developer:  # type: ignore[union-attr]
                items.append({"role": "developer", "content": text, **(extra or {})})
            elif items or extra is not None:  # an item of its own: never folded into instructions
                items.append({"role": "system", "content": text, **(extra or {})})
            else:
                leading.append(text)
        elif tm is UserMessage:
            items.append(_user_item(msg, deployment, i, own))  # type: ignore[arg-type]
            if extra:
                items[-1].update(extra)
        elif tm is AssistantMessage:
            start = len(items)
            _assistant_items(msg, names, items, custom, own)  # type: ignore[arg-type]
            sent = items[start:]
            custom_calls.update(
                names.from_upstream_id(it["call_id"]) for it in sent if it["type"] == "custom_tool_call"
            )
        elif tm is ToolResultMessage:
            kind = (
                "custom_tool_call_output"
                if msg.tool_call_id in custom_calls  # type: ignore[union-attr]
                else "function_call_output"
            )
            items.append(_tool_output(msg, deployment, names, i, kind, own))  # type: ignore[arg-type]
            if msg.is_error:  # type: ignore[union-attr]
                wire_common.mark_error(items[-1], "output")
            if extra:
                items[-1].update(extra)
    return ("\n\n".join(leading) if leading else None), items


def _chat_effort(request: Request) -> str | None:
    """An OpenAI Chat client's ``reasoning_effort`` of ``none`` or ``xhigh`` as sent (kept in its
    ``request.native``: the schema reads them as thinking off and ``high``); the Responses API's
    ``reasoning.effort`` takes both values (``openai.types.shared.ReasoningEffort``)."""
    native = request.native
    if native is None or native.api != "openai_chat":
        return None
    value = native.fields.get("reasoning_effort")
    return value if isinstance(value, str) else None


def _metadata(request: Request, deployment: Deployment) -> dict[str, str]:
    """The client's ``metadata`` for a Responses upstream, less the gateway's own keys. Raises
    :class:`CapabilityError` naming ``metadata.<key>`` for a value that is not a string, or
    ``metadata`` for more than 16 keys (OpenAI's limits: it refuses both), rather than sending
    part of it."""
    out: dict[str, str] = {}
    for key, value in request.metadata.items():
        if key.startswith(_OWN_METADATA):
            continue
        if not isinstance(value, str):
            raise CapabilityError(
                f"metadata.{key}: deployment {deployment.name!r} ({API}) takes only string metadata "
                f"values, got {type(value).__name__}",
                param=f"metadata.{key}",
            )
        out[key] = value
    if len(out) > MAX_METADATA:
        raise CapabilityError(
            f"metadata: deployment {deployment.name!r} ({API}) takes at most {MAX_METADATA} keys, "
            f"got {len(out)}",
            param="metadata",
        )
    return out


def _custom_tool(t: ToolDefinition, names: NameMap) -> dict[str, Any]:
    tool: dict[str, Any] = {"type": "custom", "name": upstream_name(names, t.name)}
    description = native_description(t)
    if description is not None:
        tool["description"] = description
    if t.freeform and t.freeform.get("type") != "text":
        tool["format"] = t.freeform
    return tool


def _tools(request: Request, names: NameMap, body: dict[str, Any]) -> None:
    tools = []
    for t in request.tools:
        if t.freeform is not None:
            tools.append(_custom_tool(t, names))
            continue
        fn: dict[str, Any] = {"type": "function", "name": upstream_name(names, t.name)}
        if t.description is not None:
            fn["description"] = t.description
        fn["parameters"] = t.parameters
        fn["strict"] = bool(t.strict)
        tools.append(fn)
    body["tools"] = tools
    tc = request.tool_choice
    if tc is not None:
        if tc.allowed is not None and tc.mode in ("auto", "required"):
            custom = _custom_tools(request)
            body["tool_choice"] = {
                "type": "allowed_tools",
                "mode": tc.mode,
                "tools": [
                    {"type": "custom" if n in custom else "function", "name": upstream_name(names, n)}
                    for n in tc.allowed
                ],
            }
        elif tc.mode == "tool":
            kind = "custom" if tc.name in _custom_tools(request) else "function"
            body["tool_choice"] = (
                {"type": kind, "name": upstream_name(names, tc.name)} if tc.name else "required"
            )
        else:
            body["tool_choice"] = tc.mode
        if tc.parallel is not None:
            body["parallel_tool_calls"] = tc.parallel


def to_wire_body(request: Request, deployment: Deployment, names: NameMap) -> dict[str, Any]:
    """The Responses JSON body (a dict) for ``request`` on ``deployment``; fills ``names`` with
    the tool name / call id rewrites applied. Raises :class:`CapabilityError` for ``stop``
    sequences (no slot) and for images the deployment cannot take."""
    if request.stop:
        raise CapabilityError(
            f"stop: deployment {deployment.name!r} speaks the OpenAI Responses API, "
            "which has no stop sequences",
            param="stop",
        )
    instructions, items = input_items(request, deployment, names)
    body: dict[str, Any] = {"model": deployment.model}
    if instructions is not None:
        body["instructions"] = instructions
    body["input"] = items
    body["store"] = False
    if request.tools:
        _tools(request, names, body)
    if request.max_output_tokens is not None:
        body["max_output_tokens"] = request.max_output_tokens
    if request.temperature is not None:
        body["temperature"] = request.temperature
    if request.top_p is not None:
        body["top_p"] = request.top_p
    rf = request.response_format
    if rf is not None and rf.type != "text":
        if rf.type == "json_object":
            body["text"] = {"format": {"type": "json_object"}}
        else:
            fmt: dict[str, Any] = {
                "type": "json_schema",
                "name": rf.name or "response",
                "schema": rf.schema_ or {},
            }
            if rf.description is not None:
                fmt["description"] = rf.description
            strict = wire_common.openai_strict(rf)
            if strict is not None:
                fmt["strict"] = strict
            body["text"] = {"format": fmt}
    if is_reasoning_model(deployment):
        thinking = request.thinking
        if thinking is not None:
            verbatim = _chat_effort(request)
            effort = wire_common.openai_effort(thinking, deployment.model)
            if verbatim == ("xhigh" if thinking.enabled else "none"):
                effort = verbatim  # an OpenAI client's own value, as sent
            body["reasoning"] = {"effort": effort}
            if thinking.enabled:
                body["reasoning"]["summary"] = "auto"
        body["include"] = ["reasoning.encrypted_content"]
    if request.user:
        body["user"] = request.user
    metadata = _metadata(request, deployment) if request.metadata else None
    if metadata:
        body["metadata"] = metadata
    if request.stream:
        body["stream"] = True
    _merge_passthrough(body, request, deployment, names)
    return body


def _merge_passthrough(
    body: dict[str, Any], request: Request, deployment: Deployment, names: NameMap
) -> None:
    """The client's passed-through Responses fields (:mod:`gateway.providers.passthrough`) into
    ``body``: top-level ones verbatim, ``text`` and ``reasoning`` merged into the objects the
    schema's own fields made (the client's value wins), ``tool_fields`` set on the tool of that
    name."""
    sent = passthrough.split(request, deployment)[0] or passthrough.sibling_fields(request, deployment.api)
    for key, value in sent.items():
        if key == "tool_fields":  # tool name -> the client's own keys on that tool (defer_loading)
            by_name = {upstream_name(names, n): f for n, f in value.items()}
            for tool in body.get("tools", ()):
                tool.update(by_name.get(tool.get("name"), ()))
        elif key in ("text", "reasoning") and isinstance(value, dict):
            body[key] = {**body.get(key, {}), **value}
        else:
            body[key] = value
