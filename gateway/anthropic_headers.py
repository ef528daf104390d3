"""Which of a client's ``anthropic-beta`` and ``anthropic-version`` headers reach the deployment
being tried: the rule the target layer applies (:mod:`gateway.layers.target`).

References: https://docs.anthropic.com/en/api/beta-headers (``anthropic-beta``: comma-separated
beta names, the header may repeat) and https://docs.anthropic.com/en/api/versioning.

* **An Anthropic Messages deployment** gets the client's betas that the config admits
  (``anthropic.betas``: ``allow``, None = all, minus ``deny``; :class:`gateway.config.BetaList`),
  merged by the adapter with the deployment's own configured betas; and the client's
  ``anthropic-version`` when it is one of ``anthropic.versions`` (default ``2023-06-01``, the
  version the adapter is written for), else the deployment's own. A denied beta is *dropped*.
  A version not listed but one the gateway's Anthropic edge speaks (:data:`EDGE_VERSIONS`: the
  Anthropic SDK 2.14–2.17 sends ``2026-10-21``) is replaced without a report: the version
  governs the client's wire to the gateway, which the edge speaks, and the upstream call is the
  gateway's own, built by an adapter that reads the listed versions' answers.
* **Any other wire API**: a beta means nothing there, so none is forwarded; every beta the
  client sent is *dropped* for that target. ``anthropic-version`` is the version of the
  dialect the client speaks to the gateway, not a field of the request: a version the edge
  speaks is not reported.
* **A version the edge does not speak** (not in :data:`EDGE_VERSIONS` nor admitted by
  ``anthropic.versions``: ``2099-01-01``) is *dropped* toward every target, named
  (``x-turnstile-dropped: anthropic-version``, the transcript note with the client's value): the
  client may expect behaviour of that version that neither the edge nor the upstream call
  (sent with the deployment's own version) gives it. It is not refused: an SDK newer than the
  gateway keeps working, told what it got.
* **Other client headers named in** ``anthropic.forward`` (Claude Code's
  ``x-claude-code-session-id`` and ``x-app`` by default) reach an Anthropic Messages deployment
  as they came (:func:`forwarded`); another wire API has no use for them, and they are not
  request fields, so nothing is reported there.
* **Betas the gateway translates itself** (:data:`TRANSLATED_BETAS`) are neither forwarded
  nor dropped: their feature is carried in the internal schema and sent in each target's own
  form (e.g. the structured-outputs beta's top-level ``output_format`` becomes the response
  format, sent to Claude as GA ``output_config.format``; the message-threads beta's ``thread``
  is held in the gateway's session log, and every upstream gets the whole conversation).

What is dropped is a :class:`Dropped` note: the target layer keeps it on the turn (the
transcript row's ``repairs``, the ``x-turnstile-dropped`` response header) and logs it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gateway.config import AnthropicHeaders, Deployment

__all__ = ["EDGE_VERSIONS", "TRANSLATED_BETAS", "Admitted", "Dropped", "admit", "client_betas", "forwarded"]

EDGE_VERSIONS = frozenset({"2023-01-01", "2023-06-01", "2026-10-21"})
"""``anthropic-version`` values whose requests and answers the Anthropic edge reads and writes
(the published versions, and the one the pinned Anthropic SDK sends)."""

TRANSLATED_BETAS = frozenset({"structured-outputs-2025-11-13", "message-threads-2026-08-12"})
"""Betas whose feature the gateway carries itself (never forwarded as a header)."""

BETA = "anthropic-beta"
VERSION = "anthropic-version"
_BETA_B = BETA.encode()
_VERSION_B = VERSION.encode()


@dataclass(frozen=True)
class Dropped:
    """A client header (``field``) whose ``values`` did not reach ``deployment``, and why."""

    field: str
    values: tuple[str, ...]
    deployment: str
    reason: str

    def note(self) -> dict[str, Any]:
        """The transcript note (a JSON-able dict, ``kind: "dropped"``)."""
        return {
            "kind": "dropped",
            "field": self.field,
            "values": list(self.values),
            "deployment": self.deployment,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class Admitted:
    """What reaches the deployment (``betas`` in the client's order, ``version`` or None for
    the deployment's own) and what was dropped."""

    betas: tuple[str, ...] = ()
    version: str | None = None
    dropped: tuple[Dropped, ...] = ()


def client_betas(headers: Mapping[str, str] | None, with_version: bool) -> tuple[list[str], str | None]:
    """The client's beta names (every ``anthropic-beta`` header, split on commas, blanks
    dropped, each once) and, when ``with_version``, its ``anthropic-version`` (else None: only
    an Anthropic target reads it). ``headers`` is a starlette ``Headers`` (``getlist``) or any
    mapping with lower-case keys (starlette's raw header names are lower-case bytes)."""
    if headers is None:
        return [], None
    pairs = getattr(headers, "raw", None)
    if pairs is not None:  # starlette: one dict made in C answers the common case (no beta)
        last = dict(pairs)
        if _BETA_B not in last and not with_version:
            return [], None
        version = last.get(_VERSION_B)
        raw = [v.decode("latin-1") for k, v in pairs if k == _BETA_B] if _BETA_B in last else []
        text_version = version.decode("latin-1") if version is not None and with_version else None
    else:
        raw = [headers[BETA]] if BETA in headers else []
        text_version = headers.get(VERSION) if with_version else None
    betas = list(dict.fromkeys(b.strip() for v in raw for b in v.split(",") if b.strip())) if raw else []
    return betas, text_version


def admit(betas: list[str], version: str | None, dep: Deployment, policy: AnthropicHeaders) -> Admitted:
    """The rule of the module docstring for the client's ``betas`` and ``version`` toward
    ``dep``. Never raises."""
    wanted = [b for b in betas if b not in TRANSLATED_BETAS]
    dropped: list[Dropped] = []
    if version is not None and version not in EDGE_VERSIONS and version not in policy.versions:
        reason = (
            f"anthropic-version {version} is not one the gateway speaks ({', '.join(sorted(EDGE_VERSIONS))}) "
            "nor admitted by anthropic.versions; answered as those versions answer"
        )
        dropped.append(Dropped(VERSION, (version,), dep.name, reason))
    if dep.api != "anthropic_messages":
        if wanted:
            reason = f"anthropic-beta has no meaning for the {dep.api} wire API"
            dropped.append(Dropped(BETA, tuple(wanted), dep.name, reason))
        return Admitted(dropped=tuple(dropped))
    allowed = tuple(b for b in wanted if policy.betas.admits(b))
    if len(allowed) < len(wanted):
        denied = tuple(b for b in wanted if b not in allowed)
        dropped.append(Dropped(BETA, denied, dep.name, "not admitted by the anthropic.betas allow/deny list"))
    sent_version = version if version is not None and version in policy.versions else None
    return Admitted(allowed, sent_version, tuple(dropped))


def forwarded(headers: Mapping[str, str] | None, names: list[str]) -> dict[str, str]:
    """The client's headers named in ``names`` (lower-case) that it sent, by lower-case name,
    in ``names`` order. ``headers``: a case-insensitive mapping (starlette ``Headers``) or one
    with lower-case keys. Never raises."""
    if headers is None or not names:
        return {}
    out: dict[str, str] = {}
    for name in names:
        value = headers.get(name)
        if value is not None:
            out[name] = value
    return out
