"""End-to-end harness: real agents driven headless through the real gateway process against a
scripted model (Codex CLI and Gemini CLI: their tests are rows of the compatibility matrix in
``tests/compat/agents``; the OpenAI Agents SDK here), and the harness's own tests."""
