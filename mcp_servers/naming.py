"""Exposed names of aggregated MCP tools.

Each upstream tool is exposed as ``<server>__<tool>``, made to fit the strictest model-provider
rule, ``^[a-zA-Z0-9_-]{1,64}$`` (OpenAI and Anthropic tool names; MCP itself allows 1–128
characters of ``[A-Za-z0-9_.-]``, see the MCP 2025-11-25 spec, "Tool names"). The mapping is:

* deterministic: it depends only on the (server id, tool name) pair, so it is the same across
  restarts and across gateway instances;
* injective: a name that had to be changed (bad characters, or too long) gets an 8-hex suffix
  hashed from the whole (server, tool) pair, so two long names that share a prefix still differ;
* reversible: :class:`ToolNameTable` looks calls up by exposed name and returns the
  (server, original tool name) pair — never by tool name alone, so two servers' ``search`` tools
  cannot be confused.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

from gateway.errors import ConfigError

EXPOSED_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_BAD = re.compile(r"[^a-zA-Z0-9_-]+")
SEPARATOR = "__"
MAX_LEN = 64


def exposed_name(server: str, tool: str) -> str:
    """The name under which ``tool`` of ``server`` is offered to clients and models.

    ``<server>__<tool>`` when that fits ``^[a-zA-Z0-9_-]{1,64}$``; otherwise both parts with
    bad characters replaced by ``_``, shortened, plus ``_`` and 8 hex characters of
    sha256(server + NUL + tool). Always matches :data:`EXPOSED_NAME`.
    """
    plain = f"{server}{SEPARATOR}{tool}"
    # The first "__" must mark the end of the server id, or two pairs could meet
    # ("a" + "b__c" and "a__b" + "c"): such server ids always take the hashed form.
    server_is_plain = SEPARATOR not in server and not server.endswith("_")
    if server_is_plain and EXPOSED_NAME.match(plain):
        return plain
    digest = hashlib.sha256(f"{server}\0{tool}".encode()).hexdigest()[:8]
    s = _BAD.sub("_", server).strip("_") or "server"
    t = _BAD.sub("_", tool).strip("_") or "tool"
    room = MAX_LEN - len(SEPARATOR) - 1 - len(digest)
    # keep a readable part of both: the server gets at most a third of the room
    s = s[: max(4, min(len(s), room // 3))]
    t = t[: room - len(s)]
    return f"{s}{SEPARATOR}{t}_{digest}"


@dataclass
class ToolNameTable:
    """Exposed name <-> (server id, original tool name) for every registered tool.

    ``namespaced`` False exposes tools under their own names; two servers offering the same
    name are then a configuration error at registration (handed case C26), never resolved
    arbitrarily.
    """

    namespaced: bool = True
    _by_exposed: dict[str, tuple[str, str]] = field(default_factory=dict)
    _by_pair: dict[tuple[str, str], str] = field(default_factory=dict)

    def register(self, server: str, tool: str) -> str:
        """Add one tool; returns its exposed name.

        Raises :class:`ConfigError` when namespacing is off and another server already
        exposes a tool of that name, or when an (extremely unlikely) hash collision would make
        two pairs share an exposed name.
        """
        pair = (server, tool)
        if pair in self._by_pair:
            return self._by_pair[pair]
        name = exposed_name(server, tool) if self.namespaced else tool
        if not self.namespaced and not EXPOSED_NAME.match(name):
            raise ConfigError(
                f"MCP server {server!r}: tool name {tool!r} does not fit ^[a-zA-Z0-9_-]{{1,64}}$ and "
                "namespacing is off"
            )
        other = self._by_exposed.get(name)
        if other is not None and other != pair:
            raise ConfigError(
                f"MCP tool name collision: {name!r} is exposed by server {other[0]!r} (tool {other[1]!r}) "
                f"and server {server!r} (tool {tool!r}); turn namespacing on or deny one of them"
            )
        self._by_exposed[name] = pair
        self._by_pair[pair] = name
        return name

    def unregister_server(self, server: str) -> None:
        """Drop every tool of ``server`` (when it is removed or reloaded)."""
        for pair in [p for p in self._by_pair if p[0] == server]:
            del self._by_exposed[self._by_pair.pop(pair)]

    def resolve(self, exposed: str) -> tuple[str, str] | None:
        """(server id, original tool name) for an exposed name, or None if unknown."""
        return self._by_exposed.get(exposed)

    def names(self) -> list[str]:
        """All exposed names, in registration order."""
        return list(self._by_exposed)
