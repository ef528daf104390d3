"""The model names the pinned agents request when the user sets none (issue 13 item 5), as
observed against a recording stub on 2026-12-03 (tests/fixtures/e2e/) and read from each tool's
bundled model table. config/default.yaml and config/example.yaml route every one of them
(tests/e2e/test_model_names.py); README "Model names the tools ask for" documents them.
"""

from __future__ import annotations

REQUESTED: dict[str, list[str]] = {
    # Codex CLI 0.171.0: `model` unset -> its bundled catalog's default.
    "codex": ["gpt-6.2-sol"],
    # Gemini CLI 0.61.0, auto routing: the classifier asks flash-lite for a complexity score, then
    # the turn goes to flash (simple) or pro (complex).
    "gemini-cli": ["gemini-3.5-flash-lite", "gemini-3.8-flash", "gemini-3.1-pro-preview"],
    # Claude Code 2.1.332 with ANTHROPIC_BASE_URL: opus for the turn; its sonnet and haiku aliases
    # (haiku is the small/fast model for background requests).
    "claude-code": ["claude-opus-5-5", "claude-sonnet-5-5", "claude-haiku-5-5"],
    # openai-agents 0.24.0: agents.models.get_default_model() without OPENAI_DEFAULT_MODEL.
    "openai-agents": ["gpt-5.6-luna"],
}


def all_names() -> list[str]:
    """Every name in :data:`REQUESTED`, in order, once."""
    return list(dict.fromkeys(n for names in REQUESTED.values() for n in names))
