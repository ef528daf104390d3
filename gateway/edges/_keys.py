"""Object keys a parser does not read are refused by name (issue 14: nothing a client sends is
accepted and lost).

A parser lists, per object it reads (a message, a content part, a tool), the keys it knows:
the SDK's keys and the tolerated extensions it reads. :func:`check_keys` raises on any other
key, naming its path (``messages[1].content[0].colour``); a null value asks for nothing and is
accepted. The check is one C-level subset test on the common path (every key known).
"""

from __future__ import annotations

from gateway.edges._common import JSONObj, join
from gateway.errors import InvalidRequest

__all__ = ["check_keys", "unknown_key"]


def unknown_key(obj: JSONObj, known: frozenset[str], path: str) -> None:
    """Raise :class:`InvalidRequest` naming the first key of ``obj`` (at ``path``) that is not
    in ``known`` and has a non-null value; return when there is none."""
    for key, value in obj.items():
        if key not in known and value is not None:
            kpath = join(path, key)
            raise InvalidRequest(
                f"{kpath}: unknown field (the gateway cannot carry it to any upstream; remove it)",
                param=kpath,
            )


def check_keys(obj: JSONObj, known: frozenset[str], path: str) -> None:
    """:func:`unknown_key` after a fast check that every key of ``obj`` is in ``known``."""
    if obj.keys() <= known:
        return
    unknown_key(obj, known, path)
