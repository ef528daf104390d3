"""Configuration of the MCP registry: the ``mcp`` section of the gateway's YAML file.

One :class:`McpServerSpec` per upstream MCP server. The same model validates servers added at
run time through ``POST /admin/mcp/servers``. No secret is ever written in the file: HTTP
headers name the environment variable that holds their value (``headers_env``) and a stdio
child receives only the environment variables on its allow-list (``env_passthrough``) plus the
fixed, non-secret values in ``env``.

Example::

    mcp:
      admin_key_env: TURNSTILE_ADMIN_KEY
      workspace_roots: [./workspace]
      servers:
        - id: time
          transport: {type: stdio, command: mcp-server-time, args: [--local-timezone, UTC]}
        - id: docs
          transport: {type: streamable_http, url: "https://docs.example/mcp",
                      headers_env: {Authorization: DOCS_MCP_AUTH}}
          deny_tools: [delete_page]
          trust: {publish_page: confirm}
"""

from __future__ import annotations

import os
import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

TrustTier = Literal["allow", "allow_in_workspace", "confirm", "deny"]
"""``allow`` (read-only: never asks), ``allow_in_workspace`` (writes allowed when every
path-like argument is inside a workspace root, else ``confirm``), ``confirm`` (the client
is asked, showing the exact action), ``deny`` (never runs, not listed)."""

RESERVED_SERVER_ID = "turnstile"
"""The namespace of the gateway's own MCP tools (``turnstile__search_tools``, ...:
:mod:`mcp_servers.tool_search`): no registered server may take it."""
SERVER_ID = re.compile(r"^(?=.{1,64}$)[a-zA-Z0-9][a-zA-Z0-9.-]*(_[a-zA-Z0-9.-]+)*$")
"""Server ids: no "__" (it separates server and tool in exposed names), no trailing "_"."""
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
DEFAULT_CALL_TIMEOUT_S = 60.0
DEFAULT_OUTPUT_CAP_BYTES = 128 * 1024
# The mcp client refuses one SSE event over 1 MiB (mcp 2.3 ``max_sse_event_size``): a capped
# result must stay well below that to reach HTTP clients at all.
MAX_OUTPUT_CAP_BYTES = 768 * 1024
DEFAULT_MAX_MESSAGE_BYTES = 16 * 1024 * 1024
DEFAULT_MAX_JUNK_LINES = 20
DEFAULT_STDERR_LINE_BYTES = 2048
DEFAULT_STDERR_LINES_PER_S = 20.0
DEFAULT_STDERR_BYTES_PER_S = 16 * 1024


def env_names(names: list[str]) -> list[str]:
    """``names`` unchanged when each is an environment variable name; raises ``ValueError``
    listing those that are not (a pydantic validator's error)."""
    bad = [n for n in names if not _ENV_NAME.match(n)]
    if bad:
        raise ValueError(f"not environment variable names: {bad}")
    return names


WORKSPACE_PLACEHOLDER = "${workspace}"


class StdioTransport(BaseModel):
    """Launch ``command args...`` in ``cwd`` and speak MCP over its stdin/stdout.

    ``${workspace}`` in ``args`` or ``cwd`` is replaced by the absolute path of the first
    workspace root. A bare ``command`` not on ``PATH`` is also looked up beside the gateway's
    own Python (so console scripts of the gateway's environment, e.g. ``mcp-server-time``, run
    without an activated virtual environment).
    """

    model_config = ConfigDict(extra="forbid")

    type: Literal["stdio"] = "stdio"
    command: str = Field(min_length=1)
    args: list[str] = Field(default_factory=list)
    cwd: str | None = None
    env_passthrough: list[str] = Field(
        default_factory=list, description="names of gateway environment variables the child may see"
    )
    env: dict[str, str] = Field(default_factory=dict, description="fixed, non-secret values")
    relative_paths_base: str | None = Field(
        default=None,
        description="the directory this server resolves relative path arguments against, when that is "
        "not its cwd (server-filesystem: its first allowed directory); ${workspace} expanded",
    )

    @field_validator("env_passthrough")
    @classmethod
    def _names(cls, v: list[str]) -> list[str]:
        return env_names(v)


class TokenExchange(BaseModel):
    """Per-user delegation (RFC 8693): a call from a caller that presented a JWT of
    ``mcp.authorization``'s issuer is made with a token the upstream's authorization server
    issues in exchange for the caller's (``subject_token``), for the upstream's resource, with
    ``scope``; the gateway authenticates as the upstream's OAuth client. ``required``: a caller
    without a JWT is refused (else it is served with the gateway's own token)."""

    model_config = ConfigDict(extra="forbid")

    scope: str | None = None
    required: bool = False


class UpstreamOAuth(BaseModel):
    """OAuth 2.1 to a streamable HTTP upstream (the MCP authorization spec, the gateway as the
    client; :mod:`mcp_servers.upstream_oauth`). Discovery runs from the upstream's 401
    (protected-resource metadata, then the authorization server's).

    * ``grant``: ``client_credentials`` (``client_id`` and ``client_secret_env`` needed) or
      ``authorization_code`` (PKCE; an admin opens the authorization URL the server's status
      shows once, the authorization server redirects to ``redirect_uri``, the gateway's
      ``/mcp/oauth/callback``; the client is pre-registered (``client_id``), a client ID
      metadata document (``client_metadata_url``, an https URL) or, neither given, registered
      dynamically).
    * ``client_secret_env``: the environment variable holding the client secret (none: a
      public client); ``token_endpoint_auth_method`` how it is presented, or
      ``private_key_jwt`` (RFC 7523, client credentials only): a JWT assertion signed with the
      PEM private key in ``client_key_env`` (``client_key_alg``, default RS256).
    * ``scope``: asked for; null: as the server's challenge or metadata says.
    * ``issuer``: the authorization server the credentials belong to (tokens are asked only there).
    * ``refresh_margin_s``: a token is renewed this long before it expires (at most half its life).
    * ``token_exchange``: per-user delegation (:class:`TokenExchange`).

    Tokens are stored encrypted (Fernet, key in ``mcp.token_key_env``) in the gateway's database.
    """

    model_config = ConfigDict(extra="forbid")

    grant: Literal["client_credentials", "authorization_code"]
    client_id: str | None = Field(default=None, min_length=1)
    client_secret_env: str | None = None
    token_endpoint_auth_method: Literal[
        "client_secret_basic", "client_secret_post", "none", "private_key_jwt"
    ] = "client_secret_basic"
    client_key_env: str | None = None
    client_key_alg: JwtAlgorithm = "RS256"
    client_metadata_url: str | None = Field(default=None, pattern=r"^https://")
    redirect_uri: str | None = Field(default=None, pattern=r"^https?://")
    scope: str | None = None
    issuer: str | None = Field(default=None, pattern=r"^https?://")
    refresh_margin_s: float = Field(default=60.0, ge=0, le=3600)
    token_exchange: TokenExchange | None = None

    @field_validator("client_secret_env", "client_key_env")
    @classmethod
    def _secret_env(cls, v: str | None) -> str | None:
        if v is not None:
            env_names([v])
        return v

    @model_validator(mode="after")
    def _grant_needs(self) -> UpstreamOAuth:
        signed = self.token_endpoint_auth_method == "private_key_jwt"
        if signed and (self.grant != "client_credentials" or self.client_key_env is None):
            raise ValueError("oauth: private_key_jwt is for client_credentials and needs client_key_env")
        credential = self.client_key_env if signed else self.client_secret_env
        if self.grant == "client_credentials" and (self.client_id is None or credential is None):
            raise ValueError(
                "oauth: client_credentials needs client_id and client_secret_env (or client_key_env)"
            )
        if self.grant == "authorization_code" and self.redirect_uri is None:
            raise ValueError(
                "oauth: authorization_code needs redirect_uri (the gateway's /mcp/oauth/callback)"
            )
        if self.token_exchange is not None and (self.client_id is None or self.client_secret_env is None):
            raise ValueError("oauth: token_exchange needs client_id and client_secret_env")
        return self


class HttpTransport(BaseModel):
    """Streamable HTTP at ``url``; ``headers_env`` maps a header name to the environment
    variable holding its value (the gateway's own upstream credential, never a client's);
    ``oauth``: the gateway signs in to the upstream with OAuth (:class:`UpstreamOAuth`)."""

    model_config = ConfigDict(extra="forbid")

    type: Literal["streamable_http"] = "streamable_http"
    url: str = Field(pattern=r"^https?://")
    headers_env: dict[str, str] = Field(default_factory=dict)
    oauth: UpstreamOAuth | None = None

    @field_validator("headers_env")
    @classmethod
    def _names(cls, v: dict[str, str]) -> dict[str, str]:
        bad = [n for n in v.values() if not _ENV_NAME.match(n)]
        if bad:
            raise ValueError(f"not environment variable names: {bad}")
        return v


Transport = Annotated[StdioTransport | HttpTransport, Field(discriminator="type")]


class McpServerSpec(BaseModel):
    """One upstream MCP server.

    * ``id``: 1–64 characters ``[a-zA-Z0-9_.-]``, starting alphanumeric; it prefixes the
      exposed tool names (``<id>__<tool>``).
    * ``allow_tools`` (when set, only these) and ``deny_tools``: original tool names.
    * ``trust``: per-tool tier overrides (original tool name -> tier); they win over the tier
      derived from the tool's annotations.
    * ``call_timeout_s``: per ``tools/call``, seconds (default 60).
    * ``output_cap_bytes``: UTF-8 bytes kept of one result (default 128 KiB, max 768 KiB);
      ``output_cap_mode`` ``truncate`` (head + tail + marker) or ``error``.
    * ``protocol``: ``auto`` (2026-07-28 when offered) or ``legacy`` (the initialize handshake).
    * ``max_message_bytes`` (stdio): the largest message read from the server's stdout (default
      16 MiB); a larger one is refused while it is read and the call it answers fails.
    * ``max_junk_lines`` (stdio): lines that are not JSON-RPC tolerated in a row on stdout
      (default 20; each is counted and dropped); one more and the connection is restarted.
    * ``stderr_line_bytes``, ``stderr_lines_per_s``, ``stderr_bytes_per_s`` (stdio): the server's
      stderr goes to the gateway's log one event per line (``mcp_server_stderr``), each line cut
      to ``stderr_line_bytes`` (default 2 KiB), at most ``stderr_lines_per_s`` lines (default 20)
      and ``stderr_bytes_per_s`` bytes (default 16 KiB) a second, a burst of one second's worth;
      lines beyond are counted and dropped, one summary event every 10 s
      (:mod:`mcp_servers.stdio_stderr`). 0 lines or bytes a second logs none.
    """

    model_config = ConfigDict(extra="forbid")

    id: str
    transport: Transport
    enabled: bool = True
    description: str | None = None
    allow_tools: list[str] | None = None
    deny_tools: list[str] = Field(default_factory=list)
    trust: dict[str, TrustTier] = Field(default_factory=dict)
    call_timeout_s: float = Field(default=DEFAULT_CALL_TIMEOUT_S, gt=0, le=3600)
    connect_timeout_s: float | None = Field(
        default=None, gt=0, le=3600, description="overrides mcp.connect_timeout_s (e.g. npx's first download)"
    )
    output_cap_bytes: int = Field(default=DEFAULT_OUTPUT_CAP_BYTES, ge=256, le=MAX_OUTPUT_CAP_BYTES)
    output_cap_mode: Literal["truncate", "error"] = "truncate"
    max_message_bytes: int = Field(default=DEFAULT_MAX_MESSAGE_BYTES, ge=1024 * 1024, le=1024**3)
    max_junk_lines: int = Field(default=DEFAULT_MAX_JUNK_LINES, ge=0, le=1_000_000)
    stderr_line_bytes: int = Field(default=DEFAULT_STDERR_LINE_BYTES, ge=80, le=64 * 1024)
    stderr_lines_per_s: float = Field(default=DEFAULT_STDERR_LINES_PER_S, ge=0, le=10_000)
    stderr_bytes_per_s: int = Field(default=DEFAULT_STDERR_BYTES_PER_S, ge=0, le=16 * 1024 * 1024)
    server_json: dict[str, Any] | None = Field(
        default=None,
        description="the official server.json this server was added from (turnstile mcp add; "
        "mcp_servers.official), served back by GET /v0.1/servers; its version is pinned in the transport",
    )
    protocol: Literal["auto", "legacy"] = Field(
        default="auto",
        description="auto: MCP 2026-07-28 when the server speaks it, else the initialize handshake; "
        "legacy: always the handshake (for servers that ask clients mid-call the pre-2026 way)",
    )

    @field_validator("id")
    @classmethod
    def _id(cls, v: str) -> str:
        if not SERVER_ID.match(v):
            raise ValueError(
                f"server id {v!r} must be 1-64 characters of [a-zA-Z0-9_.-] starting with a letter or "
                'digit, without "__" (it separates server and tool names) or a trailing "_"'
            )
        if v.lower() == RESERVED_SERVER_ID:
            raise ValueError(
                f"server id {v!r} is reserved: the gateway's own tools (tool search) are named "
                f"{RESERVED_SERVER_ID}__<tool>"
            )
        return v

    @model_validator(mode="after")
    def _stderr_rate(self) -> McpServerSpec:
        if 0 < self.stderr_bytes_per_s < self.stderr_line_bytes:
            raise ValueError(
                f"stderr_bytes_per_s ({self.stderr_bytes_per_s}) must be 0 or at least stderr_line_bytes "
                f"({self.stderr_line_bytes}): a whole line must fit in one second's budget"
            )
        return self

    def tool_allowed(self, tool: str) -> bool:
        """Whether the allow/deny lists let ``tool`` (original name) through."""
        if tool in self.deny_tools:
            return False
        return self.allow_tools is None or tool in self.allow_tools


class McpClient(BaseModel):
    """One client of ``/mcp`` and ``/v1/mcp/tools``: the API key it presents
    (``Authorization: Bearer <key>``; the value of environment variable ``key_env``) and the
    exposed tool and prompt names it may see and call (``fnmatch`` globs such as ``time__*``).
    It sees a server's resources when a glob covers the whole server (matches ``<server>__*``
    itself) or allows one of the server's tools (:mod:`mcp_servers.clients`). A client whose
    ``key_env`` is unset never matches. The key is the client's credential to the gateway and is
    never sent to an upstream."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=64)
    key_env: str
    tools: list[str] = Field(default_factory=lambda: ["*"])

    @field_validator("key_env")
    @classmethod
    def _env(cls, v: str) -> str:
        if not _ENV_NAME.match(v):
            raise ValueError(f"not an environment variable name: {v!r}")
        return v


class AdminServerPolicy(BaseModel):
    """What a server registered through ``POST /admin/mcp/servers`` may use (servers of the
    configuration file are not limited). Each list is explicit; the default allows nothing.

    * ``env``: environment variable names an admin server may name at all: passed to its child
      (``env_passthrough``), sent as a header value (``headers_env``) or set (``env``; a set
      variable such as ``LD_PRELOAD`` or ``NODE_OPTIONS`` could run code in the child).
    * ``url_hosts``: hosts a streamable HTTP server's ``url`` may point at: ``host`` (any
      port), ``host:port``, ``[v6-address]:port``, or a glob (``*.corp.example``). Matched on
      the URL's host name as written: a name that resolves to an internal address is allowed
      if it is listed, so list names whose DNS you control.
    * ``commands``: stdio commands an admin server may run, as written in the spec or as the
      same resolved executable. A stdio server is code running as the gateway's user (it could
      read the gateway's own environment from ``/proc``), so the default, none, means the admin
      API cannot start processes; an interpreter (``python``, ``node``, ``npx``, ``sh``) on
      this list lets an admin run anything.
    """

    model_config = ConfigDict(extra="forbid")

    env: list[str] = Field(default_factory=list)
    url_hosts: list[str] = Field(default_factory=list)
    commands: list[str] = Field(default_factory=list)

    @field_validator("env")
    @classmethod
    def _names(cls, v: list[str]) -> list[str]:
        return env_names(v)


class McpSseConfig(BaseModel):
    """The ``mcp.sse`` section: bounds of the legacy HTTP+SSE transport (``GET /sse``,
    :mod:`mcp_servers.legacy_sse`).

    * ``max_sessions``: open event streams at most; one more ``GET /sse`` gets 503.
    * ``idle_timeout_s``: a session whose client sent no message for this long, with none of its
      requests in flight, is closed (the ``/mcp`` session manager's default idle period).
    """

    model_config = ConfigDict(extra="forbid")

    max_sessions: int = Field(default=100, ge=1, le=100_000)
    idle_timeout_s: float = Field(default=1800.0, gt=0, le=86_400)


JwtAlgorithm = Literal["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "EdDSA"]


def _default_algorithms() -> list[JwtAlgorithm]:
    return ["RS256", "ES256", "PS256", "EdDSA"]


class McpAuthorization(BaseModel):
    """The ``mcp.authorization`` section: ``/mcp`` as an OAuth 2.1 protected resource (the MCP
    authorization spec; :mod:`mcp_servers.oauth_resource`).

    * ``issuer``: the authorization server whose JWT access tokens are accepted (its ``iss``);
      listed in the protected-resource metadata (RFC 9728) that a 401 points to.
    * ``resource``: this gateway's resource URL (``https://gw.example/mcp``), the audience a token
      must carry (``aud``); null: the URL of ``/mcp`` as the request reached it, allowed only
      where the ``Host`` header is checked (a loopback gateway, or ``server.allowed_hosts`` set;
      otherwise the gateway refuses to start), since the audience would follow the header.
    * ``jwks_url``: the issuer's key set; null: ``jwks_uri`` of its RFC 8414 metadata
      (``/.well-known/oauth-authorization-server``, else ``openid-configuration``).
    * ``jwks_ttl_s``: how long a fetched key set is used (a token with an unknown ``kid`` fetches
      it again, at most once per ``jwks_min_refresh_s``).
    * ``scopes``: scope -> globs of exposed names (``time__*``, ``*``) its tokens may see and
      call; a token sees the union over its scopes, and one with none of them is refused 403
      ``insufficient_scope``.
    * ``algorithms``: signature algorithms accepted (never ``none``); ``leeway_s``: clock skew
      allowed on ``exp``/``nbf``.

    Virtual keys (``tsk-...``) and ``mcp.clients`` keys are accepted as bearer tokens beside
    JWTs; a caller with no credential gets 401 even where ``mcp.clients`` is empty.
    """

    model_config = ConfigDict(extra="forbid")

    issuer: str = Field(pattern=r"^https?://")
    resource: str | None = Field(default=None, pattern=r"^https?://")
    jwks_url: str | None = Field(default=None, pattern=r"^https?://")
    jwks_ttl_s: float = Field(default=300.0, gt=0, le=86_400)
    jwks_min_refresh_s: float = Field(default=30.0, ge=0, le=3600)
    scopes: dict[str, list[str]] = Field(default_factory=lambda: {"mcp": ["*"]})
    algorithms: list[JwtAlgorithm] = Field(default_factory=_default_algorithms, min_length=1)
    leeway_s: float = Field(default=30.0, ge=0, le=600)

    @field_validator("scopes")
    @classmethod
    def _scopes(cls, v: dict[str, list[str]]) -> dict[str, list[str]]:
        if not v:
            raise ValueError("scopes: name at least one scope and the tools it grants")
        bad = [s for s in v if not s or " " in s]
        if bad:
            raise ValueError(f"scopes: not OAuth scope names (empty or with a space): {bad}")
        return v


class ToolSearchConfig(BaseModel):
    """The ``mcp.tool_search`` section: progressive discovery for large catalogs
    (:mod:`mcp_servers.tool_search`).

    * ``enabled``: off (the default) lists every tool as before.
    * ``callers``: ``fnmatch`` globs over the caller's name (an ``mcp.clients`` name, a virtual
      key's id, ``anonymous`` for a caller with neither) that get the meta-tools
      (search, describe, call) instead of the full catalog, on ``/mcp`` and in the tool loop.
    * ``min_tools``: only when the caller may see at least this many tools (0: always).
    * ``max_results``: tools a search answers at most (its ``limit`` argument may ask fewer).
    """

    model_config = ConfigDict(extra="forbid")

    enabled: bool = False
    callers: list[str] = Field(default_factory=lambda: ["*"])
    min_tools: int = Field(default=0, ge=0, le=1_000_000)
    max_results: int = Field(default=8, ge=1, le=100)


class McpConfig(BaseModel):
    """The ``mcp`` section.

    * ``admin_key_env``: environment variable holding the key ``/admin/mcp/*`` requires
      (``Authorization: Bearer <key>``, ``x-api-key`` or ``x-admin-key``); null or the variable
      unset means the admin API is closed (403). In a gateway configuration it is a deprecated
      alias of ``access.admin_key_env``, which names the one admin key of every admin API (the
      gateway hands this runtime that value).
    * ``namespaced``: expose ``<server>__<tool>``; off exposes bare names and a clash between
      servers is a configuration error at registration.
    * ``workspace_roots``: directories inside which ``allow_in_workspace`` tools may write
      (relative paths are taken from the gateway's working directory); ``create_workspace``
      makes missing ones at start.
    * ``restart_backoff_s`` / ``restart_backoff_max_s``: first and largest delay between
      restarts of a failed upstream (doubling); ``health_interval_s``: how often a ready
      upstream's tool list is re-read (a dead one is found and restarted).
    * ``probe_timeout_s``: after a call timed out, the upstream is ``degraded`` and its tool list
      is read within this bound; no answer and it is restarted (a wedged connection).
    * ``page_size``: items per page of ``/mcp`` lists (tools, resources, templates, prompts).
    * ``clients``: when set, ``/mcp`` and ``/v1/mcp/tools`` require one of these clients' keys
      and show each client only its tools (:class:`McpClient`); empty (the default) leaves both
      open to anyone who can reach the gateway, with every tool.
    * ``admin_servers``: what servers added through the admin API may use
      (:class:`AdminServerPolicy`; default: no environment variable, no URL host, no command).
    * ``sse``: bounds of the legacy HTTP+SSE transport (:class:`McpSseConfig`).
    * ``token_key_env``: the environment variable holding the Fernet key (``cryptography``;
      ``Fernet.generate_key()``) that encrypts upstream OAuth tokens at rest; a server with
      ``oauth`` does not start while it is unset.
    * ``state_key_env``: the environment variable holding the secret that signs the
      ``requestState`` of 2026-07-28 rounds (approval questions, upstream input requests);
      set the same value on every instance behind one load balancer so that a retry may reach
      any of them (unset: a random secret per process; a state is then accepted only by the
      instance that issued it, and any instance refuses it as tampered). Replay protection
      (single use) stays per instance.
    * ``authorization``: ``/mcp`` as an OAuth protected resource (:class:`McpAuthorization`);
      null (the default): no JWTs, keys as above.
    * ``tool_search``: meta-tools instead of the full catalog for some callers
      (:class:`ToolSearchConfig`; off by default).
    * ``registry_namespace``: names in the official registry API (``GET /v0.1/servers``,
      :mod:`mcp_servers.registry_api`) of servers not added from a ``server.json`` are
      ``<registry_namespace>/<id>``.
    """

    model_config = ConfigDict(extra="forbid")

    admin_key_env: str | None = "TURNSTILE_ADMIN_KEY"
    namespaced: bool = True
    workspace_roots: list[str] = Field(default_factory=list)
    create_workspace: bool = True
    restart_backoff_s: float = Field(default=0.5, gt=0)
    restart_backoff_max_s: float = Field(default=30.0, gt=0)
    health_interval_s: float = Field(default=10.0, gt=0)
    connect_timeout_s: float = Field(default=30.0, gt=0)
    probe_timeout_s: float = Field(default=5.0, gt=0, le=600)
    page_size: int = Field(default=100, ge=1, le=10_000, description="items per /mcp list page")
    servers: list[McpServerSpec] = Field(default_factory=list)
    clients: list[McpClient] = Field(default_factory=list)
    admin_servers: AdminServerPolicy = Field(default_factory=AdminServerPolicy)
    sse: McpSseConfig = Field(default_factory=McpSseConfig)
    authorization: McpAuthorization | None = None
    token_key_env: str = "TURNSTILE_MCP_TOKEN_KEY"
    tool_search: ToolSearchConfig = Field(default_factory=ToolSearchConfig)
    registry_namespace: str = Field(
        default="local.turnstile",
        pattern=r"^[a-zA-Z0-9.-]+$",
        description="the reverse-DNS namespace of GET /v0.1/servers names for servers not added from a "
        "server.json (<namespace>/<id>)",
    )
    state_key_env: str | None = None

    def resolved_workspace_roots(self) -> list[str]:
        """``workspace_roots`` as absolute paths (symlinks resolved), in order."""
        return [os.path.realpath(os.path.expanduser(r)) for r in self.workspace_roots]

    @model_validator(mode="after")
    def _unique(self) -> McpConfig:
        ids = [s.id for s in self.servers]
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        if dupes:
            raise ValueError(f"mcp server ids must be unique; repeated: {', '.join(dupes)}")
        names = [c.name for c in self.clients]
        if len(set(names)) != len(names):
            raise ValueError("mcp client names must be unique")
        return self
