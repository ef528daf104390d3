"""The gateway configuration the wire tests run: deployments of every wire API pointing at the
upstream stand-in, aliases with fallbacks, and the deployments the handed cases name.

Keys come from fake environment variables (:data:`KEY_ENV`) that the session fixture sets.
Every deployment has an explicit price (USD per million tokens, the handed case C30 rates) so
``x-turnstile-cost-usd`` is deterministic.
"""

from __future__ import annotations

from gateway.config import (
    Deployment,
    GatewayConfig,
    GuardPolicy,
    ModelAlias,
    Price,
    ServerConfig,
    TimeoutConfig,
)

KEY_ENV = {
    "openai_chat": "TURNSTILE_WIRE_OPENAI_KEY",
    "openai_responses": "TURNSTILE_WIRE_RESPONSES_KEY",
    "anthropic_messages": "TURNSTILE_WIRE_ANTHROPIC_KEY",
    "gemini": "TURNSTILE_WIRE_GEMINI_KEY",
}
KEYS = {
    "openai_chat": "sk-wire-openai-0000",
    "openai_responses": "sk-wire-responses-0000",
    "anthropic_messages": "sk-ant-wire-0000",
    "gemini": "wire-gemini-key-0000",
}
PRICE = Price(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75)
MAX_BODY_BYTES = 256 * 1024
SLOW_FIRST_BYTE_S = 0.25

# The matrix deployments: name -> (api, upstream model id as in the recordings)
MATRIX = {
    "openai_chat": ("oa", "gpt-4o-mini"),
    "anthropic_messages": ("an", "claude-sonnet-4-20250514"),
    "gemini": ("ge", "gemini-3-pro-preview"),
    "openai_responses": ("rs", "gpt-4o-mini"),
}
# Responses deployments of reasoning models (encrypted reasoning round trips): the one the
# recordings came from, and another model of the same provider (its reasoning is not sent there).
RESPONSES_REASONING = {"rs-gpt-5": "gpt-5", "rs-gpt-5-mini": "gpt-5-mini"}
# Deployments the handed cases route to (the deployment name is the model name clients send).
HANDED = {
    "claude-sonnet-4-5": "anthropic_messages",
    "claude-haiku-4-5": "anthropic_messages",
    "local-vision-model": "openai_chat",
    "some-oai-model": "openai_chat",
    "gemini-2.5-pro": "gemini",
    "gemini-2.5-flash": "gemini",
    "model-A": "anthropic_messages",
    "model-B": "anthropic_messages",
}
# Upstream model ids of the C16 pair (distinct, so the stand-in can tell them apart).
C16_MODELS = {"model-A": "claude-model-a", "model-B": "claude-model-b"}

# Aliases: first deployment is the primary.
FALLBACK = "wire-fallback"  # anthropic primary -> openai backup
SLOW = "wire-slow"  # gemini with a tiny first-byte timeout -> openai backup
SLOW_ONLY = "wire-slow-only"
RS_FALLBACK = "wire-rs-fallback"  # openai_responses primary -> openai_chat backup
CHAT_FIRST = "wire-chat-first"  # openai_chat first -> anthropic (capability skips)
AUTO_A_FIRST = "auto"  # C16 turn 1: model-A primary
AUTO_B_FIRST = "auto-b"  # C16 turn 2: the routing would pick model-B


def base_url(api: str, standin_url: str) -> str:
    """The base URL a deployment of ``api`` uses: OpenAI (both APIs) ``…/v1``, Anthropic the host root,
    Gemini ``…/v1beta``."""
    return {
        "openai_chat": f"{standin_url}/v1",
        "openai_responses": f"{standin_url}/v1",
        "anthropic_messages": standin_url,
        "gemini": f"{standin_url}/v1beta",
    }[api]


def _dep(name: str, api: str, model: str, url: str, **extra: object) -> Deployment:
    return Deployment(
        name=name,
        api=api,
        model=model,
        base_url=base_url(api, url),
        api_key_env=KEY_ENV[api],
        price=PRICE,
        context_window=200_000,
        **extra,  # type: ignore[arg-type]
    )


def build_config(standin_url: str, db_path: str) -> GatewayConfig:
    """The whole wire-test gateway configuration."""
    deps = [_dep(name, api, model, standin_url) for api, (name, model) in MATRIX.items()]
    for name, api in HANDED.items():
        deps.append(_dep(name, api, C16_MODELS.get(name, name), standin_url))
    deps += [
        _dep(name, "openai_responses", model, standin_url) for name, model in RESPONSES_REASONING.items()
    ]
    deps += [
        _dep("an-primary", "anthropic_messages", "claude-primary", standin_url),
        _dep("oa-backup", "openai_chat", "gpt-backup", standin_url),
        _dep(
            "ge-slow",
            "gemini",
            "gemini-slow",
            standin_url,
            timeouts_s={"connect": SLOW_FIRST_BYTE_S, "first_byte": SLOW_FIRST_BYTE_S},
        ),
    ]
    aliases = [
        ModelAlias(name=FALLBACK, deployments=["an-primary", "oa-backup"]),
        ModelAlias(name=SLOW, deployments=["ge-slow", "oa-backup"]),
        ModelAlias(name=SLOW_ONLY, deployments=["ge-slow"]),
        ModelAlias(name=RS_FALLBACK, deployments=[MATRIX["openai_responses"][0], "oa-backup"]),
        ModelAlias(name=CHAT_FIRST, deployments=["oa-backup", "an-primary"]),
        ModelAlias(name=AUTO_A_FIRST, deployments=["model-A", "model-B"]),
        ModelAlias(name=AUTO_B_FIRST, deployments=["model-B", "model-A"]),
    ]
    return GatewayConfig(
        server=ServerConfig(host="127.0.0.1", max_body_bytes=MAX_BODY_BYTES, db_path=db_path),  # port unused
        guards=GuardPolicy(),
        timeouts=TimeoutConfig(connect=3.0, first_byte=5.0, between_chunks=5.0, total=20.0),
        deployments=deps,
        models=aliases,
    )


def time_server_spec() -> dict[str, object]:
    """The MCP server spec of the PyPI time server (``mcp-server-time``, installed beside this
    Python), id ``time``, in UTC: the real MCP server the tool-loop wire tests register."""
    import sys
    from pathlib import Path

    return {
        "id": "time",
        "transport": {
            "type": "stdio",
            "command": str(Path(sys.executable).parent / "mcp-server-time"),
            "args": ["--local-timezone", "UTC"],
        },
    }
