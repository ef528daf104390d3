from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gateway import logs
from gateway.cli import app
from gateway.transcript import TranscriptWriter, TurnRecord

runner = CliRunner()


def test_serve_help_explains_every_option() -> None:
    result = runner.invoke(app, ["serve", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    for option in ("--config", "--host", "--port", "--workers"):
        assert option in result.output
    assert "keyless demo" in result.output and "one per CPU core" in result.output


def test_serve_refuses_an_invalid_config_with_its_path(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("server: {port: not-a-number}\n")
    result = runner.invoke(app, ["serve", "--config", str(bad)])
    assert result.exit_code == 2
    assert "server.port" in result.output and "bad.yaml" in result.output


def test_serve_log_level_reaches_the_app_factory(monkeypatch: pytest.MonkeyPatch) -> None:
    import uvicorn

    from gateway.config import Settings

    calls: list[dict[str, object]] = []
    monkeypatch.setattr(uvicorn, "run", lambda *a, **kw: calls.append(kw))
    monkeypatch.setattr(logs, "configure", lambda *a, **kw: None)  # keeps the test's stderr
    monkeypatch.delenv("TURNSTILE_CONFIG", raising=False)  # restored after the test
    monkeypatch.setenv("TURNSTILE_LOG_LEVEL", "info")
    result = runner.invoke(app, ["serve", "--log-level", "warning"])
    assert result.exit_code == 0, result.output
    assert calls[0]["log_level"] == "warning"
    assert Settings().log_level == "warning"  # what create_app configures logging with


def test_serve_log_level_defaults_to_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    import uvicorn

    calls: list[dict[str, object]] = []
    monkeypatch.setattr(uvicorn, "run", lambda *a, **kw: calls.append(kw))
    monkeypatch.setattr(logs, "configure", lambda *a, **kw: None)  # keeps the test's stderr
    monkeypatch.delenv("TURNSTILE_CONFIG", raising=False)
    monkeypatch.setenv("TURNSTILE_LOG_LEVEL", "WARNING")
    result = runner.invoke(app, ["serve"])
    assert result.exit_code == 0, result.output
    assert calls[0]["log_level"] == "warning"


def test_logs_shows_recent_turns_as_a_table(tmp_path: Path) -> None:
    db = tmp_path / "t.db"

    async def write() -> None:
        writer = TranscriptWriter(db)
        await writer.start()
        await writer.append(
            TurnRecord(
                request_id="abc123def456xyz",
                ts=1_700_000_000.0,
                client_dialect="anthropic_messages",
                requested_model="demo",
                stream=True,
                status=200,
                deployment="demo",
                stop_reason="tool_use",
                usage={"input_tokens": 12, "output_tokens": 7, "estimated": True},
                cost_usd=0.000123,
            )
        )
        await writer.close()

    asyncio.run(write())
    result = runner.invoke(app, ["logs", "--db", str(db)], env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    assert "abc123def456" in result.output and "anthropic_messages" in result.output
    assert "12/7 (est.)" in result.output and "0.000123" in result.output


def test_logs_without_a_transcript_says_so(tmp_path: Path) -> None:
    result = runner.invoke(app, ["logs", "--db", str(tmp_path / "none.db")])
    assert result.exit_code == 0 and "no transcript" in result.output
