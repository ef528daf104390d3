"""Configuration: the YAML file (deployments, model aliases, guard policies) and the
environment settings object.

``Settings`` is the only reader of the environment. ``load_config`` reads a YAML file and
validates it; a validation error names the file, the key path and what was expected.
API keys are never in config files: a deployment names the environment variable
(``api_key_env``) that holds its key, and a deployment whose variable is unset is disabled.
"""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from gateway.errors import ConfigError
from mcp_servers.config import McpConfig

WireAPI = Literal["openai_chat", "openai_responses", "anthropic_messages", "gemini", "litellm", "demo"]
"""Upstream wire APIs a deployment may speak (``api``): one wire module each under
``gateway/providers`` (``litellm`` and ``demo`` are adapters)."""


class Settings(BaseSettings):
    """Process settings from the environment (prefix ``TURNSTILE_``) and provider keys.

    ``keys`` maps every environment variable name a deployment may reference to its value;
    it is filled by :meth:`read_key` from the same environment snapshot.
    """

    model_config = SettingsConfigDict(env_prefix="TURNSTILE_", extra="ignore")

    config: Path | None = None
    host: str | None = None
    port: int | None = None
    db_path: Path | None = None
    log_level: str = "info"
    log_json: bool = True
    console_token: str | None = None
    """TURNSTILE_CONSOLE_TOKEN: the console's one-time login token, made and printed by
    ``turnstile serve`` on a loopback address when no admin key is configured (the console takes
    it only then: :mod:`gateway.console.auth`)."""
    allow_anonymous: bool = False
    """TURNSTILE_ALLOW_ANONYMOUS: serve anonymous clients on a non-loopback address (see
    :mod:`gateway.exposure`); as ``--allow-anonymous`` and ``server.allow_anonymous``."""
    workers: int = 1
    """TURNSTILE_WORKERS: how many worker processes serve this gateway on this machine (set by
    ``turnstile serve --workers N``): more than one share their limit counters (without
    ``redis.url``) and throttles through a SQLite file (:func:`workers_state_path`)."""
    workers_state: Path | None = None
    """TURNSTILE_WORKERS_STATE: that file (``turnstile serve`` makes a fresh one per run);
    default ``<server.db_path>.workers``."""

    def read_headers(self, name: str | None) -> dict[str, str]:
        """The ``key=value,key=value`` pairs of environment variable ``name`` (export headers,
        e.g. a collector's API key; values percent-decoded), ``{}`` when ``name`` is None or the
        variable unset. Raises :class:`ConfigError` naming the variable (never its value) for a
        pair without ``=``."""
        from urllib.parse import unquote

        raw = self.read_key(name) if name else None
        out: dict[str, str] = {}
        for pair in (raw or "").split(","):
            if not pair.strip():
                continue
            key, eq, value = pair.partition("=")
            if not eq or not key.strip():
                raise ConfigError(
                    f"environment variable {name} must hold key=value pairs separated by commas"
                )
            out[key.strip()] = unquote(value.strip())
        return out

    def read_key(self, name: str) -> str | None:
        """The value of environment variable ``name`` (an API key), or None when unset/empty."""
        import os

        value = os.environ.get(name)
        return value or None


class Price(BaseModel):
    """Prices in USD per million tokens. Unset fields fall back to litellm's bundled table."""

    model_config = ConfigDict(extra="forbid")

    input: float | None = Field(default=None, ge=0)
    output: float | None = Field(default=None, ge=0)
    cache_read: float | None = Field(default=None, ge=0)
    cache_write: float | None = Field(default=None, ge=0)
    reasoning: float | None = Field(default=None, ge=0)


class Quirks(BaseModel):
    """Known deviations of an OpenAI-compatible server from the reference API.

    * ``max_tokens_field``: ``max_tokens`` (older servers, vLLM, llama.cpp) or
      ``max_completion_tokens`` (OpenAI reasoning models).
    * ``stream_usage``: whether the server honours ``stream_options.include_usage``.
    * ``images_in_tool_results``: whether a ``role: tool`` message may carry image parts; if
      not, images go in a following user message.
    """

    model_config = ConfigDict(extra="forbid")

    max_tokens_field: Literal["max_tokens", "max_completion_tokens"] = "max_completion_tokens"
    stream_usage: bool = True
    images_in_tool_results: bool = False
    extra_headers: dict[str, str] = Field(default_factory=dict)


class DeploymentQuota(BaseModel):
    """The provider's own rate limits for one deployment (its account's quota), which the route
    layer treats as capacity (:mod:`gateway.limits.quotas`): ``rpm`` requests per minute,
    ``tpm`` tokens (input + output) per minute, ``concurrent`` calls at once; None: not limited."""

    model_config = ConfigDict(extra="forbid")

    rpm: int | None = Field(default=None, ge=1)
    tpm: int | None = Field(default=None, ge=1)
    concurrent: int | None = Field(default=None, ge=1)


class Deployment(BaseModel):
    """One upstream model endpoint: a wire API, a model id, a base URL and a key variable."""

    model_config = ConfigDict(extra="forbid")

    name: str
    api: WireAPI
    model: str
    provider: str = ""
    base_url: str | None = None
    api_key_env: str | None = None
    context_window: int | None = Field(default=None, gt=0)
    max_output_tokens: int | None = Field(default=None, gt=0)
    price: Price | None = None
    supports_images: bool = True
    supports_documents: bool | None = None
    """Whether the model reads document parts (PDF, text); None: litellm's
    ``supports_pdf_input`` for the model, else True (:func:`gateway.layers.target_media.check_media`)."""
    supports_audio: bool | None = None
    """Whether the model hears audio parts; None: litellm's ``supports_audio_input``, else True."""
    supports_thinking: bool = True
    supports_tools: bool = True
    supports_json_mode: bool = True
    structured_output: Literal["native", "tool"] | None = None
    """How an ``anthropic_messages`` deployment carries a JSON response format: ``native``
    (``output_config.format``), ``tool`` (a forced output tool, mapped back to text), or None:
    decided from the model name (:func:`gateway.providers.anthropic_schema.has_native_output`)."""
    quirks: Quirks = Field(default_factory=Quirks)
    timeouts_s: dict[Literal["connect", "first_byte", "between_chunks", "total"], float] = Field(
        default_factory=dict
    )
    max_response_bytes: int | None = Field(default=None, ge=64 * 1024)
    """Overrides ``server.max_response_bytes`` for this deployment (bytes)."""
    quota: DeploymentQuota | None = None
    """The provider's rate limits for this deployment: calls past them go to the alias's next
    deployment instead of meeting the provider's 429 (:mod:`gateway.limits.quotas`)."""
    description: str | None = None

    @model_validator(mode="after")
    def _default_provider(self) -> Deployment:
        if not self.provider:
            self.provider = {
                "openai_chat": "openai",
                "openai_responses": "openai",
                "anthropic_messages": "anthropic",
                "gemini": "google",
                "litellm": self.model.split("/", 1)[0] if "/" in self.model else "litellm",
                "demo": "turnstile",
            }[self.api]
        return self


class RouteRule(BaseModel):
    """One routing rule: when every condition that is set holds for a turn, it goes to ``tier``.

    Conditions: ``kind`` (turn kinds: fresh_user, tool_digest, final_answer,
    tool_error_retry, other), ``min_input_tokens``/``max_input_tokens`` (estimated tokens),
    ``tools``/``images``/``code``/``thinking``/``json_mode`` (present or not),
    ``min_depth``/``max_depth`` (assistant turns so far), ``min_tool_errors`` (error tool
    results since the last user message), ``text_matches`` (a regex searched in the last user
    message, case-insensitive).
    """

    model_config = ConfigDict(extra="forbid")

    tier: str
    kind: list[str] | None = None
    min_input_tokens: int | None = None
    max_input_tokens: int | None = None
    tools: bool | None = None
    images: bool | None = None
    code: bool | None = None
    thinking: bool | None = None
    json_mode: bool | None = None
    min_depth: int | None = None
    max_depth: int | None = None
    min_tool_errors: int | None = None
    text_matches: str | None = None


class RoutingConfig(BaseModel):
    """How an alias picks among its deployments (see ``routers/``).

    * ``policy``: ``ordered`` (alias order), ``rules``, ``learned`` or ``cascade``.
    * ``tiers``: tier name -> deployments, **cheapest tier first**; a deployment of the alias in
      no tier joins the last (strongest) tier.
    * ``default_tier``: tier when no rule matches (default: the strongest).
    * ``rules``: :class:`RouteRule` list, first match wins (``rules`` and ``learned``).
    * ``target_quality``: ``learned``: the share of the strongest tier's quality to keep (0.95 =
      95% of always-strong's mean quality); turned into a threshold on the scorer's probability
      by the calibration table stored with the model weights (``turnstile route-train``,
      docs/routing.md). ``threshold``: a fixed threshold instead (expert override; it wins when
      set). A turn whose probability of needing the strong tier is at least the threshold goes
      to the strongest tier, else the cheapest. ``model_path``: the weights file (default: the
      one shipped in ``routers/data``).
    * ``sticky``/``horizon_turns``: keep a session on its current model unless the expected
      saving over ``horizon_turns`` turns exceeds the cost of a cold prompt cache.
    * ``max_attempts``: deployments tried per turn at most (fallbacks and cascade steps).
    * ``weights``: deployment -> weight (> 0) for balancing deployments of equal price: higher
      weight, lower latency first.
    """

    model_config = ConfigDict(extra="forbid")

    policy: Literal["ordered", "rules", "learned", "cascade"] = "ordered"
    tiers: dict[str, list[str]] = Field(default_factory=dict)
    default_tier: str | None = None
    rules: list[RouteRule] = Field(default_factory=list)
    target_quality: float = Field(default=0.95, gt=0.0, le=1.0)
    threshold: float | None = Field(default=None, ge=0.0, le=1.0)
    model_path: str | None = None
    sticky: bool = True
    horizon_turns: int = 3
    max_attempts: int = 3
    weights: dict[str, float] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _check_tiers(self) -> RoutingConfig:
        names = list(self.tiers)
        for i, rule in enumerate(self.rules):
            if rule.tier not in self.tiers:
                raise ValueError(f"rules[{i}].tier: unknown tier {rule.tier!r} (tiers: {', '.join(names)})")
        if self.default_tier is not None and self.default_tier not in self.tiers:
            raise ValueError(f"default_tier: unknown tier {self.default_tier!r} (tiers: {', '.join(names)})")
        if self.policy in ("rules", "learned", "cascade") and not self.tiers:
            raise ValueError(f"policy {self.policy!r} needs tiers (cheapest first)")
        return self


class ModelAlias(BaseModel):
    """A name clients use, served by deployments in order: the first is primary, the rest
    are fallbacks. ``routing`` (optional) chooses the order per turn instead."""

    model_config = ConfigDict(extra="forbid")

    name: str
    deployments: list[str]
    routing: RoutingConfig | None = None
    mcp_servers: list[str] = Field(default_factory=list)
    """Registered MCP server ids whose tools every turn on this alias gets, run by the
    gateway's server-side tool loop (added to those the request names)."""


def effective_timeouts(base: TimeoutConfig, dep: Deployment) -> TimeoutConfig:
    """The gateway's timeouts with ``dep.timeouts_s`` overrides applied (seconds)."""
    if not dep.timeouts_s:
        return base
    return base.model_copy(update={str(k): v for k, v in dep.timeouts_s.items()})


class GuardPolicy(BaseModel):
    """What the guards do when a request breaks an invariant.

    * ``pairing``: ``reject`` (HTTP 400) or ``repair`` (add an error result for a call that
      has none; orphan and duplicate results are always rejected).
    * ``ordering``: ``reorder`` (results put in call order) or ``strict`` (HTTP 400).
    * ``truncation``: ``withhold`` (truncated tool calls are never forwarded; stop reason
      ``length``) or ``retry`` (ask once more with a larger output budget, then withhold).
    * ``foreign_thinking``: for thinking signed by another provider/model than the target:
      ``strip`` (drop it), ``text`` (send it as plain text) or ``reject`` (HTTP 400).
    """

    model_config = ConfigDict(extra="forbid")

    pairing: Literal["reject", "repair"] = "reject"
    ordering: Literal["reorder", "strict"] = "reorder"
    truncation: Literal["withhold", "retry"] = "withhold"
    foreign_thinking: Literal["strip", "text", "reject"] = "strip"
    retry_output_factor: float = Field(default=2.0, gt=1.0)


class ThinkingMemoryConfig(BaseModel):
    """Signed thinking kept server-side for clients that do not send it back
    (:mod:`gateway.thinking_memory`): at most ``entries`` answers with tool calls, each for
    ``ttl_s`` seconds. ``entries: 0`` keeps none (a tool loop whose client dropped the
    thinking then runs with thinking off for that request, and the answer says so)."""

    model_config = ConfigDict(extra="forbid")

    entries: int = Field(default=20_000, ge=0)
    ttl_s: float = Field(default=3600.0, gt=0)


class SessionsConfig(BaseModel):
    """Sessions (invariant 5): where they are stored and how they are compacted.

    * ``url``: ``postgresql://host:port/db`` or ``sqlite:///path``; default: ``storage.url``,
      else the SQLite file of ``server.db_path``.
    * ``compaction_deployment``: the (cheap) deployment that writes compaction summaries; unset,
      a session that outgrows the target window is refused (HTTP 400) instead of compacted.
    * ``keep_ratio``: share of the budget the kept suffix may use right after a compaction.
    * ``chunk_tokens``: tokens of dropped history per summariser call.
    * ``threads``: Anthropic message threads (the ``thread`` request field, beta
      ``message-threads-2026-08-12``) held in the session log (:mod:`gateway.sessions.threads`);
      off, a request naming a thread is refused with ``error_code``
      ``thread_unsupported_request``, on which the Anthropic SDK resends it whole, unthreaded.
    """

    model_config = ConfigDict(extra="forbid")

    url: str | None = None
    compaction_deployment: str | None = None
    keep_ratio: float = Field(default=0.5, gt=0, le=1)
    chunk_tokens: int = Field(default=24_000, gt=0)
    threads: bool = True


class StorageConfig(BaseModel):
    """Where the gateway's shared tables live (virtual keys, teams and their audit; sessions
    too unless ``sessions.url`` says otherwise).

    * ``url``: ``postgresql://host:port/db`` (several instances sharing one database),
      ``sqlite:///absolute/path`` or a file path; default: the SQLite file of
      ``server.db_path`` (the transcript's file).
    """

    model_config = ConfigDict(extra="forbid")

    url: str | None = None


class AccessConfig(BaseModel):
    """Client identity on the model and MCP endpoints (virtual keys, :mod:`gateway.access`).

    * ``auth``: ``required`` (a missing, unknown, expired, revoked or disabled key is a 401 in
      the client's dialect), ``optional`` (a presented ``tsk-`` key is checked and applied; any
      other key, or none, is anonymous) or ``off`` (keys are not read). Unset: ``required``
      when the gateway serves a non-loopback ``server.host``, ``optional`` on loopback
      (:func:`effective_auth`).
    * ``admin_key_env``: the environment variable holding THE admin key (never the key itself
      in the file; default ``TURNSTILE_ADMIN_KEY``): it governs ``/admin/keys``,
      ``/admin/teams``, ``/admin/audit``, ``/admin/spend`` and the MCP registry's
      ``/admin/mcp/*``, reads ``/metrics`` where keys are required, and sees every session and
      stored response (:mod:`gateway.sessions.owners`). Null, or the variable unset or empty:
      no admin key (the key admin API answers 401, the MCP one 403). ``mcp.admin_key_env`` is a
      deprecated alias (read when this one is not set, with a warning in the log).
    * ``cache_ttl_s``: how long (seconds, at most 1) one process reuses a key lookup, so a
      key revoked on another instance is refused within a second.
    """

    model_config = ConfigDict(extra="forbid")

    auth: Literal["required", "optional", "off"] | None = None
    admin_key_env: str | None = "TURNSTILE_ADMIN_KEY"
    cache_ttl_s: float = Field(default=1.0, ge=0, le=1.0)


class ToolLoopConfig(BaseModel):
    """The server-side tool loop (:mod:`gateway.tool_loop`).

    * ``max_steps``: model requests per turn at most (the last one is asked for a final
      answer with tool choice ``none``).
    * ``call_timeout_s``: bound on one tool call, seconds (the MCP server's own
      ``call_timeout_s`` applies too; the smaller wins).
    * ``keepalive_s``: while the gateway's tools run inside a stream, a keep-alive is sent to
      the client every this many seconds with nothing else to send (Codex CLI's idle timer
      counts data events only: the Responses edge sends ``response.in_progress``).
    """

    model_config = ConfigDict(extra="forbid")

    max_steps: int = Field(default=8, ge=1, le=100)
    call_timeout_s: float = Field(default=120.0, gt=0)
    keepalive_s: float = Field(default=15.0, gt=0)


class ServerConfig(BaseModel):
    """Listening address and request limits (bytes, seconds).

    ``allow_anonymous``: serve on a non-loopback ``host`` although no client authentication is
    configured (anyone who can reach it spends the provider keys); without it such a host is
    refused at start (:mod:`gateway.exposure`).

    ``trusted_proxies``: the addresses (IPs or CIDR networks) of the reverse proxies in front of
    the gateway. Only a connection from one of them has its ``X-Forwarded-For`` (the client
    address: wrong admin keys are counted per address, logs and audit name it) and
    ``X-Forwarded-Proto`` believed (uvicorn's ``ProxyHeadersMiddleware``, the right-most
    untrusted address); from anyone else they are ignored, so a client cannot choose its own
    address. Empty (the default): the connection's peer is the client. ``Forwarded`` (RFC
    7239) is never read.

    ``allowed_hosts`` and ``allowed_origins`` (:mod:`gateway.browser_guard`): where clients need
    no key, a request must name this machine as its ``Host`` (a loopback name or address) or one
    of ``allowed_hosts`` (``name``, any port, or ``name:port``), and a request from a web page
    (one with an ``Origin``) is refused unless its origin (``scheme://host[:port]``) is in
    ``allowed_origins``; the MCP transports take the same lists (and loopback origins).

    Request bounds, checked right after a body's JSON is decoded (:mod:`gateway.edges._bounds`):

    * ``max_request_messages`` (413 past it): 5× the longest conversation recorded in the
      corpus (a Pi coding-agent session of 1,011 messages sent whole, 1.8 MB).
    * ``max_request_parts`` (413): content parts and tool calls of all messages together, five
      per message at the message limit (the corpus averages 1.3).
    * ``max_request_tools`` (413): tool definitions per request (each of OpenAI's ``tools`` and
      legacy ``functions``, Anthropic's ``tools``): 4x OpenAI's own 128-function limit
      (https://platform.openai.com/docs/api-reference/chat/create#chat-create-tools); Gemini
      takes 64 declarations per tool
      (https://firebase.google.com/docs/reference/js/vertexai.functiondeclarationstool).
      200,000 tools held the event loop for 4-11 s.
    * ``max_tool_schema_nodes`` (413): JSON values (objects, arrays, strings, numbers, booleans,
      nulls; keys not counted) in one tool's input schema, naming the tool. Recorded tools have
      at most a few dozen; 10,000 is a schema of about 5,000 properties.
    * ``max_json_depth`` (400): levels of JSON nesting, the body being level 1; recorded
      requests reach 12, real tool schemas a few more. Everything accepted stays well inside
      what the encoders can write back (orjson stops at 254 levels).

    Answer bounds:

    * ``stream_keepalive_s``: while a streamed answer's tool calls are held until their stop
      reason is known (invariant 3: arguments not fully received are never handed on), a
      keep-alive goes to the client every this many seconds with nothing else to send (each
      dialect's own: Anthropic ``ping``, an SSE comment, Responses ``response.in_progress``).
    * ``max_response_bytes``: bytes one upstream answer may have (a whole body, or all of a
      stream's SSE bytes), counted while they are read, decompressed; past it the answer is a
      502 naming the cap and the deployment (a stream already started ends with the dialect's
      error event) and the rest is never read. 8 MiB holds the longest answers models give:
      32k output tokens streamed by OpenAI at ~230 bytes of SSE per token is 7.5 MB; Anthropic
      and Gemini streams and whole bodies carry 4-40 bytes per token. A deployment answering
      more (images, 128k-token outputs) sets its own ``max_response_bytes``.
    * ``transcript_max_json_bytes``: bytes of request and of response JSON one transcript row
      keeps; a longer one is stored with its longest strings shortened and a
      ``"turnstile.cut"`` entry giving its original size.

    Client connections (:mod:`gateway.serving`):

    * ``keep_alive_timeout_s``: an idle kept-alive connection is closed after this; longer than
      the idle expiry of the SDKs' pools (httpx 5 s, aiohttp 15 s, undici 4 s), so the client,
      not the server, ends it and no request meets a connection closing under it.
    * ``header_timeout_s``: a connection must send its request line and headers within this of
      opening (or of the first byte of its next request), else 408 and closed.
    * ``body_timeout_s``: the longest wait between two reads of a request body (408).
    * ``body_min_bytes_per_s``: the least average rate of a request body, from the end of its
      headers, once ``body_timeout_s`` has passed (408; 0: no minimum). 1 KiB/s is below a 2G
      (GPRS) uplink; a whole 20 MB body at that rate would take 5.7 hours.
    * ``max_connections``: client connections per process; unset, half of the file
      descriptors left after a reserve (the other half for upstream connections). Past it a
      new connection closes the one that has waited longest for a request, else the body
      furthest behind ``body_min_bytes_per_s`` (408); with neither, it gets a JSON 503.
    """

    model_config = ConfigDict(extra="forbid")

    host: str = "127.0.0.1"
    allow_anonymous: bool = False
    trusted_proxies: list[str] = Field(default_factory=list)
    allowed_hosts: list[str] = Field(default_factory=list)
    allowed_origins: list[str] = Field(default_factory=list)
    port: int = Field(default=4000, ge=1, le=65535)
    max_body_bytes: int = Field(default=20 * 1024 * 1024, gt=0)
    max_request_messages: int = Field(default=5_000, gt=0)
    max_request_parts: int = Field(default=25_000, gt=0)
    max_request_tools: int = Field(default=512, gt=0)
    max_tool_schema_nodes: int = Field(default=10_000, gt=0)
    max_json_depth: int = Field(default=64, ge=16, le=200)
    max_response_bytes: int = Field(default=8 * 1024 * 1024, ge=64 * 1024)
    stream_keepalive_s: float = Field(default=15.0, gt=0)
    db_path: str = "turnstile.db"
    transcript_queue: int = Field(default=2_000, ge=1)
    transcript_commit_timeout_s: float = Field(
        default=5.0,
        gt=0,
        description="longest wait (s) for a turn's transcript row to commit before its answer is "
        "released anyway (logged as an error); rows are never released uncommitted otherwise",
    )
    shutdown_timeout_s: int = Field(
        default=30,
        ge=0,
        description="longest graceful shutdown (whole seconds, as uvicorn takes it): open turns "
        "still running then are cut and recorded as aborted",
    )
    transcript_max_json_bytes: int = Field(default=1024 * 1024, ge=4096)
    keep_alive_timeout_s: float = Field(default=30.0, gt=0)
    header_timeout_s: float = Field(default=10.0, gt=0)
    body_timeout_s: float = Field(default=30.0, gt=0)
    body_min_bytes_per_s: float = Field(default=1024.0, ge=0)
    max_connections: int | None = Field(default=None, ge=1)

    @field_validator("trusted_proxies")
    @classmethod
    def _networks(cls, value: list[str]) -> list[str]:
        for entry in value:
            try:
                ipaddress.ip_network(entry, strict=False)
            except ValueError as err:
                raise ValueError(
                    f"server.trusted_proxies: {entry!r} is not an IP address or CIDR network"
                ) from err
        return value


class TimeoutConfig(BaseModel):
    """Upstream timeouts in seconds."""

    model_config = ConfigDict(extra="forbid")

    connect: float = Field(default=10.0, gt=0)
    first_byte: float = Field(default=120.0, gt=0)
    between_chunks: float = Field(default=120.0, gt=0)
    total: float = Field(default=900.0, gt=0)


class BetaList(BaseModel):
    """Which of a client's ``anthropic-beta`` values reach an Anthropic upstream: those in
    ``allow`` (None: every beta) and not in ``deny``."""

    model_config = ConfigDict(extra="forbid")

    allow: list[str] | None = None
    deny: list[str] = Field(default_factory=list)

    def admits(self, beta: str) -> bool:
        """Whether ``beta`` may be forwarded."""
        return beta not in self.deny and (self.allow is None or beta in self.allow)


FORWARD_RESERVED = frozenset(
    {"x-api-key", "authorization", "anthropic-beta", "anthropic-version", "content-type", "accept", "host"}
)
"""Header names ``anthropic.forward`` may not list: credentials, the headers the gateway sets
itself and the ones ``betas`` / ``versions`` govern."""


class AnthropicHeaders(BaseModel):
    """What of a client's Anthropic headers reaches an ``anthropic_messages`` deployment
    (:mod:`gateway.anthropic_headers`): ``betas`` filters ``anthropic-beta`` values (betas the
    gateway translates itself are never forwarded), and a client's ``anthropic-version`` is
    sent only when it is one of ``versions`` (else the deployment's own; one the edge does not
    speak either is named: :data:`gateway.anthropic_headers.EDGE_VERSIONS`). ``forward`` names
    other client headers sent on as they came (lower-cased names; by default Claude Code's
    ``x-claude-code-session-id`` and ``x-app``); a deployment's own ``extra_headers`` win, and
    toward another wire API none is sent. Raises ``ValueError`` for a name of
    :data:`FORWARD_RESERVED`."""

    model_config = ConfigDict(extra="forbid")

    betas: BetaList = Field(default_factory=BetaList)
    versions: list[str] = Field(default_factory=lambda: ["2023-06-01"])
    forward: list[str] = Field(default_factory=lambda: ["x-claude-code-session-id", "x-app"])

    @field_validator("forward")
    @classmethod
    def _forwardable(cls, names: list[str]) -> list[str]:
        lowered = [n.strip().lower() for n in names]
        reserved = sorted(set(lowered) & FORWARD_RESERVED)
        if reserved:
            raise ValueError(f"anthropic.forward may not list {', '.join(reserved)} (set by the gateway)")
        return list(dict.fromkeys(n for n in lowered if n))


class RedisConfig(BaseModel):
    """Redis for state shared by every gateway instance: the limit counters (budgets, rate
    limits, concurrent turns, deployment quotas: :mod:`gateway.limits.redis_backend`) and
    :mod:`gateway.fleet` (deployment health, the thinking and signer memories, admin MCP
    servers, change notifications).

    * ``url``: ``redis://host:port/db`` (``rediss://`` for TLS); unset, the counters live in
      the process (one instance only: two would each allow the full budget).
    * ``fail``: what a turn meets while Redis is unreachable: ``closed`` (refused with a 503,
      :class:`gateway.errors.LimitsUnavailable`) or ``open`` (admitted unchecked; its spend is
      settled once Redis is back, never twice).
    * ``timeout_s``: the longest wait for one Redis command, seconds (past it Redis counts as
      unreachable for that turn).
    * ``prefix``: put before every key this gateway writes, and names its change channel
      (``<prefix>changes``): several deployments on one Redis.
    """

    model_config = ConfigDict(extra="forbid")

    url: str | None = None
    fail: Literal["closed", "open"] = "closed"
    timeout_s: float = Field(default=0.5, gt=0)
    prefix: str = "turnstile:"


class LimitsConfig(BaseModel):
    """Budgets and rate limits (:mod:`gateway.limits`).

    * ``timezone``: the IANA time zone (e.g. ``Europe/Berlin``) whose calendar budget periods
      follow: a day budget resets at its local midnight, a week budget on Monday 00:00, a month
      budget on the 1st 00:00 (DST-correct).
    * ``lease_ttl_s``: how long an unsettled turn holds its budget reservation and concurrent
      slots, seconds: a gateway instance that dies mid-turn frees them after it. Longer than
      the longest turn (``timeouts.total`` is 900 s by default).
    """

    model_config = ConfigDict(extra="forbid")

    timezone: str = "UTC"
    lease_ttl_s: float = Field(default=960.0, gt=0)

    @model_validator(mode="after")
    def _check_timezone(self) -> LimitsConfig:
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

        try:
            ZoneInfo(self.timezone)
        except (ZoneInfoNotFoundError, ValueError) as err:
            raise ValueError(f"timezone: unknown IANA time zone {self.timezone!r}") from err
        return self


class MetricsConfig(BaseModel):
    """``GET /metrics`` (Prometheus text exposition, :mod:`gateway.metrics`).

    * ``enabled``: serve it (the counting itself costs a few dict updates per turn).
    """

    model_config = ConfigDict(extra="forbid")

    enabled: bool = True


class ConsoleConfig(BaseModel):
    """The admin console at ``/ui`` (:mod:`gateway.console`).

    * ``enabled``: serve it. Its pages need the admin key (``access.admin_key_env``); without
      one, the one-time login link ``turnstile serve`` prints on a loopback address
      (:mod:`gateway.console.auth`), and elsewhere they answer 503 saying so.
    * ``session_hours``: how long a log-in lasts (hours).
    """

    model_config = ConfigDict(extra="forbid")

    enabled: bool = True
    session_hours: float = Field(default=12.0, gt=0, le=720)


GuardrailAction = Literal["redact", "block", "flag", "off"]
GuardrailStage = Literal["tool_output", "input", "output"]
PiiKind = Literal["email", "phone", "credit_card", "iban", "us_ssn"]
_WEBHOOK_STAGES: tuple[GuardrailStage, ...] = ("tool_output",)
_PII_KINDS: tuple[PiiKind, ...] = ("email", "phone", "credit_card", "iban", "us_ssn")


class GuardrailWebhook(BaseModel):
    """An external guardrail service (:mod:`gateway.guardrails.webhook`): each checked text is
    POSTed to ``url`` as ``{"stage", "text", "context"}`` and the answer ``{"action": "allow" |
    "redact" | "block" | "flag", "text"?, "reason"?}`` applied. ``headers_env``: header name ->
    environment variable holding its value. No answer within ``timeout_s`` (or a bad one):
    ``fail: open`` lets the text through (flagged ``webhook_unavailable``), ``closed`` blocks it."""

    model_config = ConfigDict(extra="forbid")

    url: str = Field(pattern=r"^https?://")
    headers_env: dict[str, str] = Field(default_factory=dict)
    timeout_s: float = Field(default=2.0, gt=0, le=60)
    fail: Literal["open", "closed"] = "open"
    stages: list[GuardrailStage] = Field(default_factory=lambda: list(_WEBHOOK_STAGES))


class GuardrailsConfig(BaseModel):
    """The ``guardrails`` section (off by default; :mod:`gateway.guardrails`,
    :mod:`gateway.layers.guardrails`).

    * ``tool_results``: check MCP tool output entering a model's context (the tool loop, and
      results relayed on ``/mcp``) and the tool results a client sends; ``input``: the client's
      user and system messages; ``output``: the model's answer text.
    * ``secrets`` (provider key formats and ``detect-secrets``' detectors), ``pii`` (``pii_kinds``
      of email, phone, credit_card, iban, us_ssn) and ``injection`` (``injection_markers``,
      case-insensitive regular expressions; tool results only): the action each finding takes —
      ``redact`` (the match replaced by ``[REDACTED:<kind>]``), ``block`` (a tool result becomes
      an error result; input is refused 400; output is replaced, stop reason
      ``content_filter``), ``flag`` (recorded only) or ``off``.
    * ``webhook``: an external service asked too (:class:`GuardrailWebhook`).
    """

    model_config = ConfigDict(extra="forbid")

    enabled: bool = False
    tool_results: bool = True
    input: bool = False
    output: bool = False
    secrets: GuardrailAction = "redact"
    pii: GuardrailAction = "redact"
    pii_kinds: list[PiiKind] = Field(default_factory=lambda: list(_PII_KINDS))
    injection: Literal["block", "flag", "off"] = "flag"
    injection_markers: list[str] | None = Field(
        default=None,
        description="regular expressions; None: the built-in list (gateway.guardrails.injection)",
    )
    webhook: GuardrailWebhook | None = None

    @field_validator("injection_markers")
    @classmethod
    def _markers(cls, v: list[str] | None) -> list[str] | None:
        import re

        for marker in v or []:
            try:
                re.compile(marker)
            except re.error as err:
                raise ValueError(f"injection marker {marker!r} is not a regular expression: {err}") from err
        return v


class TracingConfig(BaseModel):
    """OpenTelemetry traces (:mod:`gateway.tracing`), exported over OTLP/HTTP; off unless
    ``enabled``.

    * ``otlp_endpoint``: the collector's traces URL (``http://host:4318/v1/traces``).
    * ``service_name``: the ``service.name`` resource attribute.
    * ``headers_env``: the name of an environment variable holding the export headers as
      ``key=value`` pairs separated by commas (W3C baggage style, as
      ``OTEL_EXPORTER_OTLP_HEADERS``); the headers themselves (a collector's API key) are never
      in the file.
    * ``capture_content``: record the internal-schema request and answer of each upstream
      attempt as a ``gen_ai.client.inference.operation.details`` span event (prompt text in
      spans: off by default).
    * ``export_timeout_s``: the bound on one export (seconds); ``batch_delay_ms``: how long
      finished spans wait to be sent in a batch (milliseconds).
    """

    model_config = ConfigDict(extra="forbid")

    enabled: bool = False
    otlp_endpoint: str = "http://127.0.0.1:4318/v1/traces"
    service_name: str = "turnstile"
    headers_env: str | None = None
    capture_content: bool = False
    export_timeout_s: float = Field(default=10.0, gt=0)
    batch_delay_ms: int = Field(default=1000, ge=1)


class GatewayConfig(BaseModel):
    """The whole configuration file."""

    model_config = ConfigDict(extra="forbid")

    server: ServerConfig = Field(default_factory=ServerConfig)
    guards: GuardPolicy = Field(default_factory=GuardPolicy)
    timeouts: TimeoutConfig = Field(default_factory=TimeoutConfig)
    deployments: list[Deployment] = Field(default_factory=list)
    models: list[ModelAlias] = Field(default_factory=list)
    mcp: McpConfig = Field(default_factory=McpConfig)
    sessions: SessionsConfig = Field(default_factory=SessionsConfig)
    storage: StorageConfig = Field(default_factory=StorageConfig)
    access: AccessConfig = Field(default_factory=AccessConfig)
    tool_loop: ToolLoopConfig = Field(default_factory=ToolLoopConfig)
    anthropic: AnthropicHeaders = Field(default_factory=AnthropicHeaders)
    thinking_memory: ThinkingMemoryConfig = Field(default_factory=ThinkingMemoryConfig)
    redis: RedisConfig = Field(default_factory=RedisConfig)
    limits: LimitsConfig = Field(default_factory=LimitsConfig)
    metrics: MetricsConfig = Field(default_factory=MetricsConfig)
    tracing: TracingConfig = Field(default_factory=TracingConfig)
    guardrails: GuardrailsConfig = Field(default_factory=GuardrailsConfig)
    console: ConsoleConfig = Field(default_factory=ConsoleConfig)

    @model_validator(mode="after")
    def _one_admin_key(self) -> GatewayConfig:
        """``mcp.admin_key_env`` (deprecated) names the admin key only when
        ``access.admin_key_env`` is not set; two different variables are refused."""
        if "admin_key_env" not in self.mcp.model_fields_set:
            return self
        old = self.mcp.admin_key_env
        if "admin_key_env" in self.access.model_fields_set:
            if self.access.admin_key_env != old:
                raise ValueError(
                    f"access.admin_key_env ({self.access.admin_key_env!r}) and the deprecated "
                    f"mcp.admin_key_env ({old!r}) name two admin keys; one admin key governs "
                    "both admin APIs: keep access.admin_key_env and remove mcp.admin_key_env"
                )
            return self
        self.access = self.access.model_copy(update={"admin_key_env": old})
        return self

    @model_validator(mode="after")
    def _check_references(self) -> GatewayConfig:
        names = [d.name for d in self.deployments]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"deployment names must be unique; repeated: {', '.join(dupes)}")
        aliases = [a.name for a in self.models]
        dupes = sorted({n for n in aliases if aliases.count(n) > 1})
        if dupes:
            raise ValueError(f"model alias names must be unique; repeated: {', '.join(dupes)}")
        known = set(names)
        for i, alias in enumerate(self.models):
            for j, dep in enumerate(alias.deployments):
                if dep not in known:
                    raise ValueError(
                        f"models[{i}].deployments[{j}]: unknown deployment {dep!r} "
                        f"(known: {', '.join(sorted(known))})"
                    )
            for tier, deps in (alias.routing.tiers if alias.routing else {}).items():
                for dep in deps:
                    if dep not in alias.deployments:
                        raise ValueError(
                            f"models[{i}].routing.tiers.{tier}: {dep!r} is not one of the alias's "
                            f"deployments ({', '.join(alias.deployments)})"
                        )
        return self


def deprecations(config: GatewayConfig) -> list[str]:
    """What ``config`` sets through a deprecated name, one sentence each (the server logs
    them as warnings at start)."""
    out: list[str] = []
    if "admin_key_env" in config.mcp.model_fields_set:
        out.append(
            "mcp.admin_key_env is deprecated: access.admin_key_env names the one admin key of "
            "every admin API (the value is used for it now)"
        )
    return out


def workers_state_path(config: GatewayConfig, settings: Settings) -> str | None:
    """The SQLite file the worker processes of one machine share their admin-key throttle, one-time
    login and (without ``redis.url``) limit counters through: ``settings.workers_state``, else
    ``<server.db_path>.workers``; None for one worker (it keeps them in memory)."""
    if settings.workers <= 1:
        return None
    return str(settings.workers_state or f"{config.server.db_path}.workers")


def storage_url(config: GatewayConfig) -> str:
    """The URL of the shared tables: ``storage.url``, else the SQLite file ``server.db_path``."""
    return config.storage.url or str(config.server.db_path)


def sessions_url(config: GatewayConfig) -> str:
    """The URL of the session store: ``sessions.url``, else :func:`storage_url`."""
    return config.sessions.url or storage_url(config)


def effective_auth(config: GatewayConfig, loopback: bool) -> Literal["required", "optional", "off"]:
    """``access.auth``, or its default for the listening address: ``optional`` on a loopback
    one (``loopback``), ``required`` on any other."""
    if config.access.auth is not None:
        return config.access.auth
    return "optional" if loopback else "required"


def _format_validation_error(path: Path, err: ValidationError) -> str:
    lines = [f"{path}: invalid configuration"]
    for e in err.errors():
        loc = ".".join(str(p) for p in e["loc"]) or "(top level)"
        lines.append(f"  {loc}: {e['msg']}")
    return "\n".join(lines)


def parse_config(data: Any, *, source: Path | str = "<config>") -> GatewayConfig:
    """Validate an already-loaded mapping as a :class:`GatewayConfig`.

    Raises :class:`ConfigError` naming ``source``, each key path and what was expected.
    """
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a mapping at the top level, got {type(data).__name__}")
    try:
        return GatewayConfig.model_validate(data)
    except ValidationError as err:
        raise ConfigError(_format_validation_error(Path(str(source)), err)) from err


def load_config(path: Path) -> GatewayConfig:
    """Read and validate the YAML file at ``path``.

    Raises :class:`ConfigError` when the file is missing, is not YAML, or does not validate.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise ConfigError(f"{path}: cannot read configuration: {err}") from err
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise ConfigError(f"{path}: not valid YAML: {err}") from err
    return parse_config(data, source=path)


def default_config_path() -> Path:
    """The embedded default configuration (``config/default.yaml`` in a checkout, or the copy
    packaged inside ``gateway/_config`` in an installed wheel)."""
    here = Path(__file__).resolve().parent
    for candidate in (here.parent / "config" / "default.yaml", here / "_config" / "default.yaml"):
        if candidate.exists():
            return candidate
    raise ConfigError("config/default.yaml not found next to the gateway package")
