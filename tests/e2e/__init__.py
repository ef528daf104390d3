"""End-to-end: real agents (Codex CLI, Gemini CLI, the OpenAI Agents SDK) driven headless
through the real gateway process against a scripted model."""
