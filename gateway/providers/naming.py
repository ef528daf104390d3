"""Deterministic, collision-free rewriting of tool names and tool-call ids.

Upstreams restrict names and ids (Anthropic tool-use ids: ``^[a-zA-Z0-9_-]+$``; OpenAI and
Anthropic tool names: ``^[a-zA-Z0-9_-]{1,64}$``, see docs.anthropic.com "Tool use" and
platform.openai.com "Function calling"). A value that already fits is kept as it is; one
that does not is replaced by its allowed characters plus a short hash of the original, so
the rewrite is the same on every run and two different originals never meet. The
:class:`NameMap` remembers each rewrite so the answer can be mapped back.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

ANTHROPIC_ID = re.compile(r"^[a-zA-Z0-9_-]+$")
TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_DISALLOWED = re.compile(r"[^a-zA-Z0-9_-]+")


def _digest(value: str, n: int = 8) -> str:
    return hashlib.sha256(value.encode("utf-8")).hexdigest()[:n]


def safe_token(value: str, pattern: re.Pattern[str], max_len: int | None = None) -> str:
    """``value`` if it matches ``pattern``; otherwise a deterministic rewrite that does.

    The rewrite keeps the allowed characters (others become ``_``), cut so that with the
    ``_<8 hex>`` hash suffix it fits ``max_len``. Distinct inputs give distinct outputs (the
    suffix is a hash of the whole original) except with negligible probability.
    """
    if pattern.match(value):
        return value
    base = _DISALLOWED.sub("_", value).strip("_") or "x"
    suffix = "_" + _digest(value)
    if max_len is not None:
        base = base[: max_len - len(suffix)]
    return base + suffix


def _hashed(value: str, max_len: int) -> str:
    """``value``'s allowed characters plus the ``_<8 hex>`` hash, whether or not it fits."""
    suffix = "_" + _digest(value)
    return (_DISALLOWED.sub("_", value).strip("_") or "x")[: max_len - len(suffix)] + suffix


@dataclass
class NameMap:
    """Two-way map of rewritten tool names and tool-call ids for one upstream call.

    ``to_upstream_*`` rewrite on the way out and remember; ``from_upstream_*`` restore the
    client's value (or return the upstream's own value when it was never rewritten, e.g. a
    fresh id the upstream generated).
    """

    names: dict[str, str] = field(default_factory=dict)
    ids: dict[str, str] = field(default_factory=dict)
    _names_back: dict[str, str] = field(default_factory=dict)
    _ids_back: dict[str, str] = field(default_factory=dict)

    def to_upstream_name(self, name: str, pattern: re.Pattern[str] = TOOL_NAME, max_len: int = 64) -> str:
        """Rewrite a tool name for the upstream (see :func:`safe_token`); a namespaced name
        (``functions.exec``, :mod:`gateway.edges.openai_responses_tools`) whose dots the
        pattern refuses becomes ``functions__exec`` when that fits. A rewrite that meets
        another name of this map gets the hash suffix instead, so two names never meet."""
        out = self.names.get(name)
        if out is None:
            out = safe_token(name, pattern, max_len)
            if out != name and "." in name:
                dotless = name.replace(".", "__")
                if pattern.match(dotless) and len(dotless) <= max_len:
                    out = dotless
            if self._names_back.get(out, name) != name:
                out = _hashed(name, max_len)
            self.names[name] = out
            self._names_back[out] = name
        return out

    def to_upstream_id(
        self, id_: str, pattern: re.Pattern[str] = ANTHROPIC_ID, max_len: int | None = None
    ) -> str:
        """Rewrite a tool-call id for the upstream (see :func:`safe_token`)."""
        out = self.ids.get(id_)
        if out is None:
            out = safe_token(id_, pattern, max_len)
            self.ids[id_] = out
            self._ids_back[out] = id_
        return out

    def from_upstream_name(self, name: str) -> str:
        """The client's name for an upstream tool name."""
        return self._names_back.get(name, name)

    def from_upstream_id(self, id_: str) -> str:
        """The client's id for an upstream tool-call id."""
        return self._ids_back.get(id_, id_)
