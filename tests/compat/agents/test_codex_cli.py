"""Codex CLI (pinned, npm) runs headless through the gateway's OpenAI Responses edge
(``wire_api = "responses"``: Codex speaks nothing else) and completes a tool loop with its own
shell tool against the scripted model: it runs ``cat note.txt`` and quotes the note.

Codex is configured as a user pointing it at a gateway would: a ``config.toml`` in a
``CODEX_HOME`` of its own with a ``model_provider`` (base URL the gateway's ``/v1``), no
``model`` (so it asks for its default, which the gateway's config routes), and update checks,
analytics, feedback and plugins (which fetch from github.com and chatgpt.com) off.

Its default model (``gpt-6.2-sol``) runs in code mode: the tools arrive as an
``additional_tools`` input item of ``namespace`` tools, the shell is reached through the custom
tool ``exec`` (free-form JavaScript calling ``tools.exec_command``), and its result comes back
as a ``custom_tool_call_output`` (tests/fixtures/e2e/codex-0.171.0-exec-tool-loop.json).
A model outside its catalog (what a gateway user names to reach another provider) gets the
classic list instead: top-level ``tools`` with the ``exec_command`` function, a ``namespace``
of sub-agent tools and the hosted ``web_search`` tool, which a Chat Completions upstream
cannot serve, so the configuration turns it off (``web_search = "disabled"``).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from e2e.harness import CLIENT_KEY, E2E, OUTSIDE_CODEX_CATALOG, require_edge
from e2e.model_names import REQUESTED
from e2e.npm_tools import Tools
from standins.agent_upstream import MARKER

TIMEOUT_S = 120

CONFIG_TOML = """\
model_provider = "turnstile"
check_for_update_on_startup = false
web_search = "disabled"

[model_providers.turnstile]
name = "Turnstile"
base_url = "{base_url}"
env_key = "TURNSTILE_GATEWAY_KEY"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0

[analytics]
enabled = false

[feedback]
enabled = false

[features]
plugins = false
"""


def codex_home(home: Path, gateway_url: str) -> Path:
    """A ``CODEX_HOME`` holding the ``config.toml`` that points Codex at the gateway."""
    path = home / "codex"
    path.mkdir()
    (path / "config.toml").write_text(CONFIG_TOML.format(base_url=f"{gateway_url}/v1"))
    return path


def _row(scenario: str, tool: str) -> pytest.MarkDecorator:
    return pytest.mark.compat(
        client="codex",
        scenario=scenario,
        checks=f"the {tool} call's result (the note) goes back to the upstream; the final answer quotes it",
        api="openai_chat",
    )


@pytest.mark.parametrize(
    ("model", "tool"),
    [
        pytest.param(
            None,
            "exec",
            id="default-model-code-mode",
            marks=_row("codex exec: tool loop (default model, code mode)", "exec"),
        ),
        pytest.param(
            OUTSIDE_CODEX_CATALOG,
            "exec_command",
            id="model-outside-its-catalog",
            marks=_row("codex exec: tool loop (model outside its catalog)", "exec_command"),
        ),
    ],
)
def test_codex_exec_completes_tool_loop(e2e: E2E, agent_tools: Tools, model: str | None, tool: str) -> None:
    require_edge(e2e.gateway.url, "openai_responses", "/v1/responses")
    env = e2e.agent_env(
        agent_tools.path_env(),
        CODEX_HOME=str(codex_home(e2e.home, e2e.gateway.url)),
        TURNSTILE_GATEWAY_KEY=CLIENT_KEY,
    )
    cmd = [
        str(agent_tools.bin / "codex"),
        "exec",
        "--strict-config",  # a configuration key this version does not know fails the run
        "--skip-git-repo-check",
        "--ephemeral",
        "--sandbox",
        "read-only",
        "--color",
        "never",
        *(["--model", model] if model else []),
        "Read note.txt and tell me what it says.",
    ]
    run = e2e.run(cmd, env=env, timeout_s=TIMEOUT_S)

    assert run.returncode == 0, f"{run.report()}\n{e2e.diagnosis()}"
    assert MARKER in run.stdout, f"the final answer does not quote the note\n{run.report()}"
    call_row, result_row = e2e.assert_tool_round_trip(tool)
    e2e.assert_result_reached_upstream()
    assert call_row["requested_model"] == (model or REQUESTED["codex"][0])
    assert result_row["stop"] == "stop"
    e2e.assert_offline()
