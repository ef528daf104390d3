"""Trust tiers of MCP tools (invariant 6: the extension boundary is the trust boundary).

A tool's tier is decided when its server is registered (its tool list read), never when a call
arrives; only the workspace check of ``allow_in_workspace`` looks at a call's arguments. Tiers
follow the damage a call can do, not where the server came from:

* ``allow``: read-only tools (``readOnlyHint: true``). Never asks.
* ``allow_in_workspace``: writes that are neither destructive nor open-world and that declare
  path-like arguments; a call runs without asking when every such argument lies inside a
  configured workspace root, and asks otherwise.
* ``confirm``: destructive, open-world (network) or unplaceable writes; the client is asked,
  shown exactly what will run.
* ``deny``: only by admin override; the tool is neither listed nor callable.

Annotations are untrusted hints (MCP spec 2025-11-25, "ToolAnnotations"); a missing hint counts
as the worst case: not read-only, destructive, open-world. An admin override (``trust`` in the
server's config) wins over the annotations.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import orjson
from mcp.types import Tool

from mcp_servers.config import TrustTier

_PATHY = re.compile(
    r"(^|_)(path|paths|file|files|filename|dir|directory|folder|root|repo|repository|cwd|"
    r"dest|destination|source|src|target)($|_)|path$|file$|dir$",
    re.IGNORECASE,
)


MAX_PATH_BYTES = 4095
"""The longest path argument judged, in UTF-8 bytes (Linux ``PATH_MAX`` is 4096 with the NUL):
no file can be opened by a longer one."""


@dataclass(frozen=True)
class Classification:
    """A tool's tier, why, and the names of its path-like string arguments."""

    tier: TrustTier
    reason: str
    path_args: tuple[str, ...] = ()
    read_only: bool = False
    destructive: bool = True
    open_world: bool = True


def path_arguments(input_schema: dict[str, Any]) -> tuple[str, ...]:
    """Top-level string (or string-array) properties of ``input_schema`` whose name looks like a
    filesystem path (``path``, ``file_path``, ``repo_path``, ``directory``, ``source``, ...)."""
    props = input_schema.get("properties") or {}
    out = []
    for name, schema in props.items():
        if not isinstance(schema, dict):
            continue
        kind = schema.get("type")
        is_str = kind == "string" or (kind == "array" and (schema.get("items") or {}).get("type") == "string")
        if is_str and _PATHY.search(name):
            out.append(name)
    return tuple(out)


def classify(tool: Tool, override: TrustTier | None = None) -> Classification:
    """The tier of ``tool`` from its annotations (missing hint = worst case) and an optional
    admin ``override``, which wins."""
    ann = tool.annotations
    read_only = bool(ann is not None and ann.read_only_hint is True)
    destructive = not (ann is not None and ann.destructive_hint is False)
    open_world = not (ann is not None and ann.open_world_hint is False)
    paths = path_arguments(tool.input_schema or {})

    def made(tier: TrustTier, reason: str) -> Classification:
        return Classification(tier, reason, paths, read_only, destructive, open_world)

    if override is not None:
        return made(override, f"admin override: {override}")
    if read_only:
        return made("allow", "read-only (readOnlyHint)")
    if destructive:
        missing = ann is None or ann.destructive_hint is None
        return made(
            "confirm",
            "no destructiveHint: counted as destructive" if missing else "destructive (destructiveHint)",
        )
    if open_world:
        missing = ann is None or ann.open_world_hint is None
        return made(
            "confirm", "no openWorldHint: counted as open-world" if missing else "open-world (openWorldHint)"
        )
    if paths:
        return made("allow_in_workspace", f"writes; path arguments {', '.join(paths)}")
    return made("confirm", "writes and declares no path argument to place inside the workspace")


@dataclass(frozen=True)
class CallDecision:
    """What to do with one call: ``run``, ``ask`` (confirmation needed) or ``refuse``;
    ``reason`` says why and ``action`` is the human-readable sentence of what will happen."""

    outcome: Literal["run", "ask", "refuse"]
    tier: TrustTier
    reason: str
    action: str
    outside: list[str] = field(default_factory=list)


PENDING_ADDED = "appeared after registration; pending admin review"
PENDING_CHANGED = "changed after registration; pending admin review"


def pending(
    tool: Tool, change: Literal["added", "changed"], override: TrustTier | None = None
) -> Classification:
    """The tier of a tool its server listed after registration (``added``) or whose
    definition changed since it was accepted (``changed``): the worst case, ``confirm``, until
    an admin accepts it, whatever it declares; an admin ``override`` still wins."""
    if override is not None:
        return classify(tool, override)
    reason = PENDING_ADDED if change == "added" else PENDING_CHANGED
    return Classification("confirm", reason, path_arguments(tool.input_schema or {}), False, True, True)


def _path_problem(value: Any) -> str | None:
    """Why ``value`` cannot be a file path, or None."""
    if not isinstance(value, str):
        return f"must be a string (a file path), got {_json_type(value)}"
    if "\0" in value:
        return "holds a NUL byte, which no file path can"
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError:
        return "is not valid Unicode (a lone surrogate), which no file path can hold"
    if size > MAX_PATH_BYTES:
        return f"is {size:,} bytes long, over the longest file path ({MAX_PATH_BYTES:,} bytes)"
    return None


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    names = {int: "integer", float: "number", str: "string", list: "array", dict: "object"}
    return next((n for t, n in names.items() if isinstance(value, t)), type(value).__name__)


def path_argument_errors(cls: Classification, arguments: dict[str, Any]) -> list[str]:
    """Why path-like arguments of a call cannot be file paths, for a tool whose tier judges
    paths (``allow_in_workspace``; other tiers: none): ``"arguments.<name>: <why>"``
    (``arguments.<name>[i]`` for an item of a list) for a value that is not a string (or, for
    a list, not a list of strings), holds a NUL byte or a lone surrogate, or is longer than
    :data:`MAX_PATH_BYTES`. Absent and null arguments are not judged. Empty: every path can be
    placed by :func:`decide`."""
    if cls.tier != "allow_in_workspace":
        return []
    errors = []
    for name in cls.path_args:
        value = arguments.get(name)
        items = list(enumerate(value)) if isinstance(value, list) else [(None, value)]
        for i, item in items:
            if item is None and i is None:
                continue
            why = _path_problem(item)
            if why is not None:
                errors.append(f"arguments.{name}{'' if i is None else f'[{i}]'}: {why}")
    return errors


def _inside(path: str, roots: list[Path], base: str | None) -> bool:
    # Many servers expand "~" and "$VAR" themselves (the filesystem server expands "~"): such a
    # path may point anywhere, so it never counts as inside the workspace (the call asks).
    if path.startswith("~") or "$" in path or _path_problem(path) is not None:
        return False
    p = Path(path)
    if not p.is_absolute():
        if base is None:  # where the server resolves it is unknown: never assumed inside
            return False
        p = Path(base) / p
    try:
        real = Path(os.path.realpath(p))
    except (ValueError, OSError):  # not a path this system can resolve: never assumed inside
        return False
    return any(real == r or r in real.parents for r in roots)


def _json_text(value: Any) -> str:
    """JSON text of any value a JSON parser returns (orjson refuses integers over 64 bits and
    strings with lone surrogates; the standard library writes both)."""
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return json.dumps(value, ensure_ascii=True, default=repr)


def _render_value(value: Any, limit: int = 200) -> str:
    text = value if isinstance(value, str) else _json_text(value)
    shown = _json_text(text) if isinstance(value, str) else text
    if len(shown) > limit:
        return f"{shown[:limit]}… ({len(shown) - limit} more characters)"
    return shown


def render_action(server: str, tool: str, arguments: dict[str, Any]) -> str:
    """The exact action, e.g. ``will run tool "git_reset" of MCP server "git" with
    mode="hard", target="HEAD~3", repo_path="/srv/app"`` (values JSON-rendered, each cut at 200
    characters with the count of what was cut)."""
    if arguments:
        args = ", ".join(f"{k}={_render_value(v)}" for k, v in arguments.items())
        return f'will run tool "{tool}" of MCP server "{server}" with {args}'
    return f'will run tool "{tool}" of MCP server "{server}" with no arguments'


def decide(
    server: str,
    tool: str,
    cls: Classification,
    arguments: dict[str, Any],
    workspace_roots: list[str],
    path_base: str | None = None,
) -> CallDecision:
    """The decision for one call of a classified tool.

    ``allow_in_workspace`` runs when every path-like argument present resolves (symlinks
    followed) inside one of ``workspace_roots``; otherwise it asks, naming the paths outside.
    A relative path is resolved the way the server will: against ``path_base`` (absolute; the
    stdio server's working directory or its declared ``relative_paths_base``:
    :func:`mcp_servers.registry.path_base`); with no ``path_base`` (a stdio server without a
    configured ``cwd`` runs in the gateway's own directory; an HTTP server on another machine)
    a relative path never counts as inside, and the call asks.
    """
    action = render_action(server, tool, arguments)
    if cls.tier == "deny":
        return CallDecision("refuse", cls.tier, cls.reason, action)
    if cls.tier == "allow":
        return CallDecision("run", cls.tier, cls.reason, action)
    if cls.tier == "confirm":
        return CallDecision("ask", cls.tier, cls.reason, action)
    roots = [Path(os.path.realpath(r)) for r in workspace_roots]
    outside: list[str] = []
    for name in cls.path_args:
        value = arguments.get(name)
        values = value if isinstance(value, list) else [value] if value is not None else []
        outside += [str(v) for v in values if not isinstance(v, str) or not _inside(v, roots, path_base)]
    if not roots:
        return CallDecision("ask", cls.tier, "writes, and no workspace root is configured", action)
    if outside:
        where = ", ".join(str(r) for r in roots)
        unplaced = path_base is None and any(not Path(v).is_absolute() and v[:1] not in "~$" for v in outside)
        why = (
            "; a relative path is resolved where the server runs, which is not known to be in the workspace"
            if unplaced
            else ""
        )
        return CallDecision(
            "ask",
            cls.tier,
            f"writes outside the workspace ({', '.join(outside)} not under {where}{why})",
            action,
            outside=outside,
        )
    return CallDecision("run", cls.tier, "writes inside the workspace", action)


def confirmation_message(decision: CallDecision) -> str:
    """The text a person is shown: the exact action and why it needs approval."""
    return f"Turnstile {decision.action}. It needs your approval because it {_because(decision.reason)}."


def _because(reason: str) -> str:
    if reason.startswith("admin override"):
        return "is marked confirm by the gateway's configuration"
    if reason.startswith("writes"):
        return reason
    if reason in (PENDING_ADDED, PENDING_CHANGED):
        what = "was added to" if reason == PENDING_ADDED else "changed its definition on"
        return (
            f"{what} its MCP server after the server was registered, and an administrator has not "
            "reviewed it yet"
        )
    if reason.startswith("no "):  # "no destructiveHint: counted as destructive"
        hint, _, verdict = reason[3:].partition(": counted as ")
        return f"declares no {hint}, so it counts as {verdict}"
    return f"is {reason}"


def preapproval_hint(server: str, tool: str) -> str:
    """How to pre-approve a tool in config, for a client that cannot be asked."""
    return (
        f"To allow it without asking, set `trust: {{{tool}: allow}}` on MCP server {server!r} in the gateway "
        "configuration (or POST the server again to /admin/mcp/servers with that override)."
    )
