"""Coding-agent CLIs (Claude Code, Codex CLI, Gemini CLI) driven headless through the gateway process."""
