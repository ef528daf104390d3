"""Small helpers shared by the wire modules (``openai_chat``, ``anthropic_messages``, and the
adapters that reuse them): JSON decoding with protocol errors, tool-argument parsing, data-URI
splitting, error-body message extraction and the one validation of an assembled answer."""

from __future__ import annotations

import hashlib
import re
from typing import Any

import orjson
from pydantic import ValidationError

from gateway.errors import UpstreamProtocolError
from gateway.schema import Response, ResponseFormat, ThinkingConfig, ToolDefinition, freeform_note

_DATA_URI = re.compile(r"^data:([^;,]+)?((?:;[^;,]+)*);base64,(.*)$", re.DOTALL)


def described_schema(fmt: ResponseFormat) -> dict[str, Any] | None:
    """``fmt``'s JSON Schema for a target with no slot for the format's ``description``: the
    description becomes the root schema's own ``description`` when the schema has none (a copy;
    ``fmt`` is unchanged). None when ``fmt`` has no schema."""
    schema = fmt.schema_
    if schema is None or fmt.description is None or "description" in schema:
        return schema
    return {**schema, "description": fmt.description}


def openai_strict_ok(schema: Any) -> bool:
    """Whether JSON Schema ``schema`` meets OpenAI's strict structured-output rules
    (https://platform.openai.com/docs/guides/structured-outputs#supported-schemas): every object
    has ``additionalProperties: false`` and lists each of its properties in ``required``
    (checked through ``properties``, ``items``, ``anyOf`` and ``$defs`` / ``definitions``)."""
    if type(schema) is not dict:
        return True
    props = schema.get("properties")
    if schema.get("type") == "object" or props is not None:
        if schema.get("additionalProperties") is not False:
            return False
        if props and set(schema.get("required") or ()) != set(props):
            return False
    children: list[Any] = list((props or {}).values())
    for key in ("$defs", "definitions"):
        children += list((schema.get(key) or {}).values())
    children += list(schema.get("anyOf") or ())
    if "items" in schema:
        children.append(schema["items"])
    return all(openai_strict_ok(c) for c in children)


def openai_strict(fmt: ResponseFormat) -> bool | None:
    """The ``strict`` an OpenAI upstream is sent for ``fmt``: the client's, else ``True`` for a
    dialect whose structured output is always strict when the schema meets OpenAI's strict rules
    (:attr:`gateway.schema.ResponseFormat.dialect_strict`), else None (not sent)."""
    if fmt.strict is not None:
        return fmt.strict
    if fmt.dialect_strict and openai_strict_ok(fmt.schema_):
        return True
    return None


def native_description(tool: ToolDefinition) -> str | None:
    """A free-form tool's own description: without the grammar note the edge appended for the
    emulation (:func:`gateway.schema.freeform_note`), which a native ``format`` states (a
    Responses or Chat ``custom`` tool)."""
    note = freeform_note(tool.freeform)
    text = tool.description
    if note and text is not None:
        if text == note:
            return None
        text = text.removesuffix("\n\n" + note)
    return text


_NO_NONE_EFFORT = re.compile(r"^(?:.*/)?(?:(o\d)|(gpt-5)(?:-[a-z]|$))")
"""OpenAI reasoning models that take no ``none`` effort: the o-series (``low`` at least) and the
first gpt-5 family (``gpt-5``, ``gpt-5-mini``, ``gpt-5-nano``, ``gpt-5-codex``: ``minimal`` at
least); ``none`` came with gpt-5.1 (OpenAI's reasoning guide, "Reasoning effort")."""


def openai_effort(thinking: ThinkingConfig, model: str = "") -> str:
    """The OpenAI reasoning effort (Chat ``reasoning_effort``, Responses ``reasoning.effort``)
    for a thinking request of another dialect: its effort; a budget alone (an Anthropic
    ``budget_tokens``, a Gemini ``thinkingBudget``, in tokens) < 4096 ``low``, < 16384
    ``medium``, else ``high``; no budget (Gemini's dynamic ``-1``) ``medium``, OpenAI's default;
    thinking off (Anthropic ``disabled``, ``thinkingBudget: 0``) ``none``, the API's own value
    for no reasoning (``openai.types.shared.ReasoningEffort``) — or, for a ``model`` that has no
    ``none`` (:data:`_NO_NONE_EFFORT`), its least: ``minimal`` (gpt-5) or ``low`` (o-series)."""
    if not thinking.enabled:
        found = _NO_NONE_EFFORT.match(model.lower())
        if found is None:
            return "none"
        return "low" if found.group(1) else "minimal"
    if thinking.effort:
        return thinking.effort
    budget = thinking.budget_tokens
    if budget is None:
        return "medium"
    return "low" if budget < 4096 else "medium" if budget < 16384 else "high"


ERROR_PREFIX = "Error: "
"""What a failed tool result's text starts with toward a wire API that has no error flag on
tool results (OpenAI Chat ``role: tool`` messages, Responses ``function_call_output``): the
model still reads that the call failed (Anthropic ``is_error``, Gemini ``{"error": ...}``)."""


def mark_error(wire: dict[str, Any], key: str) -> None:
    """Mark the failed tool result ``wire`` (an OpenAI Chat tool message or a Responses call
    output) as one: :data:`ERROR_PREFIX` before its text (``wire[key]``: a string, or parts
    whose first text part gets it; a text part is added when there is none), unless the text
    already starts with it."""
    content = wire.get(key)
    if type(content) is str or content is None:
        text = content or ""
        if not text.startswith(ERROR_PREFIX):
            wire[key] = ERROR_PREFIX + text if text else ERROR_PREFIX.strip()
        return
    kinds = ("text", "input_text")
    first = next((p for p in content if p.get("type") in kinds), None)
    if first is None:
        content.insert(
            0, {"type": "text" if key == "content" else "input_text", "text": ERROR_PREFIX.strip()}
        )
    elif not first["text"].startswith(ERROR_PREFIX):
        first["text"] = ERROR_PREFIX + first["text"]


def loads_json(body: bytes | str, *, what: str, deployment: str | None = None) -> Any:
    """Decode JSON ``body``; raise :class:`UpstreamProtocolError` (naming ``what``) if it is
    not JSON. Trailing whitespace is accepted."""
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as err:
        text = body.decode("utf-8", errors="replace") if isinstance(body, bytes) else body
        raise UpstreamProtocolError(
            f"upstream sent a {what} that is not valid JSON: {err}", deployment=deployment, body=text[:2000]
        ) from err


def loads_object(body: bytes | str, *, what: str, deployment: str | None = None) -> dict[str, Any]:
    """Like :func:`loads_json` but the value must be a JSON object."""
    obj = loads_json(body, what=what, deployment=deployment)
    if not isinstance(obj, dict):
        raise UpstreamProtocolError(
            f"upstream sent a {what} that is not a JSON object", deployment=deployment
        )
    return obj


def parse_arguments(raw: str) -> dict[str, Any]:
    """The tool-call arguments object inside ``raw`` (a JSON string), or ``{}`` when ``raw`` is
    not valid JSON or not an object. ``raw`` itself is always kept by the caller, byte-exact;
    the truncation guard decides what an unparseable string means."""
    if not raw:
        return {}
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def dumps_arguments(value: Any) -> str:
    """Compact JSON text of an arguments value received as an object (Anthropic ``input``).
    A value orjson cannot encode (nested past its 254 levels: a hostile upstream) is written by
    the standard library instead, so the truncation guard sees it and withholds the call
    (:data:`gateway.guards.truncation.DEEP_REASON`) rather than the reader failing."""
    try:
        return orjson.dumps(value).decode("utf-8")
    except TypeError:  # orjson.JSONEncodeError ("Recursion limit reached") is a TypeError
        import json

        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def split_data_uri(url: str) -> tuple[str, str] | None:
    """``(media_type, base64 data)`` of a ``data:<type>;base64,<data>`` URI, else None.
    The data is returned byte-identical."""
    m = _DATA_URI.match(url)
    if not m:
        return None
    return (m.group(1) or "application/octet-stream", m.group(3))


def synth_id(prefix: str, seed: str, n: int) -> str:
    """A deterministic id ``<prefix>_<hash of seed>_<n>`` for upstream items that carry none
    (legacy OpenAI ``function_call``, tool-call deltas without ``id``)."""
    return f"{prefix}_{hashlib.sha256(seed.encode('utf-8')).hexdigest()[:12]}_{n}"


def error_message(status: int, body: bytes) -> str:
    """The human message in an upstream error body.

    Shapes understood: ``{"error": {"message": ...}}`` (OpenAI, Anthropic, OpenRouter),
    ``{"error": "..."}`` (llama.cpp, Ollama), ``{"message": ...}`` and ``{"detail": ...}``
    (vLLM/FastAPI). Otherwise the raw text (cut to 2000 characters), or ``HTTP <status>`` when
    the body is empty.
    """
    text = body.decode("utf-8", errors="replace").strip()
    try:
        obj = orjson.loads(body) if text else None
    except orjson.JSONDecodeError:
        obj = None
    if isinstance(obj, dict):
        err = obj.get("error")
        if isinstance(err, dict) and isinstance(err.get("message"), str) and err["message"]:
            return str(err["message"])
        if isinstance(err, str) and err:
            return err
        for key in ("message", "detail"):
            val = obj.get(key)
            if isinstance(val, str) and val:
                return val
            if val:
                return orjson.dumps(val).decode("utf-8")[:2000]
    return text[:2000] if text else f"HTTP {status}"


MAX_COUNT = 2**53
"""The largest token count read from an answer: larger (or negative) counts are nonsense that
would overflow the answer's JSON (orjson: 64 bits) and the transcript's INTEGER columns."""


def int_field(obj: dict[str, Any] | None, key: str) -> int | None:
    """``obj[key]`` as an int when it is a count (a number from 0 to :data:`MAX_COUNT`), else
    None (missing, null, not a number, negative or out of range)."""
    if not obj:
        return None
    val = obj.get(key)
    if type(val) is int:  # the common case
        return val if 0 <= val <= MAX_COUNT else None
    if isinstance(val, bool) or not isinstance(val, (int, float)):
        return None
    return int(val) if 0 <= val <= MAX_COUNT else None


def as_dict(value: Any) -> dict[str, Any]:
    """``value`` if it is a JSON object, else an empty dict (for optional wire fields)."""
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    """``value`` if it is a JSON array, else an empty list (for optional wire fields)."""
    return value if isinstance(value, list) else []


def validate_response(data: dict[str, Any], *, what: str, deployment: str | None = None) -> Response:
    """``Response.model_validate(data)``: the one validation of an answer a wire module has
    assembled as plain dicts and lists in the schema's shape (parts with their ``type`` key).

    The wire modules coerce or check every field they read, so validation is not expected to
    fail; if it does, the :class:`pydantic.ValidationError` becomes an
    :class:`UpstreamProtocolError` naming ``what`` and the field's location in the answer
    (internal names: ``message.content.2.signature``), never an unhandled error.
    """
    try:
        # what Response.model_validate(data) runs, without its Python wrapper
        return Response.__pydantic_validator__.validate_python(data)  # type: ignore[no-any-return]
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        loc = ".".join(str(k) for k in err["loc"])
        raise UpstreamProtocolError(
            f"upstream sent a {what} with an invalid {loc or 'body'}: {err['msg']}", deployment=deployment
        ) from None
