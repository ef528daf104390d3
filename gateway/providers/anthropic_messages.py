"""Native Anthropic Messages wire module (``POST /v1/messages``).

Implements the :class:`gateway.providers.wire.WireModule` verbs at module level.
Reference: https://docs.anthropic.com/en/api/messages and
https://docs.anthropic.com/en/docs/build-with-claude/streaming.

Decisions worth knowing
-----------------------
* ``system``: the :class:`SystemMessage` entries before the first other message become the
  text blocks of the top-level ``system`` list, in order, ``cache_control`` kept; a later one
  (a mid-conversation system prompt) stays in place as a ``{"role": "system", "content":
  [text blocks]}`` message, so the cached prefix before it is unchanged. The Messages API takes
  ``role: system`` in ``messages`` (``SystemMessageParam`` in ``MessageParam``, anthropic SDK
  2.14; recorded in pydantic-ai cassettes ``test_anthropic_mid_conversation_system/*``).
  A message's own keys besides role and content (Claude Code's per-turn ``output_config`` on
  a system message) go back on it as sent.
* Consecutive messages of one role merge into one Anthropic message. In a user message the
  ``tool_result`` blocks come FIRST, then the user's text and images of that turn (Anthropic
  requires results to lead the turn; handed case C04).
* Empty and whitespace-only text blocks are never sent: Anthropic rejects them ("text content
  blocks must be non-empty", "... must contain non-whitespace text", seen in
  anthropics/claude-code#23440, LibreChat-AI/agents#124; handed case C07). A message left with
  no block is dropped, never padded with a placeholder.
* Tool results with images: ``content`` is a JSON array ``[text, image]`` with the base64
  ``data`` byte-identical (C08); URL images use ``source.type: url``; ``data:`` URIs become
  base64 sources.
* Thinking parts go back as ``thinking`` blocks with their signature byte-identical; a thinking
  part without signature cannot be verified by Anthropic and is dropped (the foreign-thinking
  policy has already run in the pipeline).
* Tool-call ids are rewritten to ``^[a-zA-Z0-9_-]+$`` and tool names to
  ``^[a-zA-Z0-9_-]{1,64}$`` (:mod:`gateway.providers.naming`), mapped back in answers.
* ``max_tokens`` is required: ``request.max_output_tokens``, else
  ``deployment.max_output_tokens``, else 4096.
* Thinking: ``{"type": "enabled", "budget_tokens": B}`` with B = the request's budget, else by
  effort (minimal 1024, low 2048, medium 8192, high 16384), else 1024; at least 1024 (the API
  minimum). Anthropic requires ``budget_tokens < max_tokens``; when it is not, ``max_tokens``
  becomes ``B + max_tokens`` so the visible answer keeps the budget the client asked for.
  ``enabled: false`` sends ``{"type": "disabled"}``; a deployment with
  ``supports_thinking: false`` gets no thinking field. An Anthropic client's own ``thinking``
  (``adaptive`` with ``display``, or its budget) and ``output_config.effort`` are sent as it
  sent them, ``max_tokens`` unchanged (:func:`_thinking`); effort alone sends no thinking field.
* An Anthropic client's fields the schema has no place for (``request.native`` of this API:
  top-level ``cache_control``, ``service_tier``, ``speed``, ``context_management``,
  ``container``, ``mcp_servers``, tool ``defer_loading``; the table is
  :data:`gateway.edges.fidelity.ANTHROPIC_MESSAGES`) are merged in last (:func:`merge_native`).
* ``response_format`` (JSON schema or JSON object): ``output_config.format`` on a model with
  structured outputs, else a forced output tool whose call comes back as the answer's text
  (:mod:`gateway.providers.anthropic_output`); a strict tool gets ``strict: true`` on such a
  model (:func:`gateway.providers.anthropic_output.strict_input_schema`).
* Headers: the client's ``anthropic-beta`` and ``anthropic-version`` (as the target layer
  admitted them) merged with the deployment's own (:func:`upstream_headers`).
* Server-side blocks in answers (``server_tool_use``, ``*_tool_result``, ``mcp_tool_use``,
  ``compaction``…) have no internal representation and are skipped; Turnstile never asks for
  server tools.
* A tool call's ``caller`` (programmatic tool calling: the server's code made the call) is
  sent on its ``tool_use`` block and read back from the answer's, verbatim.
* Stop reasons (``map_stop_reason``; ``pause_turn`` is ``pause``) and thinking provenance: see
  :mod:`gateway.providers.anthropic_common`.
"""

from __future__ import annotations

from typing import Any

import orjson

from gateway.config import Deployment
from gateway.errors import CapabilityError, UpstreamProtocolError
from gateway.providers import media_wire, wire_common
from gateway.providers.anthropic_common import API as API  # the wire API name (WireModule.API)
from gateway.providers.anthropic_common import SERVER_TOOL_AT, is_server_block, map_stop_reason, provenance
from gateway.providers.anthropic_output import add_output, map_back_parts, strict_input_schema
from gateway.providers.anthropic_stream import AnthropicStreamParser
from gateway.providers.naming import ANTHROPIC_ID, TOOL_NAME, NameMap
from gateway.providers.wire import CallContext, StreamParser, UpstreamRequest
from gateway.schema import (
    AssistantMessage,
    AudioPart,
    DocumentPart,
    ImagePart,
    NativePart,
    RedactedThinkingPart,
    Request,
    Response,
    SystemMessage,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultMessage,
    Usage,
    UserMessage,
)

DEFAULT_BASE_URL = "https://api.anthropic.com"
ANTHROPIC_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 4096
MIN_THINKING_BUDGET = 1024
EFFORT_BUDGETS = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384}


# ---------------------------------------------------------------------------- verbs


def build_request(
    request: Request, deployment: Deployment, api_key: str | None
) -> tuple[UpstreamRequest, CallContext]:
    """Internal request -> ``POST {base_url}/v1/messages`` with ``x-api-key`` (``base_url``
    defaults to https://api.anthropic.com; one that already ends in ``/v1`` is not doubled).
    Headers: :func:`upstream_headers`. A JSON response format goes in its native slot or a
    forced output tool (:mod:`gateway.providers.anthropic_output`). Raises
    :class:`CapabilityError` for images the deployment cannot take."""
    ctx = CallContext(deployment=deployment, request=request, names=NameMap())
    body = to_wire_body(request, deployment, ctx.names)
    if request.response_format is not None:
        add_output(body, request, deployment, ctx)
    headers = upstream_headers(request, deployment)
    headers["accept"] = "text/event-stream" if request.stream else "application/json"
    if api_key:
        headers["x-api-key"] = api_key
    base = (deployment.base_url or DEFAULT_BASE_URL).rstrip("/")
    url = base + ("/messages" if base.endswith("/v1") else "/v1/messages")
    return UpstreamRequest(url=url, headers=headers, body=orjson.dumps(body), stream=request.stream), ctx


def upstream_headers(request: Request, deployment: Deployment) -> dict[str, str]:
    """``content-type``, ``anthropic-version`` and ``anthropic-beta`` for ``deployment``, then
    its other ``quirks.extra_headers`` (names lower-cased).

    * ``anthropic-version``: the client's (``request.anthropic_version``, already admitted by
      the config's list in the target layer), else the deployment's ``extra_headers`` value,
      else ``2023-06-01``.
    * ``anthropic-beta``: the union of the deployment's configured betas and the client's
      (``request.anthropic_betas``, already filtered by the config's allow/deny list), the
      deployment's first, each once; absent when both are empty.
    * the client's headers the config forwards (``request.anthropic_headers``: Claude Code's
      ``x-claude-code-session-id``, ``x-app``), under the deployment's own ``extra_headers``.

    Reference: https://docs.anthropic.com/en/api/versioning and
    https://docs.anthropic.com/en/api/beta-headers. Never raises."""
    configured_headers = deployment.quirks.extra_headers
    if (
        not configured_headers
        and not request.anthropic_betas
        and request.anthropic_version is None
        and not request.anthropic_headers
    ):
        return {"content-type": "application/json", "anthropic-version": ANTHROPIC_VERSION}
    extra = {k.lower(): v for k, v in configured_headers.items()}
    version = request.anthropic_version or extra.pop("anthropic-version", None) or ANTHROPIC_VERSION
    extra.pop("anthropic-version", None)
    headers = {"content-type": "application/json", "anthropic-version": version}
    configured = extra.pop("anthropic-beta", "")
    if configured or request.anthropic_betas:
        betas = [b.strip() for b in configured.split(",") if b.strip()]
        betas.extend(b for b in request.anthropic_betas if b not in betas)
        if betas:
            headers["anthropic-beta"] = ",".join(dict.fromkeys(betas))
    headers.update(request.anthropic_headers)
    headers.update(extra)
    return headers


def parse_response(body: bytes, ctx: CallContext) -> Response:
    """A non-streaming Messages body -> :class:`Response` (see :func:`from_wire_response`)."""
    obj = wire_common.loads_object(body, what="message", deployment=ctx.deployment.name)
    return from_wire_response(obj, ctx)


def new_stream_parser(ctx: CallContext) -> StreamParser:
    """A fresh :class:`gateway.providers.anthropic_stream.AnthropicStreamParser`."""
    return AnthropicStreamParser(ctx)


def error_message(status: int, body: bytes) -> str:
    """``error.message`` of ``{"type": "error", "error": {"type", "message"}}``, else the raw
    text."""
    return wire_common.error_message(status, body)


# ---------------------------------------------------------------------------- request


def upstream_id(names: NameMap, id_: str) -> str:
    """The tool-use id sent to Anthropic for client id ``id_`` (``^[a-zA-Z0-9_-]+$``)."""
    return names.ids.get(id_) or names.to_upstream_id(
        id_, ANTHROPIC_ID, None
    )  # a call's id comes back in its result


def upstream_name(names: NameMap, name: str) -> str:
    """The tool name sent to Anthropic for client name ``name`` (``^[a-zA-Z0-9_-]{1,64}$``)."""
    return names.names.get(name) or names.to_upstream_name(name, TOOL_NAME, 64)


# Parts and messages are told apart by exact class (``type(x) is C``): models are never
# subclassed, and isinstance on a pydantic model goes through ABCMeta (several times slower,
# and this runs for every part of every message of every call).


def _blank(text: str) -> bool:
    return not text.strip()


def _with_cache(block: dict[str, Any], cache_control: dict[str, Any] | None) -> dict[str, Any]:
    if cache_control is not None:
        block["cache_control"] = cache_control
    return block


def _text_block(part: TextPart) -> dict[str, Any] | None:
    text = part.text
    if not text or text.isspace():  # blank: Anthropic rejects it
        return None
    if part.cache_control is None and part.citations is None:
        return {"type": "text", "text": text}
    block: dict[str, Any] = {"type": "text", "text": text}
    if part.citations is not None:
        block["citations"] = part.citations
    return _with_cache(block, part.cache_control)


def image_block(part: ImagePart) -> dict[str, Any]:
    """An Anthropic ``image`` block: base64 source (data byte-identical; ``data:`` URIs are
    split), Files API ``file`` source, or URL source."""
    source: dict[str, Any]
    if part.data is not None:
        source = {"type": "base64", "media_type": part.media_type or "image/png", "data": part.data}
    elif part.file_id is not None:
        source = {"type": "file", "file_id": part.file_id}
    else:
        url = part.url or ""
        split = wire_common.split_data_uri(url)
        if split is not None:
            source = {"type": "base64", "media_type": split[0], "data": split[1]}
        else:
            source = {"type": "url", "url": url}
    block: dict[str, Any] = {"type": "image", "source": source}
    if part.transformations is not None:  # an Anthropic client's own, verbatim
        block["transformations"] = part.transformations
    return _with_cache(block, part.cache_control)


def _check_image(deployment: Deployment, where: str, what: str) -> None:
    if not deployment.supports_images:
        raise CapabilityError(
            f"{what} ({where}) contains an image, which deployment {deployment.name!r} "
            f"(model {deployment.model}) cannot take",
            param=where,
        )


def _where(msg: Any, i: int) -> str:
    return msg.src or f"messages[{i}]"


def _media_blocks(
    msg: UserMessage | ToolResultMessage, deployment: Deployment, i: int, what: str
) -> list[dict[str, Any]]:
    """The text and image blocks of a user message or tool result (blank text dropped)."""
    out: list[dict[str, Any]] = []
    for part in msg.content:
        if type(part) is TextPart:
            block = _text_block(part)
            if block is not None:
                out.append(block)
        elif type(part) is ImagePart:
            if not deployment.supports_images:
                _check_image(deployment, _where(msg, i), what)
            out.append(image_block(part))
        elif type(part) is DocumentPart:
            out.append(media_wire.anthropic_document(part))
        elif type(part) is AudioPart:
            raise media_wire.refuse(part, deployment, "cannot take audio")
        elif type(part) is NativePart and part.api == API:
            out.append(part.block)  # a tool_reference block (tool search), verbatim
    return out


def _tool_result_block(
    msg: ToolResultMessage, deployment: Deployment, names: NameMap, i: int
) -> dict[str, Any]:
    content = _media_blocks(msg, deployment, i, f"the tool result for tool call {msg.tool_call_id!r}")
    out: dict[str, Any] = {"type": "tool_result", "tool_use_id": upstream_id(names, msg.tool_call_id)}
    if content:
        out["content"] = content
    if msg.is_error:
        out["is_error"] = True
    if msg.toolset_name is not None:
        out["toolset_name"] = msg.toolset_name
    return _with_cache(out, msg.cache_control)


def _assistant_blocks(msg: AssistantMessage, names: NameMap) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for part in msg.content:
        if type(part) is TextPart:
            block = _text_block(part)
            if block is not None:
                out.append(block)
        elif type(part) is ToolCallPart:
            block = {
                "type": "tool_use",
                "id": upstream_id(names, part.id),
                "name": upstream_name(names, part.name),
                "input": part.arguments,
            }
            if part.caller is not None:  # programmatic tool calling: the code that made the call
                block["caller"] = part.caller
            if part.toolset_name is not None:
                block["toolset_name"] = part.toolset_name
            out.append(_with_cache(block, part.cache_control))
        elif type(part) is ThinkingPart:
            if part.signature:
                out.append({"type": "thinking", "thinking": part.text, "signature": part.signature})
        elif type(part) is RedactedThinkingPart:
            out.append({"type": "redacted_thinking", "data": part.data})
        elif type(part) is NativePart and part.api == API:
            out.append(part.block)  # a server tool call or result, verbatim
    return out


def _messages(
    request: Request, deployment: Deployment, names: NameMap
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``(system blocks, messages)``: the system messages before the first other message make
    the top-level ``system``; a later one stays in place as a ``role: system`` message (module
    docstring). A message the client sent with keys of its own besides role and content
    (``_message_fields``) gets them back, and stays in place even when it leads. Turns are
    ``[role, results, others, own keys]`` while merging; messages with different own keys are
    not merged."""
    system: list[dict[str, Any]] = []
    turns: list[tuple[str, list[dict[str, Any]], list[dict[str, Any]], dict[str, Any] | None]] = []
    for i, msg in enumerate(request.messages):
        results: list[dict[str, Any]] = []
        others: list[dict[str, Any]] = []
        own = msg.own.keys or None if msg.own is not None and msg.own.api == API else None
        if type(msg) is SystemMessage:
            blocks = [b for b in (_text_block(p) for p in msg.content) if b is not None]
            if not turns and own is None:
                system.extend(blocks)
                continue
            role, others = "system", blocks
        elif type(msg) is AssistantMessage:
            role, others = "assistant", _assistant_blocks(msg, names)
        elif type(msg) is ToolResultMessage:
            role, results = "user", [_tool_result_block(msg, deployment, names, i)]
        elif type(msg) is UserMessage:
            role, others = "user", _media_blocks(msg, deployment, i, "the user message")
        else:
            continue
        if not results and not others and own is None:
            continue
        if turns and turns[-1][0] == role and turns[-1][3] == own:
            turns[-1][1].extend(results)
            turns[-1][2].extend(others)
        else:
            turns.append((role, results, others, own))
    return system, [
        {"role": role, "content": results + others, **(own or {})} for role, results, others, own in turns
    ]


def _tool_choice(request: Request, names: NameMap) -> dict[str, Any] | None:
    tc = request.tool_choice
    if tc is None:
        return None
    out: dict[str, Any]
    if tc.mode == "auto":
        out = {"type": "auto"}
    elif tc.mode == "none":
        return {"type": "none"}
    elif tc.mode == "required" or not tc.name:
        out = {"type": "any"}
    else:
        out = {"type": "tool", "name": upstream_name(names, tc.name)}
    if tc.parallel is False:
        out["disable_parallel_tool_use"] = True
    return out


def thinking_budget(request: Request) -> int:
    """The ``budget_tokens`` sent for ``request.thinking`` (rule in the module docstring)."""
    cfg = request.thinking
    budget = None
    if cfg is not None:
        budget = cfg.budget_tokens
        if budget is None and cfg.effort is not None:
            budget = EFFORT_BUDGETS[cfg.effort]
    return max(budget or MIN_THINKING_BUDGET, MIN_THINKING_BUDGET)


def output_budget(request: Request, deployment: Deployment) -> int:
    """The ``max_tokens`` sent for ``request`` (tokens; rule in the module docstring: the
    request's, else the deployment's, else :data:`DEFAULT_MAX_TOKENS`, plus the thinking budget
    when that would not fit below it). Anthropic counts thinking inside ``max_tokens``."""
    max_tokens = request.max_output_tokens or deployment.max_output_tokens or DEFAULT_MAX_TOKENS
    cfg = request.thinking
    if cfg is not None and deployment.supports_thinking and cfg.enabled and not _client_thinking(request):
        budget = thinking_budget(request)
        if budget >= max_tokens:
            return budget + max_tokens
    return max_tokens


def _client_thinking(request: Request) -> bool:
    """Whether an Anthropic client's own ``thinking`` or ``output_config.effort`` is carried
    verbatim (``request.native`` of this API), instead of a budget computed here."""
    native = request.native
    return (
        native is not None
        and native.api == API
        and ("thinking" in native.fields or "output_config" in native.fields)
    )


def _thinking(request: Request, deployment: Deployment, body: dict[str, Any]) -> None:
    """Set ``body["thinking"]``: ``disabled`` when the request (or the thinking policy) turned
    thinking off; the Anthropic client's own ``thinking`` verbatim (``adaptive``, ``display``,
    its budget) when it sent one; nothing when it sent only ``output_config.effort`` (the model's
    default thinking applies, as for the client); else ``enabled`` with :func:`thinking_budget`."""
    cfg = request.thinking
    if cfg is None or not deployment.supports_thinking:
        return
    if not cfg.enabled:
        body["thinking"] = {"type": "disabled"}
    elif _client_thinking(request):
        own = request.native.fields.get("thinking") if request.native is not None else None
        if own is not None:
            body["thinking"] = own
    else:
        body["thinking"] = {"type": "enabled", "budget_tokens": thinking_budget(request)}


def merge_native(body: dict[str, Any], fields: dict[str, Any], names: NameMap) -> None:
    """Lay an Anthropic client's own fields (``NativeFields.fields``) over ``body``: ``thinking``
    is already placed (:func:`_thinking`), ``output_config`` keys are added to that object,
    ``tool_fields`` (client tool name -> keys such as ``defer_loading``) set on the tool of that
    name, ``server_tools`` (server tool definitions, ``web_search_20250305``) put into
    ``tools`` as sent, each at the client's place for it (``server_tool_at``), any other
    top-level key (``cache_control``, ``service_tier``, ``speed``, ``context_management``,
    ``container``, ``mcp_servers``) set as sent."""
    for key, value in fields.items():
        if key == "thinking":  # placed already (_thinking)
            continue
        if key == "output_config":
            body["output_config"] = {**body.get("output_config", {}), **value}
        elif key == "tool_fields":
            by_name = {upstream_name(names, n): f for n, f in value.items()}
            for tool in body.get("tools", ()):
                extra = by_name.get(tool.get("name"))
                if extra:
                    tool.update(extra)
        elif key == "server_tools":
            tools = body.setdefault("tools", [])
            for at, tool in zip(fields.get(SERVER_TOOL_AT) or (), value, strict=False):
                tools.insert(at, tool)  # the client's place for it (ascending: earlier ones are in)
            tools.extend(value[len(fields.get(SERVER_TOOL_AT) or ()) :])
        elif key == SERVER_TOOL_AT:
            continue
        else:
            body[key] = value


def to_wire_body(request: Request, deployment: Deployment, names: NameMap) -> dict[str, Any]:
    """The Messages JSON body (a dict) for ``request`` on ``deployment``; fills ``names`` with
    the rewrites applied. Raises :class:`CapabilityError` for images the deployment cannot
    take."""
    system, messages = _messages(request, deployment, names)
    body: dict[str, Any] = {"model": deployment.model, "max_tokens": output_budget(request, deployment)}
    if system:
        body["system"] = system
    body["messages"] = messages
    native = request.native
    if request.tools or (native is not None and native.api == API and "server_tools" in native.fields):
        tools = []
        for t in request.tools:
            tool: dict[str, Any] = {"name": upstream_name(names, t.name)}
            if t.description is not None:
                tool["description"] = t.description
            tool["input_schema"] = t.parameters
            if t.strict:
                strict = strict_input_schema(t.parameters, deployment)
                if strict is not None:
                    tool["input_schema"], tool["strict"] = strict, True
            tools.append(_with_cache(tool, t.cache_control))
        body["tools"] = tools
        choice = _tool_choice(request, names)
        if choice is not None:
            body["tool_choice"] = choice
    _thinking(request, deployment, body)
    if request.temperature is not None:
        body["temperature"] = request.temperature
    if request.top_p is not None:
        body["top_p"] = request.top_p
    if request.top_k is not None:
        body["top_k"] = request.top_k
    if request.stop:
        body["stop_sequences"] = list(request.stop)
    if request.user:
        body["metadata"] = {"user_id": request.user}
    if request.stream:
        body["stream"] = True
    if native is not None and native.api == API:
        merge_native(body, native.fields, names)
    return body


# ---------------------------------------------------------------------------- response


def usage_fields(u: dict[str, Any] | None) -> dict[str, int]:
    """The :class:`Usage` fields (tokens) of an Anthropic ``usage`` object, as a dict; rules
    in :func:`usage_from_wire`."""
    u = u or {}
    int_field = wire_common.int_field
    return {
        "input_tokens": int_field(u, "input_tokens") or 0,
        "output_tokens": int_field(u, "output_tokens") or 0,
        "cache_read_tokens": int_field(u, "cache_read_input_tokens") or 0,
        "cache_write_tokens": int_field(u, "cache_creation_input_tokens") or 0,
    }


def usage_from_wire(u: dict[str, Any] | None) -> Usage:
    """Anthropic ``usage`` -> :class:`Usage` (tokens): ``input_tokens`` (already excludes
    cache reads and writes), ``cache_creation_input_tokens`` -> cache_write,
    ``cache_read_input_tokens`` -> cache_read, ``output_tokens``. The per-TTL
    ``cache_creation`` breakdown and ``server_tool_use`` counts are ignored."""
    return Usage.model_validate(usage_fields(u))


def from_wire_response(obj: dict[str, Any], ctx: CallContext) -> Response:
    """A decoded Messages response object -> :class:`Response`.

    ``text`` (empty ones skipped), ``thinking`` (signature byte-identical, provenance of the
    deployment), ``redacted_thinking`` and ``tool_use`` blocks become parts; ``tool_use.input``
    is kept as the arguments object and as compact JSON text in ``raw_arguments``; ids and names
    are mapped back through ``ctx.names``. The server's own tool calls and results
    (``server_tool_use``, ``*_tool_result``, ``mcp_tool_use``/``mcp_tool_result``) become
    :class:`gateway.schema.NativePart` parts, the block verbatim. A call of the structured-output tool
    (``ctx.output_tool``) becomes a text part of its JSON
    (:func:`gateway.providers.anthropic_output.map_back_parts`). The answer is assembled as
    plain dicts and validated once (:func:`gateway.providers.wire_common.validate_response`). Raises
    :class:`UpstreamProtocolError` for an error object, a body without ``content`` or a
    thinking ``signature`` that is not a string, :class:`UnknownStopReason` for an unknown
    stop reason.
    """
    dep = ctx.deployment
    if obj.get("type") == "error":
        raise UpstreamProtocolError(
            f"upstream answered 200 with an error: {wire_common.as_dict(obj.get('error')).get('message')}",
            deployment=dep.name,
        )
    content = obj.get("content")
    if not isinstance(content, list):
        raise UpstreamProtocolError("Anthropic message without a content list", deployment=dep.name)
    parts: list[dict[str, Any]] = []
    for i, block in enumerate(content):
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            text = block.get("text")
            if text:
                part = {"type": "text", "text": text if isinstance(text, str) else str(text)}
                if isinstance(block.get("citations"), list):
                    part["citations"] = block["citations"]
                parts.append(part)
        elif kind == "thinking":
            signature = block.get("signature") or None
            if signature is not None and not isinstance(signature, str):
                raise UpstreamProtocolError(
                    f"Anthropic message content[{i}].signature is not a string", deployment=dep.name
                )
            parts.append(
                {
                    "type": "thinking",
                    "text": str(block.get("thinking") or ""),
                    "signature": signature,
                    "provenance": provenance(dep),
                }
            )
        elif kind == "redacted_thinking":
            parts.append(
                {
                    "type": "redacted_thinking",
                    "data": str(block.get("data") or ""),
                    "provenance": provenance(dep),
                }
            )
        elif kind == "tool_use":
            args = block.get("input")
            args = args if isinstance(args, dict) else {}
            call = {
                "type": "tool_call",
                "id": ctx.names.from_upstream_id(str(block.get("id") or "")),
                "name": ctx.names.from_upstream_name(str(block.get("name") or "")),
                "arguments": args,
                "raw_arguments": wire_common.dumps_arguments(args),
            }
            caller = block.get("caller")
            if isinstance(caller, dict):
                call["caller"] = caller
            toolset = block.get("toolset_name")
            if isinstance(toolset, str):
                call["toolset_name"] = toolset
            parts.append(call)
        elif isinstance(kind, str) and is_server_block(kind):
            parts.append({"type": "native", "api": API, "block": block})
    usage = obj.get("usage")
    stop = obj.get("stop_reason")
    if ctx.output_tool is not None:
        stop = map_back_parts(parts, ctx, stop)
    data = {
        "id": str(obj.get("id") or ""),
        "model": str(obj.get("model") or dep.model),
        "message": {"content": parts},
        "stop_reason": map_stop_reason(stop),
        "usage": usage_fields(usage if isinstance(usage, dict) else None),
    }
    return wire_common.validate_response(data, what="message", deployment=dep.name)
