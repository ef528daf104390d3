"""The npm packages the compatibility suite drives, at pinned versions (latest on the npm registry
when pinned). Bumping one: change it here, run ``tests/compat``, regenerate ``docs/compat.md``."""

from __future__ import annotations

from e2e.npm_tools import PINNED as AGENT_CLIS

# The Vercel AI SDK and the providers its scenarios use (latest on npm on 2026-12-04); zod is
# its schema library (a peer dependency).
VERCEL_AI: dict[str, str] = {
    "ai": "7.0.173",
    "@ai-sdk/openai": "4.0.118",
    "@ai-sdk/anthropic": "4.0.105",
    "@ai-sdk/google": "4.0.121",
    "zod": "4.6.7",
}
# The MCP Inspector (its CLI mode), latest on npm on 2026-12-04.
MCP_INSPECTOR: dict[str, str] = {"@modelcontextprotocol/inspector": "2.12.0"}

NPM_PINNED: dict[str, str] = {
    **AGENT_CLIS,
    "@anthropic-ai/claude-code": "2.1.332",  # tests/compat/agents/test_claude_code.py (latest on 2026-12-04)
    **VERCEL_AI,
    **MCP_INSPECTOR,
}
