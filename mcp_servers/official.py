"""The official MCP Registry's ``server.json`` (schema 2025-12-11,
https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json) turned into a
:class:`mcp_servers.config.McpServerSpec`, its version pinned.

``packages`` become a stdio command that runs exactly the published version:

* ``npm``: ``npx -y [runtime args] <identifier>@<version> [package args]``;
* ``pypi``: ``uvx [runtime args] <identifier>==<version> [package args]``;
* ``oci``: ``docker run -i --rm [runtime args] <identifier>[:<version>] [package args]`` (an
  identifier that already names an exact tag or a digest is used as it is, without a version);
* ``nuget``: ``dnx <identifier>@<version> --yes [-- package args]``.

Only an exact version of a name valid in its registry runs: a range, tag, alias, URL or path
as the version, an identifier starting with ``-`` or outside its registry's grammar, a
``runtimeHint`` other than the registry's runner (``npx``, ``uvx``, ``docker``, ``dnx``) and a
runtime argument outside a short allow list (``_RUNTIME_ARGUMENTS``) are refused by name. Arguments:
a positional one is its ``value`` (else ``default``); a named one is ``--flag value`` (or the
flag alone without a value); ``{curly}`` identifiers are replaced from the argument's
``variables`` and from ``values`` (``turnstile mcp add --set name=value``); a required
argument without a value is an error naming it. Environment variables: a fixed, non-secret
``value`` is set (``env``); a secret or one without a value is passed through from the
gateway's environment (``env_passthrough``, the same name) — no secret is ever written.

``remotes`` (``streamable-http``) become an HTTP transport at the URL (``{variables}``
substituted from ``values``; http(s) only, not a link-local or metadata host unless the admin
policy's ``url_hosts`` allows it); each header is read from an environment variable
(``headers_env``: ``header_env`` names it, else ``<ID>_<HEADER>`` upper-cased). ``sse``
remotes, ``mcpb`` and ``on_device`` packages and packages whose own transport is not
``stdio`` are refused by name (the gateway runs stdio and connects to streamable HTTP only).

The server id is ``id`` or the name's last segment (``io.github.acme/weather`` -> ``weather``),
made a valid id; the whole document is kept on the spec (``server_json``), which the registry
API (:mod:`mcp_servers.registry_api`) serves back.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from packaging.version import InvalidVersion, Version

from mcp_servers.admin_policy import host_allowed
from mcp_servers.config import SERVER_ID, McpServerSpec

SCHEMA_URL = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"
NAME = re.compile(r"^[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+$")
_VAR = re.compile(r"\{([A-Za-z0-9_.-]+)\}")
_DEFAULT_COMMAND = {"npm": "npx", "pypi": "uvx", "oci": "docker", "nuget": "dnx"}
# Exact versions only (a range, tag, alias, URL or path is refused). npm: semver 2.0.0
# (https://semver.org, "MAJOR.MINOR.PATCH[-prerelease][+build]"); NuGet: semver with an optional
# fourth part (https://learn.microsoft.com/nuget/concepts/package-versioning); PyPI: a PEP 440
# version in its normal form (packaging.version.Version); OCI: a tag other than ``latest``.
_SEMVER = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(-(0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*)(\.(0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*))*)?"
    r"(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$"
)
_NUGET_VERSION = re.compile(r"^\d+\.\d+\.\d+(\.\d+)?(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z.-]+)?$")
_OCI_TAG = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")
# Identifiers per registry: npm (https://github.com/npm/validate-npm-package-name, at most 214
# characters), PyPI (PEP 508 name), NuGet (package id, at most 100 characters), OCI (the
# distribution spec's reference grammar: [host[:port]/]path[:tag][@digest]).
_NPM_NAME = re.compile(r"^(@[a-z0-9][a-z0-9._~-]*/)?[a-z0-9][a-z0-9._~-]*$")
_PYPI_NAME = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$")
_NUGET_ID = re.compile(r"^[A-Za-z0-9_]+([.-][A-Za-z0-9_]+)*$")
_OCI_PATH = r"[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*"
_OCI_REF = re.compile(
    rf"^((?P<host>[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?(:\d+)?)/)?"
    rf"(?P<path>{_OCI_PATH}(/{_OCI_PATH})*)"
    r"(:(?P<tag>[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}))?"
    r"(@(?P<digest>[a-z0-9]+([+._-][a-z0-9]+)*:[a-fA-F0-9]{32,}))?$"
)
_RUNTIME_HINTS = {"npm": {"npx"}, "pypi": {"uvx"}, "oci": {"docker"}, "nuget": {"dnx"}}
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_ENV_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(=.*)?$")
# Runtime arguments go before the package reference, where they configure the runner itself
# (docker --privileged / -v / --network, npx --call, uvx --from / --with): only these flags are
# accepted; the value each takes (None: a flag without a value) must match the pattern.
_RUNTIME_ARGUMENTS: dict[str, dict[str, re.Pattern[str] | None]] = {
    "npm": {"--prefer-offline": None, "--quiet": None, "-q": None},
    "pypi": {"--quiet": None, "-q": None, "--offline": None},
    "oci": {"-e": _ENV_ASSIGNMENT, "--env": _ENV_ASSIGNMENT, "--read-only": None, "--init": None},
    "nuget": {},
}
# Link-local and cloud metadata addresses (169.254.169.254, AWS's fd00:ec2::254).
_METADATA_NETWORKS = [ipaddress.ip_network("169.254.0.0/16"), ipaddress.ip_network("fe80::/10")]
_METADATA_ADDRESSES = {ipaddress.ip_address("fd00:ec2::254")}
_METADATA_HOSTS = {"metadata.google.internal", "metadata"}


class ServerJsonError(ValueError):
    """A ``server.json`` this gateway cannot register; the message names the field."""


def is_server_json(doc: Any) -> bool:
    """Whether ``doc`` looks like an official ``server.json`` (a ``name`` with a namespace and
    a ``version``) rather than a gateway spec (``id``, ``transport``)."""
    return (
        isinstance(doc, dict)
        and "transport" not in doc
        and isinstance(doc.get("name"), str)
        and "version" in doc
    )


def server_id(name: str) -> str:
    """A gateway server id from an official name: its last segment, characters outside
    ``[a-zA-Z0-9._-]`` replaced by ``-``, ``__`` collapsed, at most 64 characters."""
    tail = name.rsplit("/", 1)[-1]
    out = re.sub(r"[^a-zA-Z0-9._-]", "-", tail).strip("-_.")
    out = re.sub(r"_{2,}", "_", out).rstrip("_")[:64] or "server"
    return out if out[0].isalnum() else f"s{out}"[:64]


def _fill(text: str, variables: dict[str, Any], values: dict[str, str], where: str) -> str:
    def one(m: re.Match[str]) -> str:
        key = m.group(1)
        if key in values:
            return values[key]
        var = variables.get(key)
        if isinstance(var, dict):
            found = var.get("value", var.get("default"))
            if isinstance(found, str):
                return found
        raise ServerJsonError(f"{where}: no value for {{{key}}} (turnstile mcp add --set {key}=VALUE)")

    return _VAR.sub(one, text)


def _argument(arg: dict[str, Any], values: dict[str, str], where: str) -> list[str]:
    kind = arg.get("type")
    variables = arg.get("variables") or {}
    label = arg.get("valueHint") or arg.get("name") or ""
    value = values.get(label) if label in values else arg.get("value", arg.get("default"))
    if value is not None and not isinstance(value, str):
        raise ServerJsonError(f"{where}.value: expected a string")
    if value is not None:
        value = _fill(value, variables, values, where)
    if kind == "positional":
        if value is None:
            if arg.get("isRequired"):
                raise ServerJsonError(
                    f"{where}: required argument {label!r} has no value (--set {label}=VALUE)"
                )
            return []
        return [value]
    if kind == "named":
        name = arg.get("name")
        if not isinstance(name, str) or not name:
            raise ServerJsonError(f"{where}.name: a named argument needs its flag")
        if value is None and arg.get("isRequired") and arg.get("format", "string") != "boolean":
            raise ServerJsonError(f"{where}: required argument {name!r} has no value (--set {name}=VALUE)")
        return [name] if value is None else [name, value]
    raise ServerJsonError(f"{where}.type: expected positional or named, got {kind!r}")


def _arguments(items: Any, values: dict[str, str], where: str) -> list[str]:
    if items is None:
        return []
    if not isinstance(items, list):
        raise ServerJsonError(f"{where}: expected a list")
    out: list[str] = []
    for i, arg in enumerate(items):
        if not isinstance(arg, dict):
            raise ServerJsonError(f"{where}[{i}]: expected an object")
        out += _argument(arg, values, f"{where}[{i}]")
    return out


def _exact(kind: str, version: str) -> bool:
    if kind == "npm":
        return bool(_SEMVER.match(version))
    if kind == "nuget":
        return bool(_NUGET_VERSION.match(version))
    if kind == "oci":
        return bool(_OCI_TAG.match(version)) and version.lower() != "latest"
    if "*" in version:
        return False
    try:
        return str(Version(version)) == version
    except InvalidVersion:
        return False


def _pinned(kind: str, version: Any, where: str) -> str:
    if not isinstance(version, str) or not version or not _exact(kind, version):
        raise ServerJsonError(
            f"{where}: a {kind} package needs one exact version (no range, tag, alias, URL or path), "
            f"got {version!r}"
        )
    return version


def _identifier(kind: str, ident: Any, version: Any, where: str) -> str:
    """The package reference (``name@version``, ``name==version``, ``image:tag``) of a checked
    ``identifier`` and ``version``; raises :class:`ServerJsonError` naming either."""
    if not isinstance(ident, str) or not ident:
        raise ServerJsonError(f"{where}.identifier: missing")
    if ident.startswith("-"):
        raise ServerJsonError(
            f"{where}.identifier: {ident!r} starts with '-' (it would be read as an option)"
        )
    vwhere = f"{where}.version"
    if kind == "npm":
        if len(ident) > 214 or not _NPM_NAME.match(ident):
            raise ServerJsonError(f"{where}.identifier: {ident!r} is not an npm package name")
        return f"{ident}@{_pinned(kind, version, vwhere)}"
    if kind == "pypi":
        if not _PYPI_NAME.match(ident):
            raise ServerJsonError(f"{where}.identifier: {ident!r} is not a PyPI project name (PEP 508)")
        return f"{ident}=={_pinned(kind, version, vwhere)}"
    if kind == "nuget":
        if len(ident) > 100 or not _NUGET_ID.match(ident):
            raise ServerJsonError(f"{where}.identifier: {ident!r} is not a NuGet package id")
        return f"{ident}@{_pinned(kind, version, vwhere)}"
    ref = _OCI_REF.match(ident)
    if ref is None:
        raise ServerJsonError(f"{where}.identifier: {ident!r} is not an OCI image reference")
    tag, digest = ref.group("tag"), ref.group("digest")
    if tag is None and digest is None:
        return f"{ident}:{_pinned(kind, version, vwhere)}"
    if version is not None:
        raise ServerJsonError(
            f"{where}.identifier: {ident!r} already names a tag or digest; with version {version!r} "
            "give the image without it"
        )
    if digest is None:
        _pinned(kind, tag, f"{where}.identifier tag")
    return ident


def _runtime_arguments(kind: str, items: Any, values: dict[str, str], where: str) -> list[str]:
    """``runtimeArguments``: only the flags in ``_RUNTIME_ARGUMENTS`` for ``kind``, each with a
    value of its pattern; anything else is refused naming it."""
    allowed = _RUNTIME_ARGUMENTS[kind]
    if items is None:
        return []
    if not isinstance(items, list):
        raise ServerJsonError(f"{where}: expected a list")
    out: list[str] = []
    for i, part in enumerate(items):
        at = f"{where}[{i}]"
        if not isinstance(part, dict):
            raise ServerJsonError(f"{at}: expected an object")
        words = _argument(part, values, at)
        if not words:
            continue
        flag = words[0]
        if part.get("type") != "named" or flag not in allowed:
            raise ServerJsonError(
                f"{at}: runtime argument {flag!r} is not allowed for {kind} "
                f"(allowed: {', '.join(sorted(allowed)) or 'none'})"
            )
        pattern = allowed[flag]
        if len(words) > 1 and (pattern is None or not pattern.match(words[1]) or words[1].startswith("-")):
            raise ServerJsonError(f"{at}: runtime argument {flag!r} does not take the value {words[1]!r}")
        if len(words) == 1 and pattern is not None:
            raise ServerJsonError(f"{at}: runtime argument {flag!r} needs a value")
        out += words
    return out


def _check_url(url: str, allow_hosts: Sequence[str], where: str) -> None:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise ServerJsonError(f"{where}: scheme {parts.scheme!r} is not allowed (http and https are)")
    host = (parts.hostname or "").lower()
    if not host:
        raise ServerJsonError(f"{where}: {url!r} has no host")
    if allow_hosts and host_allowed(url, list(allow_hosts)):
        return
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        address = None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    if host in _METADATA_HOSTS or (
        address is not None
        and (address in _METADATA_ADDRESSES or any(address in net for net in _METADATA_NETWORKS))
    ):
        raise ServerJsonError(
            f"{where}: host {host!r} is a link-local or cloud metadata address "
            "(allow it in mcp.admin_servers.url_hosts to use it)"
        )


def package_transport(pkg: dict[str, Any], values: dict[str, str], where: str) -> dict[str, Any]:
    """The stdio transport (as a spec dict) that runs ``pkg`` at its pinned version."""
    kind = pkg.get("registryType")
    own = (pkg.get("transport") or {}).get("type", "stdio")
    if own != "stdio":
        raise ServerJsonError(
            f"{where}.transport.type: {own!r} packages are not supported (the gateway runs stdio packages)"
        )
    if kind not in _DEFAULT_COMMAND:
        raise ServerJsonError(
            f"{where}.registryType: {kind!r} is not supported (npm, pypi, oci and nuget packages are)"
        )
    reference = _identifier(kind, pkg.get("identifier"), pkg.get("version"), where)
    runtime = _runtime_arguments(kind, pkg.get("runtimeArguments"), values, f"{where}.runtimeArguments")
    args = _arguments(pkg.get("packageArguments"), values, f"{where}.packageArguments")
    hint = pkg.get("runtimeHint")
    if hint is not None and hint not in _RUNTIME_HINTS[kind]:
        raise ServerJsonError(
            f"{where}.runtimeHint: {hint!r} is not allowed for {kind} packages "
            f"(allowed: {', '.join(sorted(_RUNTIME_HINTS[kind]))})"
        )
    command = _DEFAULT_COMMAND[kind]
    if kind == "npm":
        argv = ["-y", *runtime, reference, *args]
    elif kind == "pypi":
        argv = [*runtime, reference, *args]
    elif kind == "oci":
        argv = ["run", "-i", "--rm", *runtime, reference, *args]
    else:  # nuget
        argv = [*runtime, reference, "--yes"]
        argv += ["--", *args] if args else []
    env: dict[str, str] = {}
    passthrough: list[str] = []
    for i, var in enumerate(pkg.get("environmentVariables") or []):
        name = var.get("name") if isinstance(var, dict) else None
        if not isinstance(name, str) or not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", name):
            raise ServerJsonError(f"{where}.environmentVariables[{i}].name: not an environment variable name")
        fixed = var.get("value")
        if isinstance(fixed, str) and not var.get("isSecret") and not _VAR.search(fixed):
            env[name] = fixed
        else:
            passthrough.append(name)
    return {"type": "stdio", "command": command, "args": argv, "env": env, "env_passthrough": passthrough}


def remote_transport(
    remote: dict[str, Any],
    sid: str,
    values: dict[str, str],
    header_env: dict[str, str],
    where: str,
    allow_hosts: Sequence[str] = (),
) -> dict[str, Any]:
    """The streamable-HTTP transport (as a spec dict) of ``remote``. The URL must be http(s) and,
    unless its host matches ``allow_hosts`` (``mcp.admin_servers.url_hosts`` entries), not a
    link-local or cloud metadata address; raises :class:`ServerJsonError` naming the field."""
    kind = remote.get("type")
    if kind != "streamable-http":
        raise ServerJsonError(f"{where}.type: {kind!r} remotes are not supported (streamable-http is)")
    url = remote.get("url")
    if not isinstance(url, str):
        raise ServerJsonError(f"{where}.url: missing")
    url = _fill(url, {}, values, f"{where}.url")
    _check_url(url, allow_hosts, f"{where}.url")
    headers: dict[str, str] = {}
    for i, h in enumerate(remote.get("headers") or []):
        name = h.get("name") if isinstance(h, dict) else None
        if not isinstance(name, str) or not name:
            raise ServerJsonError(f"{where}.headers[{i}].name: missing")
        default = re.sub(r"[^A-Z0-9]+", "_", f"{sid}_{name}".upper()).strip("_")
        headers[name] = header_env.get(name, default)
    return {"type": "streamable_http", "url": url, "headers_env": headers}


def spec_from_server_json(
    doc: dict[str, Any],
    *,
    sid: str | None = None,
    prefer: str = "package",
    index: int | None = None,
    values: dict[str, str] | None = None,
    header_env: dict[str, str] | None = None,
    allow_hosts: Sequence[str] = (),
) -> McpServerSpec:
    """The gateway spec of an official ``server.json`` ``doc`` (see the module docstring).
    ``prefer``: ``package`` (the first stdio package, else the first remote) or ``remote``;
    ``index`` picks one package or remote by position. Raises :class:`ServerJsonError` naming
    the field (a pydantic ``ValidationError`` for an id the spec refuses). ``allow_hosts``: the
    admin policy's ``url_hosts``, which may allow a remote on a link-local or metadata host."""
    values = values or {}
    name = doc.get("name")
    if not isinstance(name, str) or not NAME.match(name):
        raise ServerJsonError(f"name: expected reverse-DNS 'namespace/name', got {name!r}")
    version = doc.get("version")
    if not isinstance(version, str) or not (_exact("npm", version) or _exact("pypi", version)):
        raise ServerJsonError(f"version: expected one exact version (semver or PEP 440), got {version!r}")
    chosen = sid or server_id(name)
    if not SERVER_ID.match(chosen):
        raise ServerJsonError(f"id: {chosen!r} is not a valid server id (pass --id)")
    packages = doc.get("packages") or []
    remotes = doc.get("remotes") or []
    if not isinstance(packages, list) or not isinstance(remotes, list):
        raise ServerJsonError("packages and remotes must be lists")
    order = [("packages", packages), ("remotes", remotes)]
    if prefer == "remote":
        order.reverse()
    transport: dict[str, Any] | None = None
    problems: list[str] = []
    for field, items in order:
        picks = [index] if index is not None else range(len(items))
        for i in picks:
            if i is None or not 0 <= i < len(items):
                continue
            where = f"{field}[{i}]"
            try:
                if field == "packages":
                    transport = package_transport(items[i], values, where)
                else:
                    transport = remote_transport(
                        items[i], chosen, values, header_env or {}, where, allow_hosts
                    )
            except ServerJsonError as err:
                problems.append(str(err))
                if index is not None:
                    raise
                continue
            break
        if transport is not None:
            break
    if transport is None:
        why = "; ".join(problems) if problems else "it has no packages or remotes"
        raise ServerJsonError(f"no runnable package or remote: {why}")
    description = doc.get("title") or doc.get("description")
    return McpServerSpec.model_validate(
        {
            "id": chosen,
            "transport": transport,
            "description": description if isinstance(description, str) else None,
            "server_json": doc,
        }
    )
