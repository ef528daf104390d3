"""The gateway's own ``request_state`` for MCP 2026-07-28 multi-round ``tools/call``: signed,
bound to one call, short-lived and single-use.

A 2026-07-28 client answers a question (the gateway's confirmation, or an upstream's
elicitation or sampling request) by retrying the call with ``inputResponses`` and the
``requestState`` it was handed. The gateway keeps no session, so what it must remember
between rounds travels in that state: whether the confirmation was asked (``q``), whether it
was approved (``c``) and the upstream's own state (``u``). A state is

* signed (HMAC-SHA256 with a per-process secret): a client cannot forge or edit one;
* bound to the call: the tool's exposed name, its arguments and the client it was issued to;
* valid for :data:`STATE_TTL_S` seconds;
* single-use: each carries a random nonce, recorded when the state is accepted, and a state
  whose nonce was already accepted is refused like a missing one. A replayed approval
  therefore never runs a call a second time: the replay is asked again.

The record of accepted nonces is in-process and bounded: entries older than the TTL are
dropped (their states are expired anyway) and, when ``max_consumed`` would be exceeded, the
oldest entry is dropped and every state issued at or before it is refused from then on
(a client may be asked again; nothing is accepted twice). The secret is per process too, so
a state is only ever accepted by the instance that issued it.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import os
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import orjson

STATE_TTL_S = 600
"""How long a sealed state is accepted after it was issued (seconds)."""
MAX_CONSUMED = 100_000
"""Accepted nonces remembered at most (about 6 MB); see the module docstring."""


def binding(name: str, arguments: dict[str, Any] | None, client: str | None) -> str:
    """What a state is bound to: sha256 (hex) over the exposed tool name, the arguments
    (key-sorted JSON) and the caller's client name (None without ``mcp.clients``). Arguments
    orjson cannot write (an integer over 64 bits) are written by the standard library."""
    value = {"n": name, "a": arguments or {}, "c": client}
    try:
        body = orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except TypeError:
        body = json.dumps(value, sort_keys=True, default=repr).encode()
    return hashlib.sha256(body).hexdigest()


class SealedStates:
    """Issues and accepts sealed states (see the module docstring). ``clock`` returns seconds
    (``time.time``; tests pass their own)."""

    def __init__(
        self,
        *,
        secret: bytes | None = None,
        ttl_s: float = STATE_TTL_S,
        max_consumed: int = MAX_CONSUMED,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._secret = secret or os.urandom(32)
        self.ttl_s = ttl_s
        self.max_consumed = max_consumed
        self._clock = clock
        self._consumed: OrderedDict[str, float] = OrderedDict()  # nonce -> issued at (s)
        self._refused_up_to = float("-inf")  # states issued at or before this are refused

    def seal(self, bound_to: str, payload: dict[str, Any]) -> str:
        """A state carrying ``payload`` (JSON-ready), bound to ``bound_to`` (:func:`binding`),
        with a fresh nonce: ``base64url(body) + "." + hex HMAC``."""
        body = {"p": payload, "b": bound_to, "t": self._clock(), "n": os.urandom(16).hex()}
        text = base64.urlsafe_b64encode(orjson.dumps(body)).decode()
        return f"{text}.{self._mac(text)}"

    def unseal(self, bound_to: str, token: str | None) -> dict[str, Any] | None:
        """The payload of ``token`` when this instance sealed it for ``bound_to``, within the
        TTL, and it was never accepted before; it is then recorded as accepted (no await
        between the check and the record: two concurrent retries cannot both pass). None for a
        missing, forged, foreign, expired or replayed token."""
        text, _, mac = (token or "").rpartition(".")
        if not text or not hmac.compare_digest(mac, self._mac(text)):
            return None
        try:
            body = orjson.loads(base64.urlsafe_b64decode(text))
        except (ValueError, binascii.Error, orjson.JSONDecodeError):
            return None
        if not isinstance(body, dict) or body.get("b") != bound_to:
            return None
        issued, nonce, payload = body.get("t"), body.get("n"), body.get("p")
        now = self._clock()
        if not isinstance(issued, int | float) or not isinstance(nonce, str) or not isinstance(payload, dict):
            return None
        if now - issued > self.ttl_s or issued <= self._refused_up_to or nonce in self._consumed:
            return None
        self._remember(nonce, issued, now)
        return payload

    def forged(self, token: str) -> bool:
        """Whether ``token`` is not a state this instance sealed at all (its MAC does not
        verify): a tampered or foreign state, as opposed to an expired, replayed or
        other-call one."""
        text, _, mac = token.rpartition(".")
        return not text or not hmac.compare_digest(mac, self._mac(text))

    def _remember(self, nonce: str, issued: float, now: float) -> None:
        consumed = self._consumed
        while consumed:
            oldest, at = next(iter(consumed.items()))
            if now - at <= self.ttl_s and len(consumed) < self.max_consumed:
                break
            del consumed[oldest]
            if now - at <= self.ttl_s:  # dropped for room, not age: refuse its generation from now on
                self._refused_up_to = max(self._refused_up_to, at)
        consumed[nonce] = issued

    def _mac(self, text: str) -> str:
        return hmac.new(self._secret, text.encode(), hashlib.sha256).hexdigest()
