"""Claude Code (pinned, npm) headless through the gateway process to the scripted Claude
(:class:`compat.agents.claude_code_upstream.ClaudeCodeUpstream`): its install, the gateway's
configuration, the environment it runs in and one run.

* **Install**: ``@anthropic-ai/claude-code`` at :data:`PINNED` into ``.cache/compat-claude-code``
  (:func:`e2e.npm_tools.ensure_installed`, install scripts off). The package ships its program as
  a native binary in a platform package (``@anthropic-ai/claude-code-linux-x64``); with install
  scripts off the wrapper's ``cli-wrapper.cjs`` launches it, run here on the pinned Node.
* **Gateway**: one ``anthropic_messages`` deployment per model name Claude Code requests
  (:data:`e2e.model_names.REQUESTED`, ``claude-code``), each sending that same model id
  upstream, so the stand-in sees what Claude Code asked for.
* **Environment** (:func:`claude_env`): nothing inherited; ``ANTHROPIC_BASE_URL`` the gateway, a
  fake ``ANTHROPIC_API_KEY``, telemetry, error reporting, auto-update and all non-essential
  traffic off, ``ENABLE_TOOL_SEARCH=true`` (Claude Code 2.1.332 reads it in its tool-search
  mode function: ``true`` is mode ``tst``, deferred tools behind its ``ToolSearch`` tool, for
  any base URL), and the proxy trap of :mod:`e2e.harness` for anything else.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import yaml
from aiohttp import web
from e2e.harness import E2E, UPSTREAM_KEY_ENV, AgentRun
from e2e.model_names import REQUESTED
from e2e.npm_tools import REPO, Tools, ensure_installed
from standins.upstream import ANTHROPIC, Received

from ..npm_pins import NPM_PINNED
from .claude_code_upstream import ClaudeCodeUpstream

PACKAGE = "@anthropic-ai/claude-code"
PINNED = {PACKAGE: NPM_PINNED[PACKAGE]}
PREFIX = REPO / ".cache" / "compat-claude-code"
TIMEOUT_S = 60
CLIENT_KEY = "sk-ant-compat-client-0000"  # what Claude Code sends the gateway (no client auth on loopback)
TOOL_SEARCH_BETA = "advanced-tool-use-2025-11-20"
MODELS = REQUESTED["claude-code"]
VIA_OPENAI = "claude-code-via-openai"
"""A model name (``claude --model``) the gateway routes to an OpenAI Chat Completions upstream."""
OPENAI_MODEL = "gpt-scripted"


def install() -> Tools:
    """Claude Code at its pin under :data:`PREFIX` (raises ``RegistryUnreachable`` without npm)."""
    return ensure_installed(PREFIX, pinned=PINNED)


def command(tools: Tools, prompt: str, *extra: str) -> list[str]:
    """``claude -p <prompt> --output-format json <extra>`` through the wrapper on the pinned Node."""
    wrapper = tools.prefix / "node_modules" / PACKAGE / "cli-wrapper.cjs"
    node = Path(tools.path_env().split(":")[0]) / "node"
    return [str(node), str(wrapper), "-p", prompt, "--output-format", "json", *extra]


def gateway_config(upstream_url: str, db_path: Path) -> dict[str, Any]:
    """One Anthropic Messages deployment per model name Claude Code requests, each sending
    that model id to the scripted Claude; and :data:`VIA_OPENAI` to an OpenAI Chat Completions
    deployment of the same stand-in."""
    return {
        "server": {"host": "127.0.0.1", "db_path": str(db_path)},
        "deployments": [
            {
                "name": f"scripted-{name}",
                "api": "anthropic_messages",
                "model": name,
                "base_url": upstream_url,
                "api_key_env": UPSTREAM_KEY_ENV,
                "context_window": 1_000_000,
                "price": {"input": 0, "output": 0},
            }
            for name in MODELS
        ]
        + [
            {
                "name": "scripted-openai",
                "api": "openai_chat",
                "model": OPENAI_MODEL,
                "base_url": f"{upstream_url}/v1",
                "api_key_env": UPSTREAM_KEY_ENV,
                "context_window": 1_000_000,
                "price": {"input": 0, "output": 0},
            }
        ],
        "models": [{"name": name, "deployments": [f"scripted-{name}"]} for name in MODELS]
        + [{"name": VIA_OPENAI, "deployments": ["scripted-openai"]}],
    }


def write_config(tmp: Path, upstream_url: str) -> tuple[Path, Path]:
    """Write the gateway's configuration under ``tmp``; returns ``(config path, db path)``."""
    db_path = tmp / "transcript.db"
    config = tmp / "gateway.yaml"
    config.write_text(yaml.safe_dump(gateway_config(upstream_url, db_path), sort_keys=False))
    return config, db_path


def claude_env(e2e: E2E, tools: Tools, base_url: str) -> dict[str, str]:
    """Claude Code's environment: ``base_url`` (the gateway, or a :class:`ClientTap` in front
    of it), a fake key, no telemetry, tool search on, the proxy trap
    (:meth:`e2e.harness.E2E.agent_env`)."""
    return e2e.agent_env(
        tools.path_env(),
        ANTHROPIC_BASE_URL=base_url,
        ANTHROPIC_API_KEY=CLIENT_KEY,
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        DISABLE_TELEMETRY="1",
        DISABLE_ERROR_REPORTING="1",
        DISABLE_AUTOUPDATER="1",
        DISABLE_BUG_COMMAND="1",
        ENABLE_TOOL_SEARCH="true",
        CLAUDE_CONFIG_DIR=str(e2e.home / ".claude"),
    )


def result_of(run: AgentRun) -> dict[str, Any]:
    """The ``--output-format json`` result object Claude Code printed ({} when none)."""
    try:
        value = json.loads(run.stdout)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


class ClientTap:
    """A pass-through HTTP proxy on 127.0.0.1 between Claude Code and the gateway that keeps
    every request Claude Code sent (:class:`standins.upstream.Received`, api ``client``) and the
    headers of the gateway's answer to it (:attr:`answers`), and relays the answer unchanged,
    streamed as it arrives; so a test can compare what the client sent with what reached the
    upstream."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.received: list[Received] = []
        self.answers: list[dict[str, str]] = []
        """The gateway's response headers (lower-cased names), one per request received."""
        self.url = ""
        self._runner: web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None

    async def start(self) -> None:
        """Listen at a random port; sets :attr:`url`."""
        self._session = aiohttp.ClientSession(
            auto_decompress=False, timeout=aiohttp.ClientTimeout(total=TIMEOUT_S)
        )
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{path:.*}", self._relay)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = self._runner.addresses[0][1]
        self.url = f"http://127.0.0.1:{port}"

    async def stop(self) -> None:
        if self._session is not None:
            await self._session.close()
        if self._runner is not None:
            await self._runner.cleanup()

    async def _relay(self, request: web.Request) -> web.StreamResponse:
        assert self._session is not None
        raw = await request.read()
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        headers = {k.lower(): v for k, v in request.headers.items()}
        self.received.append(
            Received(
                api="client",
                path=request.path,
                model=str(body.get("model", "")) if isinstance(body, dict) else "",
                stream=bool(body.get("stream")) if isinstance(body, dict) else False,
                body=body,
                headers=headers,
                query=dict(request.query),
                raw=raw,
            )
        )
        forward = {k: v for k, v in request.headers.items() if k.lower() not in _HOP}
        async with self._session.request(
            request.method, self.target + request.path_qs, data=raw, headers=forward
        ) as answer:
            self.answers.append({k.lower(): v for k, v in answer.headers.items()})
            resp = web.StreamResponse(
                status=answer.status,
                headers={k: v for k, v in answer.headers.items() if k.lower() not in _HOP},
            )
            await resp.prepare(request)
            async for chunk in answer.content.iter_any():
                await resp.write(chunk)
            await resp.write_eof()
            return resp


_HOP = frozenset({"host", "content-length", "transfer-encoding", "connection", "keep-alive"})


@dataclass
class ClaudeCodeRig:
    """One test's gateway process, scripted Claude (``upstream``), proxy trap, workspace and home
    (``e2e``), and the tap in front of the gateway (``tap``) that Claude Code is pointed at."""

    e2e: E2E
    tap: ClientTap
    upstream: ClaudeCodeUpstream

    def run(self, tools: Tools, prompt: str, *extra: str) -> tuple[AgentRun, dict[str, Any]]:
        """Run ``claude -p prompt`` (bounded by :data:`TIMEOUT_S`); asserts exit 0 and a
        non-error result. Returns the run and its JSON result."""
        env = claude_env(self.e2e, tools, self.tap.url)
        run = self.e2e.run(command(tools, prompt, *extra), env=env, timeout_s=TIMEOUT_S)
        result = result_of(run)
        assert run.returncode == 0 and result.get("is_error") is False, f"{run.report()}\n{self.diagnosis()}"
        return run, result

    def pairs(self, api: str = ANTHROPIC) -> list[tuple[Received, Received]]:
        """``(what Claude Code sent, what reached the upstream)`` per Messages request, in order
        (asserts each client request went upstream once, to ``api``, and nothing else did)."""
        sent = [r for r in self.tap.received if r.path == "/v1/messages"]
        got = self.upstream.requests(api)
        assert len(sent) == len(got), f"{len(sent)} requests sent, {len(got)} upstream\n{self.diagnosis()}"
        assert [r.api for r in self.upstream.received] == [api] * len(got)
        return list(zip(sent, got, strict=True))

    def diagnosis(self) -> str:
        """What the client sent (paths), the scripted Claude's answers and the gateway's log."""
        return f"client sent: {[(r.path, r.model) for r in self.tap.received]}\n{self.e2e.diagnosis()}"


def betas(rec: Received) -> list[str]:
    """The ``anthropic-beta`` names of a request, in order."""
    return [b.strip() for b in rec.headers.get("anthropic-beta", "").split(",") if b.strip()]
