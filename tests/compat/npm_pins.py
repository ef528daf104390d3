"""The npm packages the compatibility suite drives, at pinned versions (latest on the npm registry
when pinned). Bumping one: change it here, run ``tests/compat``, regenerate ``docs/compat.md``."""

from __future__ import annotations

from e2e.npm_tools import PINNED as AGENT_CLIS

NPM_PINNED: dict[str, str] = {
    **AGENT_CLIS,
    "@anthropic-ai/claude-code": "2.1.332",  # tests/compat/agents/test_claude_code.py (latest on 2026-12-04)
}
