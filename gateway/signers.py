"""Who signed a piece of thinking, when the client did not say.

Signed reasoning may only go back to the model that signed it (handed case C16). Signatures
the gateway returned carry their provenance in Turnstile's envelope, but a client may echo a
raw signature (history from before it used the gateway, or a client that strips envelopes).
The edge then knows only the API and provider (``Provenance.model == ""``). This module
settles the model:

1. from :class:`SignerMemory`: every signature the gateway has seen in an answer, keyed by a
   hash of the signature (bounded LRU, per process);
2. else, when exactly one candidate deployment of the turn has that API and provider, that
   deployment's model (there is no other model it could go back to);
3. else the signer stays unknown and is marked :data:`UNKNOWN_MODEL`, which matches no
   deployment, so the thinking policy treats it as foreign (stripped by default) — it is
   never sent to a model that may not have signed it.

Shared between instances (``redis.url``, :mod:`gateway.fleet.memory`): ``SignerMemory.listener``
hears every signature recorded (by its hash), :meth:`SignerMemory.missing` names the hashes a
request needs that this process does not know, :meth:`SignerMemory.adopt` takes another
instance's.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Callable

from gateway.config import Deployment
from gateway.schema import (
    AssistantMessage,
    Provenance,
    RedactedThinkingPart,
    Request,
    Response,
    ThinkingPart,
    ToolCallPart,
)

UNKNOWN_MODEL = "?unknown"


def _key(signature: str) -> str:
    return hashlib.sha256(signature.encode("utf-8", "surrogatepass")).hexdigest()


def _signature_of(part: object) -> str | None:
    if type(part) is ThinkingPart or type(part) is ToolCallPart:
        return part.signature
    if type(part) is RedactedThinkingPart:
        return part.data
    return None


class SignerMemory:
    """Signature hash -> :class:`Provenance`, for the last ``capacity`` signatures seen."""

    def __init__(self, capacity: int = 100_000) -> None:
        self.capacity = capacity
        self._map: OrderedDict[str, Provenance] = OrderedDict()
        self.listener: Callable[[str, Provenance], None] | None = None
        """Told of every signature recorded: ``(hash, provenance)``."""

    def remember(self, response: Response) -> None:
        """Record the provenance of every signed part of ``response``."""
        for part in response.message.content:
            sig = _signature_of(part)
            if not sig:  # checked first: a missing attribute on a pydantic model is costly
                continue
            prov = getattr(part, "provenance", None)
            if prov is not None and prov.model:
                key = _key(sig)
                self._map[key] = prov
                self._map.move_to_end(key)
                if len(self._map) > self.capacity:
                    self._map.popitem(last=False)
                if self.listener is not None:
                    self.listener(key, prov)

    def adopt(self, key: str, prov: Provenance) -> None:
        """Record ``prov`` for the signature hash ``key`` (another instance saw it)."""
        self._map[key] = prov
        self._map.move_to_end(key)
        if len(self._map) > self.capacity:
            self._map.popitem(last=False)

    def missing(self, request: Request) -> list[str]:
        """Hashes of the signatures in ``request`` whose signer :func:`resolve` would look up
        (provenance without a model) and this process does not know."""
        out: list[str] = []
        for msg in request.messages:
            if type(msg) is not AssistantMessage:
                continue
            for part in msg.content:
                sig = _signature_of(part)
                if not sig:
                    continue
                prov = getattr(part, "provenance", None)
                if prov is not None and not prov.model and _key(sig) not in self._map:
                    out.append(_key(sig))
        return out

    def lookup(self, signature: str) -> Provenance | None:
        """The provenance recorded for ``signature``, or None."""
        return self._map.get(_key(signature))


def resolve(request: Request, candidates: list[Deployment], memory: SignerMemory) -> Request:
    """``request`` with every signed part's unknown model settled (see module docstring).

    Returns the same object when nothing needed settling."""
    changed = False
    messages = request.messages  # copied at the first change only
    for i, msg in enumerate(request.messages):
        if type(msg) is not AssistantMessage:
            continue
        parts = msg.content  # copied at the first change only
        touched = False
        for j, part in enumerate(msg.content):
            # _signature_of inlined (one call per part adds up over long conversations)
            tp = type(part)
            if tp is ToolCallPart or tp is ThinkingPart:
                sig = part.signature  # type: ignore[union-attr]
            elif tp is RedactedThinkingPart:
                sig = part.data  # type: ignore[union-attr]
            else:
                continue
            if not sig:  # checked first: a missing attribute on a pydantic model is costly
                continue
            prov = getattr(part, "provenance", None)
            if prov is None or prov.model:
                continue
            settled = memory.lookup(sig)
            if settled is None or (settled.api, settled.provider) != (prov.api, prov.provider):
                same = {d.model for d in candidates if (d.api, d.provider) == (prov.api, prov.provider)}
                model = same.pop() if len(same) == 1 else UNKNOWN_MODEL
                settled = prov.model_copy(update={"model": model})
            if not touched:
                parts = list(msg.content)
                touched = True
            parts[j] = part.model_copy(update={"provenance": settled})
        if touched:
            if not changed:
                messages = list(messages)
                changed = True
            messages[i] = msg.model_copy(update={"content": parts})
    if not changed:
        return request
    return request.model_copy(update={"messages": messages})
