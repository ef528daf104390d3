"""Internal :class:`~gateway.schema.Request` -> Gemini ``generateContent`` request body.

Shape (ai.google.dev/api/generate-content#request-body)::

    {"systemInstruction": {"parts": [{"text": ...}]},
     "contents": [{"role": "user" | "model", "parts": [...]}],
     "tools": [{"functionDeclarations": [{"name", "description", "parameters"}]}],
     "toolConfig": {"functionCallingConfig": {"mode": "AUTO" | "ANY" | "NONE",
                                              "allowedFunctionNames": [...]}},
     "generationConfig": {"maxOutputTokens", "temperature", "topP", "topK", "stopSequences",
                          "seed", "presencePenalty", "frequencyPenalty",
                          "responseMimeType", "responseJsonSchema" | "responseSchema",
                          "thinkingConfig": {"thinkingBudget" | "thinkingLevel", "includeThoughts"}}}

Decisions (each documented where it is made):

* The system messages before the first other message are joined into ``systemInstruction``
  (Gemini has one slot, and no system role in ``contents``). A later one (a mid-conversation
  system prompt) stays in place: a ``user`` turn's text part ``<system_note>\n{text}\n
  </system_note>`` where it was (merged into a neighbouring user turn), so the prefix before
  it is unchanged and its position tells the model when it was given.
* Consecutive contents of the same role are merged into one turn.
* Tool results are paired to their call by id only. Gemini pairs ``functionResponse`` to
  ``functionCall`` by *name* (and by ``id`` when present), so the name comes from the matching
  call in an earlier assistant message (or ``ToolResultMessage.name``). A run of results
  becomes one user turn whose ``functionResponse`` parts follow the order of the calls in the
  preceding model turn, whatever order the client sent them in; images in results follow the
  ``functionResponse`` parts as ``inlineData``/``fileData`` parts of the same turn.
* ``functionResponse.response`` is ``{"output": text}`` or, for an error result,
  ``{"error": text}`` (the keys Google's ``FunctionResponse.response`` documents); a Gemini
  client's own ``response`` object, when it was another (``{"temp": 21}``), is sent as it was
  (the tool result's ``own`` of this API: ``{"response": {...}}``).
* ``cache_control`` markers are not sent: Gemini caches implicitly or via ``cachedContents``.
* ``ToolChoice.parallel`` has no Gemini equivalent and is not sent; ``request.user`` and
  ``metadata`` have no slot either.
* ``request.native`` of the ``gemini`` API (a Gemini client's ``safetySettings``, built-in
  tools, ``generationConfig`` keys without a schema field, and its own form of fields the
  schema also carries: ``thinkingConfig``, ``responseSchema`` / ``responseJsonSchema``,
  ``functionCallingConfig.mode: VALIDATED``) is laid over the body as the client sent it:
  :func:`merge_native`.
"""

from __future__ import annotations

import base64
import binascii
import mimetypes
from typing import Any

from gateway.config import Deployment
from gateway.errors import CapabilityError, InvalidRequest
from gateway.providers import media_wire, wire_common
from gateway.providers.gemini_common import (
    API,
    SKIP_SIGNATURE_SENTINEL,
    is_gemini3,
    is_gemini_signed,
)
from gateway.providers.gemini_models import fit_budget, model_family
from gateway.providers.gemini_schema import function_declaration, to_gemini_schema
from gateway.providers.naming import NameMap
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
    ToolResultMessage,
    UserMessage,
)

# Budgets used when the client gives only a coarse effort (tokens); our choice, not Google's.
_EFFORT_BUDGET = {"minimal": 512, "low": 1024, "medium": 8192, "high": 24576}


def image_part(part: ImagePart, src: str | None) -> dict[str, Any]:
    """An :class:`ImagePart` as a Gemini part.

    Base64 data -> ``inlineData {mimeType, data}``; a ``data:`` URL is decoded into the same;
    any other URL -> ``fileData {fileUri, mimeType}`` (Gemini fetches ``gs://``, Files API and
    public HTTP URLs). ``mimeType`` is required by Gemini: when neither the part nor the URL's
    file extension gives one, :class:`CapabilityError` is raised (HTTP 400 naming ``src``).
    """
    if part.data is not None:
        if not part.media_type:
            raise CapabilityError("Gemini needs a media type for inline image data", param=src)
        return {"inlineData": {"mimeType": part.media_type, "data": part.data}}
    url = part.url or ""
    if url.startswith("data:"):
        header, _, payload = url.partition(",")
        media = header[5:].split(";", 1)[0] or part.media_type
        if ";base64" not in header or not media:
            raise CapabilityError("image data URL must be base64 with a media type", param=src)
        try:
            base64.b64decode(payload, validate=True)
        except (binascii.Error, ValueError) as err:
            raise CapabilityError(f"image data URL is not valid base64: {err}", param=src) from err
        return {"inlineData": {"mimeType": media, "data": payload}}
    media_type = part.media_type or mimetypes.guess_type(url.split("?", 1)[0])[0]
    if not media_type:
        raise CapabilityError(
            "Gemini needs the media type of an image URL; give media_type or a URL with a file extension",
            param=src,
        )
    return {"fileData": {"fileUri": url, "mimeType": media_type}}


class _Contents:
    """Accumulates ``contents`` turns, merging consecutive turns of one role."""

    def __init__(self) -> None:
        self.turns: list[dict[str, Any]] = []

    def add(self, role: str, parts: list[dict[str, Any]]) -> None:
        if not parts:
            return
        if self.turns and self.turns[-1]["role"] == role:
            self.turns[-1]["parts"].extend(parts)
        else:
            self.turns.append({"role": role, "parts": parts})


def _model_parts(msg: AssistantMessage, names: NameMap, gemini3: bool) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    last_from_text = False
    for part in msg.content:
        from_text = False
        if isinstance(part, TextPart):
            if part.text:
                parts.append({"text": part.text})
                from_text = True
        elif isinstance(part, ThinkingPart):
            # Thinking signed by another API never goes to Gemini (the pipeline applies the
            # foreign-thinking policy before this point; here it is dropped as a last resort).
            if not is_gemini_signed(part.provenance):
                pass
            elif (
                part.text == "" and part.signature and last_from_text and "thoughtSignature" not in parts[-1]
            ):
                # A signature Gemini sent on a text part travels as an empty signed thinking part
                # right after that text (see gemini_stream); it goes back onto the text part.
                parts[-1]["thoughtSignature"] = part.signature
            else:
                out: dict[str, Any] = {"text": part.text, "thought": True}
                if part.signature:
                    out["thoughtSignature"] = part.signature
                parts.append(out)
        elif isinstance(part, ToolCallPart):
            call: dict[str, Any] = {"name": names.to_upstream_name(part.name), "args": part.arguments}
            if part.id:
                call["id"] = part.id
            fc: dict[str, Any] = {"functionCall": call}
            if part.signature and is_gemini_signed(part.provenance):
                fc["thoughtSignature"] = part.signature
            parts.append(fc)
        elif isinstance(part, RedactedThinkingPart):
            pass  # Anthropic-only encrypted reasoning: Gemini cannot read it.
        last_from_text = from_text
    if gemini3:
        calls = [p for p in parts if "functionCall" in p]
        if calls and not any("thoughtSignature" in p for p in calls):
            # History that lost its signature (e.g. an OpenAI-dialect client): Gemini 3 would
            # answer 400, Google documents this sentinel for exactly this case.
            calls[0]["thoughtSignature"] = SKIP_SIGNATURE_SENTINEL
    return parts


def _result_parts(
    results: list[ToolResultMessage],
    call_order: list[str],
    call_names: dict[str, str],
    names: NameMap,
) -> list[dict[str, Any]]:
    """The parts of one user turn answering the calls ``call_order``; a result holding the
    ``response`` object a Gemini client sent for it (its ``own`` of this API) gets that object
    instead of the text."""
    position = {cid: i for i, cid in enumerate(call_order)}
    ordered = sorted(
        enumerate(results), key=lambda item: (position.get(item[1].tool_call_id, len(position)), item[0])
    )
    responses: list[dict[str, Any]] = []
    media: list[dict[str, Any]] = []
    for _, res in ordered:
        name = call_names.get(res.tool_call_id) or res.name
        if not name:
            raise InvalidRequest(
                f"tool result {res.tool_call_id!r} has no matching tool call, and Gemini needs the tool name",
                param=res.src or "messages",
            )
        text = "\n".join(
            p.text for p in res.content if isinstance(p, TextPart)
        )  # as the OpenAI adapters join them
        media.extend(image_part(p, res.src) for p in res.content if isinstance(p, ImagePart))
        own = res.own
        if own is not None and own.api == API and "response" in own.keys:
            body = own.keys["response"]
        else:
            body = {"error": text} if res.is_error else {"output": text}
        responses.append(
            {
                "functionResponse": {
                    "id": res.tool_call_id,
                    "name": names.to_upstream_name(name),
                    "response": body,
                }
            }
        )
    return responses + media


def _contents(
    request: Request, deployment: Deployment, names: NameMap
) -> tuple[list[str], list[dict[str, Any]]]:
    system: list[str] = []
    contents = _Contents()
    call_names: dict[str, str] = {}
    call_order: list[str] = []
    pending: list[ToolResultMessage] = []
    gemini3 = is_gemini3(deployment.model)

    def flush() -> None:
        if pending:
            contents.add("user", _result_parts(pending, call_order, call_names, names))
            pending.clear()

    for msg in request.messages:
        if isinstance(msg, ToolResultMessage):
            pending.append(msg)
            continue
        flush()
        if isinstance(msg, SystemMessage):
            texts = [p.text for p in msg.content if p.text]
            if not contents.turns:
                system.extend(texts)
            elif texts:
                contents.add("user", [{"text": system_note("\n\n".join(texts))}])
        elif isinstance(msg, UserMessage):
            parts: list[dict[str, Any]] = []
            for i, part in enumerate(msg.content):
                if isinstance(part, TextPart):
                    if part.text:
                        parts.append({"text": part.text})
                elif type(part) is DocumentPart or type(part) is AudioPart:
                    parts.append(media_wire.gemini_media(part, deployment))
                elif type(part) is ImagePart:
                    parts.append(image_part(part, f"{msg.src}.content[{i}]" if msg.src else None))
            contents.add("user", parts)
        elif isinstance(msg, AssistantMessage):
            calls = msg.tool_calls
            if calls:
                call_order = [c.id for c in calls]
            for c in calls:
                call_names[c.id] = c.name
            contents.add("model", _model_parts(msg, names, gemini3))
    flush()
    return system, contents.turns


_NOTE_OPEN, _NOTE_CLOSE = "<system_note>\n", "\n</system_note>"


def system_note(text: str) -> str:
    """A mid-conversation system message's text as a user turn's text part says it."""
    return f"{_NOTE_OPEN}{text}{_NOTE_CLOSE}"


def read_system_note(text: str) -> str | None:
    """The system message text a :func:`system_note` part says, or None for any other text."""
    if text.startswith(_NOTE_OPEN) and text.endswith(_NOTE_CLOSE):
        return text[len(_NOTE_OPEN) : -len(_NOTE_CLOSE)]
    return None


def _thinking_config(request: Request, deployment: Deployment) -> dict[str, Any] | None:
    """``generationConfig.thinkingConfig`` for ``request.thinking`` on ``deployment``'s model,
    by its family's row (:mod:`gateway.providers.gemini_models`): off is ``thinkingBudget: 0``
    where the model can turn thinking off, else nothing; a budget is brought into the model's
    range; an effort is a ``thinkingLevel`` (Gemini 3) or a budget; a model that does not think
    gets nothing."""
    cfg = request.thinking
    if cfg is None:
        return None
    family = model_family(deployment.model)
    if family.thinking == "none":
        return None
    if not cfg.enabled:
        return {"thinkingBudget": 0} if family.can_turn_off else None
    out: dict[str, Any] = {"includeThoughts": True}
    if cfg.budget_tokens is not None:
        budget = cfg.budget_tokens
        out["thinkingBudget"] = fit_budget(family, budget) if family.thinking == "budget" else budget
    elif cfg.effort is not None:
        if family.thinking == "level":
            level = cfg.effort
            if level not in family.levels:  # Gemini 3 Pro knows only "low" and "high".
                level = "low" if level in ("minimal", "low") else "high"
            out["thinkingLevel"] = level
        else:
            out["thinkingBudget"] = fit_budget(family, _EFFORT_BUDGET[cfg.effort])
    return out


def output_budget(request: Request, deployment: Deployment) -> int | None:
    """The ``generationConfig.maxOutputTokens`` sent (tokens): the request's, else the
    deployment's, else None (none is sent). Gemini counts thoughts inside it."""
    return request.max_output_tokens or deployment.max_output_tokens


def _generation_config(request: Request, deployment: Deployment) -> dict[str, Any]:
    gen: dict[str, Any] = {}
    max_tokens = output_budget(request, deployment)
    if max_tokens is not None:
        gen["maxOutputTokens"] = max_tokens
    if request.temperature is not None:
        gen["temperature"] = request.temperature
    if request.top_p is not None:
        gen["topP"] = request.top_p
    if request.top_k is not None:
        gen["topK"] = request.top_k
    if request.seed is not None:
        gen["seed"] = request.seed
    if request.presence_penalty is not None:
        gen["presencePenalty"] = request.presence_penalty
    if request.frequency_penalty is not None:
        gen["frequencyPenalty"] = request.frequency_penalty
    if request.stop:
        gen["stopSequences"] = list(request.stop)
    fmt = request.response_format
    if fmt is not None and fmt.type != "text":
        gen["responseMimeType"] = "application/json"
        schema = wire_common.described_schema(fmt) if fmt.type == "json_schema" else None
        if schema:
            if model_family(deployment.model).json_schema:
                gen["responseJsonSchema"] = schema  # JSON Schema as it is (Gemini 2.5 and later)
            else:
                gen["responseSchema"] = to_gemini_schema(schema)
    thinking = _thinking_config(request, deployment)
    if thinking is not None:
        gen["thinkingConfig"] = thinking
    return gen


def build_body(request: Request, deployment: Deployment, names: NameMap) -> dict[str, Any]:
    """The ``generateContent`` JSON body for ``request`` (see module docstring).

    Tool names are rewritten through ``names`` (a Gemini-rule :class:`NameMap`); tool-call ids
    are passed unchanged as ``functionCall.id`` / ``functionResponse.id``. Raises
    :class:`CapabilityError` for an image Gemini cannot take and :class:`InvalidRequest` for a
    tool result whose tool name cannot be found.
    """
    system, contents = _contents(request, deployment, names)
    body: dict[str, Any] = {"contents": contents}
    if system:
        body["systemInstruction"] = {"parts": [{"text": "\n\n".join(system)}]}
    if request.tools:
        decls = []
        for tool in request.tools:
            decls.append(
                function_declaration(names.to_upstream_name(tool.name), tool.description, tool.parameters)
            )
        body["tools"] = [{"functionDeclarations": decls}]
        choice = request.tool_choice
        if choice is not None:
            mode = {"auto": "AUTO", "none": "NONE", "required": "ANY", "tool": "ANY"}[choice.mode]
            fcc: dict[str, Any] = {"mode": mode}
            if choice.mode == "tool" and choice.name:
                fcc["allowedFunctionNames"] = [names.to_upstream_name(choice.name)]
            body["toolConfig"] = {"functionCallingConfig": fcc}
    gen = _generation_config(request, deployment)
    if gen:
        body["generationConfig"] = gen
    native = request.native
    if native is not None and native.api == "gemini":
        fields = _own_fields(request, native.fields)
        if not model_family(deployment.model).json_schema:
            fields = _without_json_schema(fields)
        merge_native(body, fields)
    return body


def _without_json_schema(fields: dict[str, Any]) -> dict[str, Any]:
    """``fields`` (a Gemini client's own) less ``generationConfig.responseJsonSchema``, for a
    model that takes only ``responseSchema``: it gets the translation instead (the schema's
    response format, converted by :func:`gateway.providers.gemini_schema.to_gemini_schema`)."""
    gen: dict[str, Any] = fields.get("generationConfig") or {}
    if "responseJsonSchema" not in gen:
        return fields
    return {**fields, "generationConfig": {k: v for k, v in gen.items() if k != "responseJsonSchema"}}


def _own_fields(request: Request, fields: dict[str, Any]) -> dict[str, Any]:
    """``fields`` (a Gemini client's own) less its ``thinkingConfig`` when the thinking guard
    turned thinking off for this request (``ThinkingConfig.enabled`` False, repair
    ``thinking_disabled``: :func:`gateway.guards.thinking.apply_thinking_policy`) and the client
    had asked for it: the guard's choice stands over the client's form."""
    gen: dict[str, Any] = fields.get("generationConfig") or {}
    own = gen.get("thinkingConfig")
    off = request.thinking is not None and not request.thinking.enabled
    if type(own) is not dict or not off or own.get("thinkingBudget") == 0:
        return fields
    return {**fields, "generationConfig": {k: v for k, v in gen.items() if k != "thinkingConfig"}}


_NESTED = ("generationConfig", "toolConfig")
_ONE_OF = {"responseSchema": "responseJsonSchema", "responseJsonSchema": "responseSchema"}
"""``generationConfig`` keys Gemini takes one of: the client's replaces the translated other."""


def merge_native(body: dict[str, Any], fields: dict[str, Any]) -> None:
    """Lay a Gemini client's own fields (``NativeFields.fields``) over ``body``: ``tools``
    entries are appended, ``generationConfig`` / ``toolConfig`` keys added to those objects
    (replacing the translated ones: the client's ``thinkingConfig``, its ``responseJsonSchema``
    instead of the translated ``responseSchema``), any other top-level key (``safetySettings``,
    ``labels``) set."""
    for key, value in fields.items():
        if key == "generationConfig":
            gen = body.get(key, {})
            body[key] = {**{k: v for k, v in gen.items() if _ONE_OF.get(k) not in value}, **value}
        elif key == "tools":
            body["tools"] = [*body.get("tools", ()), *value]
        elif key in _NESTED:
            body[key] = {**body.get(key, {}), **value}
        else:
            body[key] = value
