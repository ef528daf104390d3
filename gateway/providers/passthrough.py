"""Which of a request's same-wire fields (:attr:`gateway.schema.Request.native`) a
deployment's upstream of that same wire API is sent, and which it cannot take for its model.

Toward an upstream of another wire API, :class:`gateway.schema.NativeFields` says what happens
(``paths`` refused, ``serving`` dropped and named: the target layer). Toward one of the same
API the fields are sent verbatim (its request builder merges them, e.g.
:mod:`gateway.providers.openai_responses_request`), except where that upstream refuses them for
the model (OpenAI Responses: ``reasoning.*`` only for a reasoning model,
:func:`gateway.providers.openai_responses_common.is_reasoning_model`): those are **dropped**
and said so — the turn keeps a ``dropped`` note per field (:meth:`gateway.turn.Turn.note_dropped`:
the transcript row's repairs), the pipeline logs one line and the answer carries the
``x-turnstile-dropped: field,field`` header (issue 14 item 1).

Decisions for the serving fields the OpenAI Responses edge passes through (none of them
changes an answer's meaning, so each is dropped toward another wire API): ``prompt_cache_key``,
``prompt_cache_retention``, ``prompt_cache_options`` (cache hints: the answer is the same,
only the upstream's prompt cache is not steered); ``client_metadata`` (Codex CLI's client
details, for the upstream's logs); ``service_tier`` (processing priority and price, not
content); ``truncation: auto`` (without it an over-long input fails instead of being cut by the
upstream; the gateway's sessions compact on their own); ``text.verbosity``,
``reasoning.summary`` / ``generate_summary`` (how much the model writes and whether a reasoning
summary is shown: a style, not the content asked for); ``reasoning.context`` and
``reasoning.mode`` (how the upstream keeps reasoning between turns: the thinking policy decides
that for other upstreams); ``safety_identifier`` beside ``user`` (the upstream's abuse
monitoring; ``user`` is carried); ``image`` (how the upstream compresses images in the context);
a call item's ``caller`` / ``async`` and the other item and part keys (``item_fields``,
``own_keys``). Two it passes through change the answer, so toward another wire API the request
is refused (``NativeFields.paths``): ``moderation`` and ``access_programs``.

The two OpenAI wire APIs share many of these fields, so between them a field is **translated**
rather than dropped or refused (:data:`SIBLINGS`, :func:`sibling_fields`): an OpenAI Chat
client's ``prompt_cache_key``, ``prompt_cache_retention``, ``prompt_cache_options``,
``safety_identifier``, ``service_tier``, ``store``, ``moderation`` and ``verbosity`` reach a
Responses upstream (``verbosity`` as ``text.verbosity``), and a Responses client's
``prompt_cache_*``, ``safety_identifier``, ``service_tier``, ``moderation`` and
``text.verbosity`` reach a Chat upstream (``verbosity``) — where the value fits the other API
(Chat has no ``ultrafast`` tier and only the ``30m`` cache lifetime, without ``prewarm`` or
``comparison_response_id``: such a value is dropped or refused by its class as before).
Source: ``openai.types.chat.completion_create_params`` and
``openai.types.responses.response_create_params`` (SDK 2.x), whose types for these fields are
the same. A Responses client's ``store`` is the gateway's own session log (never sent upstream),
and a Responses client's ``metadata`` does not reach a Chat upstream, which takes ``metadata``
only with ``store: true`` ("The 'metadata' parameter is only allowed when 'store' is enabled").
"""

from __future__ import annotations

from typing import Any

from gateway.config import Deployment
from gateway.providers.openai_responses_common import is_reasoning_model
from gateway.schema import Request

_CHAT_TIERS = frozenset({"auto", "default", "flex", "scale", "priority", "fast"})
"""``service_tier`` values of the Chat Completions API (the Responses API adds ``ultrafast``)."""


def _chat_cache_options(value: Any) -> bool:
    """Whether a Responses ``prompt_cache_options`` object fits Chat's (``mode``, ``ttl: 30m``)."""
    return type(value) is dict and set(value) <= {"mode", "ttl"} and value.get("ttl", "30m") == "30m"


SIBLINGS: dict[tuple[str, str], dict[str, tuple[str, Any]]] = {
    ("openai_chat", "openai_responses"): {
        "prompt_cache_key": ("prompt_cache_key", None),
        "prompt_cache_retention": ("prompt_cache_retention", None),
        "prompt_cache_options": ("prompt_cache_options", None),
        "safety_identifier": ("safety_identifier", None),
        "service_tier": ("service_tier", None),
        "store": ("store", None),
        "moderation": ("moderation", None),
        "verbosity": ("text.verbosity", None),
    },
    ("openai_responses", "openai_chat"): {
        "prompt_cache_key": ("prompt_cache_key", None),
        "prompt_cache_retention": ("prompt_cache_retention", None),
        "prompt_cache_options": ("prompt_cache_options", _chat_cache_options),
        "safety_identifier": ("safety_identifier", None),
        "service_tier": ("service_tier", _CHAT_TIERS.__contains__),
        "moderation": ("moderation", None),
        "text.verbosity": ("verbosity", None),
    },
}
"""(client wire API, upstream wire API) -> the client's (dotted) field name -> (the upstream's
dotted field name, a test its value must pass, or None): the same-family fields translated
between the two OpenAI APIs (module docstring)."""


def translated_names(fields: dict[str, Any], client_api: str, api: str) -> frozenset[str]:
    """The client's dotted field names of same-wire ``fields`` (wire API ``client_api``) that an
    upstream of ``api`` gets translated (:data:`SIBLINGS`); empty for any other pair. Pure."""
    table = SIBLINGS.get((client_api, api))
    if table is None:
        return frozenset()
    names = []
    for name, (_, fits) in table.items():
        value = value_of(fields, name)
        if value is not MISSING and (fits is None or fits(value)):
            names.append(name)
    return frozenset(names)


def sibling_fields(request: Request, api: str) -> dict[str, Any]:
    """The body fields an upstream of ``api`` is sent for ``request.native`` of its sibling
    OpenAI wire API (:data:`SIBLINGS`): ``{"text": {"verbosity": "low"}, "service_tier": ...}``,
    shaped like the upstream body (nested objects for dotted names); empty when the request has
    no such fields. Pure."""
    native = request.native
    if native is None or native.api == api:
        return {}
    table = SIBLINGS.get((native.api, api))
    if table is None:
        return {}
    out: dict[str, Any] = {}
    for name in translated_names(native.fields, native.api, api):
        target = table[name][0]
        value = value_of(native.fields, name)
        top, _, rest = target.partition(".")
        if rest:
            out.setdefault(top, {})[rest] = value
        else:
            out[top] = value
    return out


MODEL_BOUND = {"openai_responses": ("reasoning",)}
"""Fields an upstream of the same API takes only for some models (OpenAI Responses: reasoning
settings only for a reasoning model)."""


def _fields(key: str, value: Any) -> list[tuple[str, Any]]:
    """Dotted field names and values of one passed-through value: ``("text.verbosity", "low")``
    for ``{"text": {"verbosity": "low"}}``, ``("client_metadata", {...})`` for an opaque object."""
    if key in ("text", "reasoning") and isinstance(value, dict):
        return [(f"{key}.{k}", v) for k, v in value.items()]
    return [(key, value)]


MISSING: Any = object()
"""What :func:`value_of` answers for a name that finds no value."""


def value_of(fields: dict[str, Any], name: str) -> Any:
    """The value a dotted field name (``text.verbosity``, ``service_tier``) finds in same-wire
    ``fields``, else :data:`MISSING` (a name with an index, ``tools[2].defer_loading``, finds
    none)."""
    top, _, rest = name.partition(".")
    value = fields.get(top, MISSING)
    if rest:
        return value.get(rest, MISSING) if isinstance(value, dict) else MISSING
    return value


def serving_names(fields: dict[str, Any]) -> list[str]:
    """The dotted names of same-wire ``fields`` (``text.verbosity`` for ``{"text":
    {"verbosity": ...}}``), sorted, as :attr:`gateway.schema.NativeFields.serving` lists them."""
    return sorted(name for key, value in fields.items() for name, _ in _fields(key, value))


def split(request: Request, deployment: Deployment) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``(sent, dropped)`` for ``request`` on ``deployment``: the same-wire fields of
    ``deployment.api`` (``request.native`` of that API) its upstream is sent (top-level field ->
    value, verbatim), and a note for each one it refuses for its model, sorted by field
    (``{"kind": "dropped", "field": dotted name, "values": [value], "deployment", "reason"}``,
    the shape :meth:`gateway.turn.Turn.note_dropped` keeps); both empty for a request without
    fields of ``deployment.api``. Pure."""
    sent: dict[str, Any] = {}
    dropped: list[dict[str, Any]] = []
    native = request.native
    if native is None or native.api != deployment.api:
        return sent, dropped  # another API's fields: NativeFields' classes (the target layer)
    api = native.api
    for key, value in native.fields.items():
        if key in MODEL_BOUND.get(api, ()) and not _takes_model_bound(api, deployment):
            reason = f"model {deployment.model!r} has no reasoning (its upstream refuses reasoning settings)"
        else:
            sent[key] = value
            continue
        for name, v in _fields(key, value):
            dropped.append(
                {
                    "kind": "dropped",
                    "field": name,
                    "values": [v],
                    "deployment": deployment.name,
                    "reason": reason,
                }
            )
    return sent, sorted(dropped, key=lambda d: str(d["field"]))


def _takes_model_bound(api: str, deployment: Deployment) -> bool:
    if api == "openai_responses":
        return is_reasoning_model(deployment)
    return True  # pragma: no cover - only the Responses API has model-bound fields
