"""Which of the schema's fields that only some wire APIs have a slot for a deployment gets (part
of the target layer; the classes of :mod:`gateway.edges.fidelity`, written out in
``docs/fidelity.md``).

=====================================  ==========================================  ============
field (schema)                         sent by the adapters of                     elsewhere
=====================================  ==========================================  ============
message ``name`` (OpenAI Chat)         ``openai_chat``                             dropped
image ``detail``                       ``openai_chat``, ``openai_responses``       dropped
document ``filename`` (Anthropic       ``openai_chat``, ``openai_responses``,      dropped
``title``)                             ``anthropic_messages``
``seed``                               ``openai_chat``, ``gemini``                 dropped
``top_k`` (Gemini ``topK``)            ``anthropic_messages``, ``gemini``          dropped
``presence_penalty``,                  ``openai_chat``, ``gemini``                 refused
``frequency_penalty``
``user`` (Responses                    ``openai_chat``, ``openai_responses``,      dropped
``safety_identifier``, Anthropic       ``anthropic_messages``
``metadata.user_id``)
``metadata`` (the client's entries)    ``openai_responses``; the client's own      dropped
                                       wire API (verbatim, ``request.native``)
=====================================  ==========================================  ============

*Dropped* is named: one note per field on the turn (``x-turnstile-dropped: name``, the
transcript row; ``values`` are the client locations, first ten), never silent. A participant
name, an image's detail level and a document's title label what the model reads without
changing it, and a seed only asks for best-effort determinism, so the turn is answered without
them; ``top_k`` (Anthropic's and Gemini's sampling cutoff, an OpenAI Chat client's extension)
has no field in either OpenAI API, whose ``top_p`` still applies, so it is dropped and named
too; a sampling penalty changes the answer, so toward an API without one the request is
refused (HTTP 400 naming the field and the model). Gemini's per-part ``mediaResolution`` is
not a translation of ``detail``: it exists for Gemini 3 models only, and its levels are token
budgets of another scale. The keyless ``demo`` stand-in reads none of these and counts as
taking them all (nothing is named for it).

Tool-call arguments in an OpenAI client's history are a string; toward a wire API that takes
them as a JSON object only (Anthropic, Gemini) arguments that are not one are refused by name
(``messages[i].tool_calls[j].function.arguments``), never sent as ``{}``.
"""

from __future__ import annotations

from typing import Any

import orjson

from gateway.client_names import client_name
from gateway.config import Deployment
from gateway.errors import CapabilityError
from gateway.schema import (
    AssistantMessage,
    DocumentPart,
    ImagePart,
    Request,
    SystemMessage,
    TextPart,
    ToolCallPart,
    ToolResultMessage,
    UserMessage,
)

NAME_APIS = frozenset({"openai_chat", "demo"})
DETAIL_APIS = frozenset({"openai_chat", "openai_responses", "demo"})
FILENAME_APIS = frozenset({"openai_chat", "openai_responses", "anthropic_messages", "demo"})
SEED_APIS = frozenset({"openai_chat", "gemini", "demo"})
TOP_K_APIS = frozenset({"anthropic_messages", "gemini", "demo"})
USER_APIS = frozenset({"openai_chat", "openai_responses", "anthropic_messages", "demo"})
METADATA_APIS = frozenset({"openai_responses", "demo"})
_OWN_METADATA = ("_turnstile", "turnstile_")
"""Keys of ``Request.metadata`` the gateway sets itself (never the client's)."""
PENALTY_APIS = SEED_APIS

_MAX_WHERE = 10
"""Locations kept in one note (a long conversation names a participant in every message)."""


def check_fields(request: Request, dep: Deployment, dialect: str = "openai_chat") -> list[dict[str, Any]]:
    """The ``dropped`` notes (:meth:`gateway.turn.Turn.note_dropped` shape) of ``request``'s
    fields that ``dep``'s wire API has no slot for (the table above), after raising
    :class:`CapabilityError` for a penalty it cannot take, or for stop sequences toward the
    Responses API (no slot). Fields are named as the client's ``dialect`` names them
    (:func:`gateway.client_names.client_name`: a Gemini client's ``generationConfig.seed``).
    Empty for most requests (one pass of attribute tests over the messages)."""
    api = dep.api
    notes: list[dict[str, Any]] = []
    last = request.messages[-1] if request.messages else None
    if type(last) is AssistantMessage and api != "anthropic_messages" and api != "demo":
        prefill = _prefill(last, len(request.messages) - 1, dialect, api)
        if prefill is not None:
            notes.append(_note(prefill, [], dep, _WHATS["prefill"]))
    if (request.presence_penalty is not None or request.frequency_penalty is not None) and (
        api not in PENALTY_APIS
    ):
        for field in ("presence_penalty", "frequency_penalty"):
            if getattr(request, field) is not None:
                name = client_name(dialect, field)
                raise CapabilityError(
                    f"{name}: model {dep.name!r} is served by the {api} wire API, which has no sampling "
                    f"penalties (only {', '.join(sorted(PENALTY_APIS - {'demo'}))}); remove it or use "
                    "such a model",
                    param=name,
                )
    if request.stop and api in NO_STOP_APIS:
        name = client_name(dialect, "stop")
        raise CapabilityError(
            f"{name}: model {dep.name!r} is served by the {api} wire API, which has no stop "
            "sequences; remove it or use another model",
            param=name,
        )
    if request.seed is not None and api not in SEED_APIS:
        notes.append(
            _note(client_name(dialect, "seed"), [request.seed], dep, "a seed (best-effort determinism)")
        )
    if request.top_k is not None and api not in TOP_K_APIS:
        notes.append(_note(client_name(dialect, "top_k"), [request.top_k], dep, "top_k sampling"))
    if request.user and api not in USER_APIS:
        notes.append(_note(client_name(dialect, "user"), [request.user], dep, _WHATS["user"]))
    if request.metadata and api not in METADATA_APIS:
        keys = _client_metadata(request, api)
        if keys:
            notes.append(_note("metadata", keys[:_MAX_WHERE], dep, _WHATS["metadata"]))
    names = api not in NAME_APIS
    details = api not in DETAIL_APIS
    filenames = api not in FILENAME_APIS
    if not (names or details or filenames):
        return notes
    found: dict[str, list[str]] = {}
    objects = api in OBJECT_ARGUMENT_APIS
    for i, msg in enumerate(request.messages):
        if type(msg) is AssistantMessage:
            if objects:
                _check_arguments(msg, dep)
            if not msg.content and not (
                msg.own and msg.own.keys
            ):  # an empty turn (own keys are named as such)
                notes.append(_note(_where(msg, i), [], dep, _WHATS["empty"]))
        if type(msg) is ToolResultMessage:
            if details and _has_media(msg):
                _parts(msg, i, found, details=True, filenames=False)
            continue
        if names and msg.name is not None:  # type: ignore[union-attr]
            found.setdefault("name", []).append(f"{_where(msg, i)}.name")
        if type(msg) is UserMessage and (details or filenames) and _has_media(msg):
            _parts(msg, i, found, details=details, filenames=filenames)
    for field, where in found.items():
        notes.append(_note(field, where[:_MAX_WHERE], dep, _WHATS[field]))
    return notes


OBJECT_ARGUMENT_APIS = frozenset({"anthropic_messages", "gemini"})
"""Wire APIs whose tool calls take their arguments as a JSON object (Anthropic ``tool_use.input``,
Gemini ``functionCall.args``); the OpenAI APIs take the string as the client sent it."""


def _check_arguments(msg: AssistantMessage, dep: Deployment) -> None:
    """Raise :class:`CapabilityError` naming the first tool call of ``msg`` (an OpenAI client's
    history) whose arguments are not a JSON object (``"not json"``, ``[1,2]``, ``"str"``,
    ``{"a":1} trailing``): ``dep``'s wire API takes an object only, and sending ``{}`` instead
    would change the call. Empty arguments (``""``) are no arguments: ``{}``."""
    for p in msg.content:
        if type(p) is ToolCallPart and not p.arguments:
            raw = p.raw_arguments.strip()
            if raw and raw != "{}" and not _is_object(raw):
                src = p.src or "tool call"
                where = src + (".function.arguments" if ".tool_calls[" in src else ".arguments")
                raise CapabilityError(
                    f"{where}: model {dep.name!r} is served by the {dep.api} wire API, which takes "
                    f"tool-call arguments as a JSON object only; got {raw[:40]!r}",
                    param=where,
                )


def _is_object(raw: str) -> bool:
    try:
        return isinstance(orjson.loads(raw), dict)
    except orjson.JSONDecodeError:
        return False


def _prefill(last: AssistantMessage, i: int, dialect: str, api: str) -> str | None:
    """The client's name of an assistant prefill (a last assistant message the model is to
    continue: any an Anthropic client ends with, an OpenAI Chat client's ``prefix: true``) that
    an upstream of ``api`` gets as an ordinary assistant message (no continuation there); None
    when there is none or ``api`` continues it (an OpenAI Chat upstream gets ``prefix`` as sent)."""
    where = last.src or f"messages[{i}]"
    if dialect == "anthropic_messages":
        return where if not any(type(p) is ToolCallPart for p in last.content) else None
    own = last.own
    if own is not None and own.keys.get("prefix") is True and api != own.api:
        return where + ".prefix"
    return None


NO_STOP_APIS = frozenset({"openai_responses"})
"""Wire APIs with no stop sequences (the Responses API)."""


_WHATS = {
    "name": "a participant name (OpenAI Chat message `name`)",
    "detail": "an image detail level",
    "filename": "a document's name (OpenAI `filename`, Anthropic `title`)",
    "user": "an end-user id (OpenAI `user` / `safety_identifier`, Anthropic `metadata.user_id`)",
    "metadata": "the client's metadata (OpenAI `metadata`)",
    "empty": "an empty assistant turn (no wire message holds it: removed, the turns around it kept)",
    "prefill": "an assistant prefill to continue (no continuation there: sent as an ordinary assistant "
    "message, the model answers after it)",
}


def _client_metadata(request: Request, api: str) -> list[str]:
    """The locations (``metadata.<key>``) of the client's metadata entries an upstream of ``api``
    does not get: none when the client's own wire API is ``api`` and carries it verbatim
    (``request.native``); the gateway's own keys and Anthropic's ``user_id`` (sent as the
    end-user id, named as ``user`` where that has no slot) are not the client's entries, and a
    null value asks for nothing."""
    native = request.native
    if native is not None and native.api == api and "metadata" in native.fields:
        return []
    return [
        f"metadata.{k}"
        for k, v in request.metadata.items()
        if v is not None and not k.startswith(_OWN_METADATA) and not (k == "user_id" and request.user)
    ]


def _has_media(msg: UserMessage | ToolResultMessage) -> bool:
    """False for the plain case: one text part (or none)."""
    content = msg.content
    return len(content) > 1 or (len(content) == 1 and type(content[0]) is not TextPart)


def _where(msg: SystemMessage | UserMessage | AssistantMessage | ToolResultMessage, i: int) -> str:
    return msg.src or f"messages[{i}]"


def _parts(
    msg: UserMessage | ToolResultMessage,
    i: int,
    found: dict[str, list[str]],
    *,
    details: bool,
    filenames: bool,
) -> None:
    for j, part in enumerate(msg.content):
        tp = type(part)
        if tp is ImagePart and details and part.detail not in (None, "auto"):  # type: ignore[union-attr]
            found.setdefault("detail", []).append(f"{_where(msg, i)}.content[{j}]")
        elif tp is DocumentPart and filenames and part.filename is not None:  # type: ignore[union-attr]
            found.setdefault("filename", []).append(part.src or f"{_where(msg, i)}.content[{j}]")  # type: ignore[union-attr]


def _note(field: str, values: list[Any], dep: Deployment, what: str) -> dict[str, Any]:
    return {
        "kind": "dropped",
        "field": field,
        "values": values,
        "deployment": dep.name,
        "reason": f"{what} has no slot in the {dep.api} wire API (model {dep.name!r})",
    }
