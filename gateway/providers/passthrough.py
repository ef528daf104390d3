"""Which passed-through fields (:attr:`gateway.schema.Request.passthrough`) a deployment's
upstream is sent, and which it cannot carry.

A passed-through field is a client field the schema does not model that only steers how an
upstream of the client's own wire API serves the turn. The rule, per deployment:

* toward an upstream of the same wire API the fields are sent verbatim (its request builder
  merges them, e.g. :mod:`gateway.providers.openai_responses_request`), except where that
  upstream refuses them for the model (OpenAI Responses: ``reasoning.*`` only for a reasoning
  model, :func:`gateway.providers.openai_responses_common.is_reasoning_model`);
* toward any other target a field is **dropped**, and said so: the turn keeps a ``dropped``
  note per field (:meth:`gateway.turn.Turn.note_dropped`: the transcript row's repairs), the
  pipeline logs one line and the answer carries the ``x-turnstile-dropped: field,field``
  header (issue 14 item 1) — unless dropping it changes what the answer means, when the edge
  refuses it by name instead (no passed-through field is such a field today).

Decisions for the fields the OpenAI Responses edge passes through (none of them changes an
answer's meaning, so each is dropped toward another wire API): ``prompt_cache_key``,
``prompt_cache_retention``, ``prompt_cache_options`` (cache hints: the answer is the same,
only the upstream's prompt cache is not steered); ``client_metadata`` (Codex CLI's client
details, for the upstream's logs); ``service_tier`` (processing priority and price, not
content); ``truncation: auto`` (without it an over-long input fails instead of being cut by the
upstream; the gateway's sessions compact on their own); ``text.verbosity``,
``reasoning.summary`` / ``generate_summary`` (how much the model writes and whether a reasoning
summary is shown: a style, not the content asked for); ``reasoning.context`` and
``reasoning.mode`` (how the upstream keeps reasoning between turns: the thinking policy decides
that for other upstreams); ``safety_identifier`` beside ``user`` (the upstream's abuse
monitoring; ``user`` is carried).
"""

from __future__ import annotations

from typing import Any

from gateway.config import Deployment
from gateway.providers.openai_responses_common import is_reasoning_model
from gateway.schema import Request

_MODEL_BOUND = {"openai_responses": ("reasoning",)}
"""Fields an upstream of the same API takes only for some models (OpenAI Responses: reasoning
settings only for a reasoning model)."""


def _fields(key: str, value: Any) -> list[tuple[str, Any]]:
    """Dotted field names and values of one passed-through value: ``("text.verbosity", "low")``
    for ``{"text": {"verbosity": "low"}}``, ``("client_metadata", {...})`` for an opaque object."""
    if key in ("text", "reasoning") and isinstance(value, dict):
        return [(f"{key}.{k}", v) for k, v in value.items()]
    return [(key, value)]


def split(request: Request, deployment: Deployment) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``(sent, dropped)`` for ``request`` on ``deployment``: the passed-through fields of
    ``deployment.api`` its upstream is sent (top-level field -> value, verbatim), and a note for
    every other passed-through field, sorted by field (``{"kind": "dropped", "field": dotted
    name, "values": [value], "deployment", "reason"}``, the shape
    :meth:`gateway.turn.Turn.note_dropped` keeps). Pure."""
    sent: dict[str, Any] = {}
    dropped: list[dict[str, Any]] = []
    for api, fields in request.passthrough.items():
        for key, value in fields.items():
            if api != deployment.api:
                reason = f"only an upstream of the {api} wire API takes it; this one speaks {deployment.api}"
            elif key in _MODEL_BOUND.get(api, ()) and not _takes_model_bound(api, deployment):
                reason = (
                    f"model {deployment.model!r} has no reasoning (its upstream refuses reasoning settings)"
                )
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
