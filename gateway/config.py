"""Configuration: the YAML file (deployments, model aliases, guard policies) and the
environment settings object.

``Settings`` is the only reader of the environment. ``load_config`` reads a YAML file and
validates it; a validation error names the file, the key path and what was expected.
API keys are never in config files: a deployment names the environment variable
(``api_key_env``) that holds its key, and a deployment whose variable is unset is disabled.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from gateway.errors import ConfigError

WireAPI = Literal["openai_chat", "anthropic_messages", "gemini", "litellm", "demo"]


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

    def read_key(self, name: str) -> str | None:
        """The value of environment variable ``name`` (an API key), or None when unset/empty."""
        import os

        value = os.environ.get(name)
        return value or None


class Price(BaseModel):
    """Prices in USD per million tokens. Unset fields fall back to litellm's bundled table."""

    model_config = ConfigDict(extra="forbid")

    input: float | None = None
    output: float | None = None
    cache_read: float | None = None
    cache_write: float | None = None
    reasoning: float | None = None


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


class Deployment(BaseModel):
    """One upstream model endpoint: a wire API, a model id, a base URL and a key variable."""

    model_config = ConfigDict(extra="forbid")

    name: str
    api: WireAPI
    model: str
    provider: str = ""
    base_url: str | None = None
    api_key_env: str | None = None
    context_window: int | None = None
    max_output_tokens: int | None = None
    price: Price | None = None
    supports_images: bool = True
    supports_thinking: bool = True
    supports_tools: bool = True
    quirks: Quirks = Field(default_factory=Quirks)
    timeouts_s: dict[str, float] = Field(default_factory=dict)
    description: str | None = None

    @model_validator(mode="after")
    def _default_provider(self) -> Deployment:
        if not self.provider:
            self.provider = {
                "openai_chat": "openai",
                "anthropic_messages": "anthropic",
                "gemini": "google",
                "litellm": self.model.split("/", 1)[0] if "/" in self.model else "litellm",
                "demo": "turnstile",
            }[self.api]
        return self


class ModelAlias(BaseModel):
    """A name clients use, served by deployments in order: the first is primary, the rest
    are fallbacks."""

    model_config = ConfigDict(extra="forbid")

    name: str
    deployments: list[str]


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
    retry_output_factor: float = 2.0


class ServerConfig(BaseModel):
    """Listening address and request limits (bytes, seconds)."""

    model_config = ConfigDict(extra="forbid")

    host: str = "127.0.0.1"
    port: int = 4000
    max_body_bytes: int = 20 * 1024 * 1024
    db_path: str = "turnstile.db"
    transcript_queue: int = 10_000


class TimeoutConfig(BaseModel):
    """Upstream timeouts in seconds."""

    model_config = ConfigDict(extra="forbid")

    connect: float = 10.0
    first_byte: float = 120.0
    between_chunks: float = 120.0
    total: float = 900.0


class GatewayConfig(BaseModel):
    """The whole configuration file."""

    model_config = ConfigDict(extra="forbid")

    server: ServerConfig = Field(default_factory=ServerConfig)
    guards: GuardPolicy = Field(default_factory=GuardPolicy)
    timeouts: TimeoutConfig = Field(default_factory=TimeoutConfig)
    deployments: list[Deployment] = Field(default_factory=list)
    models: list[ModelAlias] = Field(default_factory=list)

    @model_validator(mode="after")
    def _check_references(self) -> GatewayConfig:
        names = [d.name for d in self.deployments]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"deployment names must be unique; repeated: {', '.join(dupes)}")
        known = set(names)
        for i, alias in enumerate(self.models):
            for j, dep in enumerate(alias.deployments):
                if dep not in known:
                    raise ValueError(
                        f"models[{i}].deployments[{j}]: unknown deployment {dep!r} "
                        f"(known: {', '.join(sorted(known))})"
                    )
        return self


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
