"""The scripted model's choices (:mod:`standins.agent_upstream`), on the tool lists the pinned
agents offer as a Chat Completions upstream sees them."""

from __future__ import annotations

import json
from typing import Any

from standins.agent_upstream import (
    EXEC_JS,
    MARKER,
    TOOL_CALLS,
    offered_tools,
    pick_tool,
    quote,
    smallest_instance,
)


def _fn(name: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "parameters": params or {"type": "object"}}}


def test_codex_code_mode_exec_is_called_with_javascript_in_its_one_string_parameter() -> None:
    exec_params = {"type": "object", "properties": {"code": {"type": "string"}}, "required": ["code"]}
    offered = offered_tools({"tools": [_fn("functions.wait"), _fn("functions.exec", exec_params)]})
    picked = pick_tool(offered)
    assert picked == ("functions.exec", "exec")
    assert TOOL_CALLS["exec"](offered["functions.exec"]) == {"code": EXEC_JS}
    assert "tools.exec_command" in EXEC_JS and "note.txt" in EXEC_JS


def test_gemini_cli_read_file_is_preferred_to_its_shell() -> None:
    offered = offered_tools({"tools": [_fn("run_shell_command"), _fn("read_file"), _fn("glob")]})
    assert pick_tool(offered) == ("read_file", "read_file")
    assert TOOL_CALLS["read_file"]({}) == {"file_path": "note.txt"}


def test_a_tool_list_without_a_known_tool_gets_no_call() -> None:
    assert pick_tool(offered_tools({"tools": [_fn("update_topic"), _fn("execute")]})) is None


def test_the_final_answer_quotes_the_line_holding_the_marker() -> None:
    result = json.dumps({"exit_code": 0, "output": f"The launch code is {MARKER}.\n"})
    assert MARKER in quote(f"Script completed\nOutput:\n{result}")
    assert quote("permission denied\nmore") == "The note says: permission denied"


def test_a_gemini_schema_with_upper_case_types_gets_its_smallest_instance() -> None:
    schema = {
        "type": "OBJECT",
        "properties": {"complexity_reasoning": {"type": "STRING"}, "complexity_score": {"type": "INTEGER"}},
        "required": ["complexity_reasoning", "complexity_score"],
    }
    assert smallest_instance(schema) == {"complexity_reasoning": "simple", "complexity_score": 1}
