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

* Gemini clients keep ``thoughtSignature`` as *bytes* (the google-genai SDKs decode it from
  base64 and encode it again when they send it back), so toward them the envelope is itself
  base64-encoded (standard alphabet, padded): ``base64("tsig1." ...)`` for a signature and
  ``base64("redacted:" + "tsig1." ...)`` for redacted-thinking data
  (:func:`wrap_b64_signature`). A value that does not decode to one is a raw Gemini signature.

A raw (unwrapped) signature means "signed by the client dialect's native provider"; the edge
assigns that provenance (for Anthropic: ``Provenance(api="anthropic_messages",
provider="anthropic", model="")``, model ``""`` = any model of that provider).
"""

from __future__ import annotations

import base64
import binascii
import functools

import orjson

from gateway.schema import Provenance

SIG_PREFIX = "tsig1."
ID_SEPARATOR = "__ts1_"


def _b64e(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def _b64d(text: str) -> bytes:
    if not text or not _B64_ALPHABET.issuperset(text):
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
    return _envelope_head(prov.api, prov.provider, prov.model) + sig


@functools.lru_cache(maxsize=1024)
def _envelope_head(api: str, provider: str, model: str) -> str:
    return SIG_PREFIX + _b64e(orjson.dumps([api, provider, model])) + "."


@functools.lru_cache(maxsize=1024)
def _provenance(api: str, provider: str, model: str) -> Provenance:
    return Provenance(api=api, provider=provider, model=model)


@functools.lru_cache(maxsize=1024)
def _envelope_provenance(head: str) -> Provenance:
    """The provenance inside an envelope head (the text between ``tsig1.`` and the next
    ``.``). Cached: a conversation sends the same few heads back on every turn, and decoding
    one costs microseconds. Raises ``ValueError`` (not cached) for a damaged head."""
    api, provider, model = _decode_strings(head, 3)
    return _provenance(api, provider, model)


def unwrap_signature(s: str) -> tuple[str, Provenance | None]:
    """Inverse of :func:`wrap_signature`: ``(signature, provenance)``.

    A string without the ``tsig1.`` prefix is a raw signature: ``(s, None)`` (the edge assigns
    its dialect's native provenance). Raises ``ValueError`` when the prefix is present but the
    envelope is damaged (the edge reports it as an invalid request naming the field). Equal
    envelopes give one shared (frozen) :class:`Provenance`.
    """
    if not s.startswith(SIG_PREFIX):
        return s, None
    head, sep, sig = s[len(SIG_PREFIX) :].partition(".")
    if not sep:
        raise ValueError("signature envelope has no '.' separator")
    return sig, _envelope_provenance(head)


def wrap_tool_call_id(id: str, sig: str, prov: Provenance | None) -> str:
    """Carry a tool call's own signature (and its provenance) inside its id:
    ``id + "__ts1_" + base64url(orjson([sig, api, provider, model]))`` (no padding)."""
    p = prov or Provenance(api="")
    return id + ID_SEPARATOR + _b64e(orjson.dumps([sig, p.api, p.provider, p.model]))


@functools.lru_cache(maxsize=512)
def _id_envelope(text: str) -> tuple[str, Provenance | None]:
    """``(signature, provenance)`` of a tool-call id envelope (the text after ``__ts1_``).
    Cached: a conversation sends each call's id back on every turn (in the call and in its
    result). Raises ``ValueError`` (not cached) when it is not an envelope."""
    sig, api, provider, model = _decode_strings(text, 4)
    return sig, (_provenance(api, provider, model) if api else None)


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
            sig, prov = _id_envelope(s[pos + len(ID_SEPARATOR) :])
        except ValueError:
            start = pos + 1
            continue
        return s[:pos], sig, prov


_REDACTED = "redacted:"


def wrap_b64_signature(sig: str, prov: Provenance | None, *, redacted: bool = False) -> str:
    """A signature (or, with ``redacted``, redacted-thinking data) as a Gemini
    ``thoughtSignature``: standard padded base64 of the envelope (:func:`wrap_signature`),
    prefixed with ``redacted:`` for redacted data. Without provenance the raw ``sig``."""
    if prov is None:
        return sig
    text = (_REDACTED if redacted else "") + wrap_signature(sig, prov)
    return base64.b64encode(text.encode()).decode("ascii")


def unwrap_b64_signature(value: str) -> tuple[str, Provenance | None, bool]:
    """Inverse of :func:`wrap_b64_signature`: ``(signature, provenance, redacted)``. A value
    that is not base64 of an envelope is a raw signature: ``(value, None, False)``. Raises
    ``ValueError`` for an envelope whose provenance is damaged."""
    if len(value) < 8 or not value.startswith(("dHNpZzEu", "cmVkYWN0ZWQ6")):  # base64 of the prefixes
        return value, None, False
    try:
        text = base64.b64decode(value, validate=True).decode()
    except (binascii.Error, ValueError):
        return value, None, False
    redacted = text.startswith(_REDACTED)
    if redacted:
        text = text[len(_REDACTED) :]
    if not text.startswith(SIG_PREFIX):
        return value, None, False
    sig, prov = unwrap_signature(text)
    return sig, prov, redacted
