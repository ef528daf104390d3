"""What a server registered through the admin API may use (``mcp.admin_servers``,
:class:`mcp_servers.config.AdminServerPolicy`).

The admin API is a narrower door than the configuration file: whoever holds the admin key may
add servers, but may not hand them the operator's environment secrets, point them at internal
addresses or start arbitrary processes, unless the configuration lists exactly what is
allowed. Each list defaults to empty (nothing allowed):

* every environment variable an admin server names (``env_passthrough``, ``headers_env``
  values, ``env`` keys) must be on ``env``;
* a streamable HTTP server's URL host must match ``url_hosts``;
* a stdio server's ``command`` must be on ``commands`` (as written, or the same resolved
  executable). The child still gets only the SDK's minimal environment plus what is listed:
  it never inherits the gateway's secrets.

:func:`violations` is checked when a server is posted (refused with a 400 naming each field
and value) and again at start-up for rows persisted earlier (a row that now violates the
lists is not started; its status says why).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from fnmatch import fnmatchcase
from urllib.parse import urlsplit

from mcp_servers.config import AdminServerPolicy, HttpTransport, McpServerSpec, StdioTransport
from mcp_servers.targets import resolve_command


@dataclass(frozen=True)
class Violation:
    """One use the policy does not allow: the spec ``field`` (a dotted path), the ``value``
    and a sentence saying which list would have to hold it."""

    field: str
    value: str
    message: str


class AdminPolicyViolation(Exception):
    """An admin server spec uses what ``mcp.admin_servers`` does not allow."""

    def __init__(self, server: str, found: list[Violation]) -> None:
        super().__init__(f"MCP server {server!r} is not allowed: " + "; ".join(v.message for v in found))
        self.violations = found


def _listed(values: list[str]) -> str:
    return ", ".join(values) if values else "none"


def _env(field: str, name: str, policy: AdminServerPolicy) -> Violation | None:
    if name in policy.env:
        return None
    return Violation(
        field,
        name,
        f"{field}: environment variable {name!r} is not on mcp.admin_servers.env "
        f"(allowed: {_listed(policy.env)})",
    )


def _host_entry(entry: str) -> tuple[str, int | None]:
    """``(host glob, port or None)`` of a ``url_hosts`` entry."""
    entry = entry.strip().lower()
    if entry.startswith("["):
        host, _, rest = entry[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
    elif entry.count(":") == 1:
        host, _, port = entry.partition(":")
    else:
        host, port = entry, ""
    return host, int(port) if port.isdigit() else None


def host_allowed(url: str, allowed: list[str]) -> bool:
    """Whether the host (and port) of ``url`` matches one of ``allowed`` (see
    :class:`~mcp_servers.config.AdminServerPolicy`)."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    if not host:
        return False
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return False
    for entry in allowed:
        pattern, want = _host_entry(entry)
        if fnmatchcase(host, pattern) and (want is None or want == port):
            return True
    return False


def _same_command(command: str, allowed: list[str]) -> bool:
    if command in allowed:
        return True
    resolved = resolve_command(command)
    if resolved is None:
        return False
    real = os.path.realpath(resolved)
    for entry in allowed:
        found = resolve_command(entry)
        if found is not None and os.path.realpath(found) == real:
            return True
    return False


def violations(spec: McpServerSpec, policy: AdminServerPolicy) -> list[Violation]:
    """Every use of ``spec`` (an admin-registered server) that ``policy`` does not allow, in
    field order; empty when it may run."""
    out: list[Violation | None] = []
    t = spec.transport
    if isinstance(t, StdioTransport):
        if not _same_command(t.command, policy.commands):
            out.append(
                Violation(
                    "transport.command",
                    t.command,
                    f"transport.command: command {t.command!r} is not on mcp.admin_servers.commands "
                    f"(allowed: {_listed(policy.commands)})",
                )
            )
        out += [_env(f"transport.env_passthrough[{i}]", n, policy) for i, n in enumerate(t.env_passthrough)]
        out += [_env(f"transport.env.{n}", n, policy) for n in t.env]
    else:
        assert isinstance(t, HttpTransport)
        if not host_allowed(t.url, policy.url_hosts):
            out.append(
                Violation(
                    "transport.url",
                    t.url,
                    f"transport.url: host of {t.url!r} is not on mcp.admin_servers.url_hosts "
                    f"(allowed: {_listed(policy.url_hosts)})",
                )
            )
        out += [_env(f"transport.headers_env.{h}", n, policy) for h, n in t.headers_env.items()]
        if t.oauth is not None and t.oauth.client_secret_env is not None:
            out.append(_env("transport.oauth.client_secret_env", t.oauth.client_secret_env, policy))
    return [v for v in out if v is not None]
