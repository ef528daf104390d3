"""The OpenAI Agents SDK (pinned, PyPI dev dependency) runs an agent with its own
``@function_tool`` through the gateway's OpenAI Responses edge (the SDK's default transport)
and completes the tool loop against the scripted model.

The agent (:mod:`tests.e2e.agents_sdk_agent`) runs in a child process with a clean environment
(``OPENAI_BASE_URL`` the gateway's ``/v1``, tracing off), bounded in time.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from standins.agent_upstream import MARKER

from .harness import CLIENT_KEY, E2E, require_edge
from .model_names import REQUESTED

TIMEOUT_S = 60
AGENT = Path(__file__).with_name("agents_sdk_agent.py")


def test_openai_agents_sdk_completes_tool_loop(e2e: E2E) -> None:
    require_edge(e2e.gateway.url, "openai_responses", "/v1/responses")
    path = os.pathsep.join([str(Path(sys.executable).parent), "/usr/bin", "/bin"])
    env = e2e.agent_env(
        path,
        OPENAI_BASE_URL=f"{e2e.gateway.url}/v1",
        OPENAI_API_KEY=CLIENT_KEY,
        OPENAI_AGENTS_DISABLE_TRACING="1",
    )
    run = e2e.run([sys.executable, str(AGENT)], env=env, timeout_s=TIMEOUT_S)

    assert run.returncode == 0, f"{run.report()}\n{e2e.diagnosis()}"
    assert MARKER in run.stdout, f"the final output does not quote the note\n{run.report()}"
    call_row, result_row = e2e.assert_tool_round_trip("read_note")
    assert call_row["requested_model"] in REQUESTED["openai-agents"]
    assert result_row["stop"] == "stop"
    e2e.assert_offline()
