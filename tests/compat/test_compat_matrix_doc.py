"""The compatibility matrix document round-trips (what the suite writes, it reads back)."""

from __future__ import annotations

from pathlib import Path

from .matrix import parse, render, write_merged


def test_rendered_matrix_parses_back_to_the_same_outcomes() -> None:
    outcomes = {("openai", "chat", "gemini"): "pass", ("openai", "chat", "mcp"): "FAIL"}
    checks = {("openai", "chat"): "the text | arrives"}
    assert parse(render(outcomes, checks)) == (outcomes, checks)


def test_partial_run_keeps_rows_it_did_not_run(tmp_path: Path) -> None:
    doc = tmp_path / "compat.md"
    write_merged(doc, {("openai", "a", "gemini"): "pass"}, {("openai", "a"): "x"}, full=True)
    write_merged(doc, {("anthropic", "b", "gemini"): "FAIL"}, {("anthropic", "b"): "y"}, full=False)
    assert parse(doc.read_text())[0] == {
        ("openai", "a", "gemini"): "pass",
        ("anthropic", "b", "gemini"): "FAIL",
    }
    write_merged(doc, {("anthropic", "b", "gemini"): "pass"}, {("anthropic", "b"): "y"}, full=True)
    assert parse(doc.read_text())[0] == {("anthropic", "b", "gemini"): "pass"}
