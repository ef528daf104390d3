"""Turnstile's envelopes that carry the provenance of signed reasoning through the client.

Invariant: signed thinking goes back only to the provider and model that signed it. A client
echoes back what the gateway rendered, so the gateway puts the provenance (wire API, provider,
model) inside the opaque strings the client keeps verbatim:

* thinking signatures (and redacted-thinking data) rendered to Anthropic clients become
  ``"tsig1." + base64url(orjson([api, provider, model])) + "." + signature``;
* a signature attached to a tool call itself (Gemini ``thoughtSignature`` on a
  ``functionCall``, handed case C17) travels inside the tool-call id, which every client
  echoes in the assistant turn *and* in the tool result:
  ``id + "__ts1_" + base64url(orjson([signature, api, provider, model]))`` without padding,
  so the id still matches ``^[a-zA-Z0-9_-]+$`` when the original id does (Anthropic's rule).

A raw (unwrapped) signature means "signed by the client dialect's native provider"; the edge
assigns that provenance (for Anthropic: ``Provenance(api="anthropic_messages",
provider="anthropic", model="")``, model ``""`` = any model of that provider).
"""

from __future__ import annotations

import base64
import binascii

import orjson

from gateway.schema import Provenance

SIG_PREFIX = "tsig1."
ID_SEPARATOR = "__ts1_"


def _b64e(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def _b64d(text: str) -> bytes:
    if not text or any(c not in _B64_ALPHABET for c in text):
        raise ValueError("not base64url")
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError) as exc:
        raise ValueError("not base64url") from exc


_B64_ALPHABET = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


def _decode_strings(text: str, n: int) -> list[str]:
    try:
        value = orjson.loads(_b64d(text))
    except orjson.JSONDecodeError as exc:
        raise ValueError("envelope is not JSON") from exc
    if not (isinstance(value, list) and len(value) == n and all(isinstance(v, str) for v in value)):
        raise ValueError("envelope has the wrong shape")
    return value


def wrap_signature(sig: str, prov: Provenance) -> str:
    """Wrap an opaque signature with its provenance:
    ``"tsig1." + base64url(orjson([api, provider, model])) + "." + sig``."""
    return SIG_PREFIX + _b64e(orjson.dumps([prov.api, prov.provider, prov.model])) + "." + sig


def unwrap_signature(s: str) -> tuple[str, Provenance | None]:
    """Inverse of :func:`wrap_signature`: ``(signature, provenance)``.

    A string without the ``tsig1.`` prefix is a raw signature: ``(s, None)`` (the edge assigns
    its dialect's native provenance). Raises ``ValueError`` when the prefix is present but the
    envelope is damaged (the edge reports it as an invalid request naming the field).
    """
    if not s.startswith(SIG_PREFIX):
        return s, None
    head, sep, sig = s[len(SIG_PREFIX) :].partition(".")
    if not sep:
        raise ValueError("signature envelope has no '.' separator")
    api, provider, model = _decode_strings(head, 3)
    return sig, Provenance(api=api, provider=provider, model=model)


def wrap_tool_call_id(id: str, sig: str, prov: Provenance | None) -> str:
    """Carry a tool call's own signature (and its provenance) inside its id:
    ``id + "__ts1_" + base64url(orjson([sig, api, provider, model]))`` (no padding)."""
    p = prov or Provenance(api="")
    return id + ID_SEPARATOR + _b64e(orjson.dumps([sig, p.api, p.provider, p.model]))


def unwrap_tool_call_id(s: str) -> tuple[str, str | None, Provenance | None]:
    """Inverse of :func:`wrap_tool_call_id`: ``(original id, signature, provenance)``.

    An id without a valid envelope is returned unchanged with ``(s, None, None)``. Provenance
    is None when the wrapped provenance had an empty ``api``.
    """
    start = 0
    while True:
        pos = s.find(ID_SEPARATOR, start)
        if pos < 0:
            return s, None, None
        try:
            sig, api, provider, model = _decode_strings(s[pos + len(ID_SEPARATOR) :], 4)
        except ValueError:
            start = pos + 1
            continue
        prov = Provenance(api=api, provider=provider, model=model) if api else None
        return s[:pos], sig, prov
