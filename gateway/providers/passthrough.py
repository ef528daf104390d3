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
"""

from __future__ import annotations

from typing import Any

from gateway.config import Deployment
from gateway.providers.openai_responses_common import is_reasoning_model
from gateway.schema import Request

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
