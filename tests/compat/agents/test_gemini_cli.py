"""Gemini CLI (pinned, npm) runs headless (``-p``, ``--yolo``) through the gateway's Gemini edge
(``GOOGLE_GEMINI_BASE_URL``: ``/v1beta/models/{m}:generateContent`` and
``:streamGenerateContent?alt=sse``) and completes a tool loop with its own ``read_file`` tool
against the scripted model.

Gemini CLI is configured as a user would: a dummy ``GEMINI_API_KEY``, a home of its own whose
``~/.gemini/settings.json`` selects API-key auth and turns usage statistics, telemetry and
update checks off, and no model (auto routing: its classifier and the routed model, both mapped
by the gateway's config).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from e2e.harness import CLIENT_KEY, E2E, require_edge
from e2e.model_names import REQUESTED
from e2e.npm_tools import Tools
from standins.agent_upstream import MARKER

TIMEOUT_S = 120

SETTINGS = {
    "security": {"auth": {"selectedType": "gemini-api-key"}},
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
    "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
}


def gemini_settings(home: Path) -> None:
    """Write ``~/.gemini/settings.json`` under ``home``."""
    (home / ".gemini").mkdir()
    (home / ".gemini" / "settings.json").write_text(json.dumps(SETTINGS, indent=2))


@pytest.mark.compat(
    client="gemini-cli",
    scenario="gemini -p --yolo: read_file tool loop",
    checks="the read_file call's result (the note) goes back to the upstream; the final answer quotes it",
    api="openai_chat",
)
def test_gemini_cli_completes_tool_loop(e2e: E2E, agent_tools: Tools) -> None:
    probe_model = REQUESTED["gemini-cli"][0]
    require_edge(e2e.gateway.url, "gemini", f"/v1beta/models/{probe_model}:generateContent")
    gemini_settings(e2e.home)
    env = e2e.agent_env(
        agent_tools.path_env(),
        GEMINI_API_KEY=CLIENT_KEY,
        GOOGLE_GEMINI_BASE_URL=e2e.gateway.url,
        GEMINI_CLI_TRUST_WORKSPACE="true",
    )
    cmd = [
        str(agent_tools.bin / "gemini"),
        "--prompt",
        "Read note.txt and tell me what it says.",
        "--yolo",
        "--output-format",
        "text",
    ]
    run = e2e.run(cmd, env=env, timeout_s=TIMEOUT_S)

    assert run.returncode == 0, f"{run.report()}\n{e2e.diagnosis()}"
    assert MARKER in run.stdout, f"the final answer does not quote the note\n{run.report()}"
    call_row, result_row = e2e.assert_tool_round_trip("read_file")
    e2e.assert_result_reached_upstream()
    assert call_row["requested_model"] in REQUESTED["gemini-cli"]
    assert result_row["stop"] == "stop"
    e2e.assert_offline()
