from __future__ import annotations

import asyncio
import dataclasses
import os
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from gateway import logs
from gateway.cli import app
from gateway.transcript import TranscriptWriter, TurnRecord

runner = CliRunner()


@pytest.fixture(autouse=True)
def _serve_environment_is_restored(monkeypatch: pytest.MonkeyPatch) -> None:
    """``serve`` hands its choices to the app factory through the environment; monkeypatch
    restores it after each test."""
    for var in (
        "TURNSTILE_CONFIG",
        "TURNSTILE_HOST",
        "TURNSTILE_ALLOW_ANONYMOUS",
        "TURNSTILE_LOG_LEVEL",
        "TURNSTILE_CONSOLE_TOKEN",
        "TURNSTILE_WORKERS",
        "TURNSTILE_WORKERS_STATE",
        "PROMETHEUS_MULTIPROC_DIR",
    ):
        monkeypatch.setenv(var, "")  # recorded, so that undo restores it (or its absence)
        monkeypatch.delenv(var)


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


def _write_turns(db: Path, *records: TurnRecord) -> None:
    async def write() -> None:
        writer = TranscriptWriter(db)
        await writer.start()
        for record in records:
            await writer.append(record)
        await writer.close()

    asyncio.run(write())


LONG_TURN = TurnRecord(
    request_id="abc123def456xyz0011223344556677",
    ts=1_700_000_000.0,
    client_dialect="anthropic_messages",
    requested_model="claude-sonnet-4-5",
    stream=True,
    status=200,
    deployment="anthropic-claude-sonnet-4-5",
    stop_reason="tool_use",
    usage={"input_tokens": 123_456, "output_tokens": 7_890, "estimated": True},
    cost_usd=0.123456,
    latency_ms=12_345.6,
)
FAILED_TURN = TurnRecord(
    request_id="ffff23def456xyz0011223344556677",
    ts=1_700_000_100.0,
    client_dialect="openai_chat",
    requested_model="gpt-4.1",
    stream=False,
    status=404,
    deployment=None,
    usage={"input_tokens": 0, "output_tokens": 0},
    error="model 'gpt-4.1' is disabled: set OPENAI_API_KEY in the gateway's environment and restart it",
)


def test_logs_at_80_columns_fits_and_cuts_nothing_important(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    _write_turns(db, LONG_TURN, FAILED_TURN)
    result = runner.invoke(app, ["logs", "--db", str(db)], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert max(len(line) for line in lines) <= 80, result.output
    assert "…" not in result.output, result.output
    for whole in ("abc123de ", "anthropic-claude-sonnet-4-5", "tool_use", "123k/7.9k*", "0.1235", "12346"):
        assert whole in result.output, (whole, result.output)
    assert f"recent turns in {db} (UTC 2023-11-14, newest first)" in " ".join(result.output.split())
    assert "2023-11-14" in result.output  # one day: the date is in the title
    assert "404 ↓" in result.output  # the failure, with its message in full under the table
    assert FAILED_TURN.error in " ".join(result.output.split())


def test_logs_at_80_columns_folds_long_names_instead_of_cutting_them(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    repaired = dataclasses.replace(
        LONG_TURN, request_id="0123456789abcdef", guard_outcome="repaired", ts=1_700_086_400.0
    )
    step = dataclasses.replace(LONG_TURN, request_id=LONG_TURN.request_id + ".step1", ts=1_699_999_999.0)
    _write_turns(db, LONG_TURN, repaired, step)
    result = runner.invoke(app, ["logs", "--db", str(db)], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    assert max(len(line) for line in result.output.splitlines()) <= 80, result.output
    assert "…" not in result.output and "repair" in result.output
    assert "11-14 22:13" in result.output and "11-15 22:13" in result.output  # two days: dates per row
    lines = result.output.splitlines()
    assert "abc123de.step1" in result.output  # a tool-loop step does not look like a duplicate
    starts = [i for i, line in enumerate(lines) if "anthropic-" in line]
    assert len(starts) == 3, result.output
    for i in starts:  # the name continues on the next lines, in the same column
        at, name = lines[i].index("anthropic-"), lines[i][lines[i].index("anthropic-") :].split(" ")[0]
        for line in lines[i + 1 :]:
            if line[:at].strip() or not line[at:].strip():
                break
            name += line[at:].split(" ")[0]
        assert name == "anthropic-claude-sonnet-4-5", result.output


def test_logs_without_a_transcript_says_so(tmp_path: Path) -> None:
    result = runner.invoke(app, ["logs", "--db", str(tmp_path / "none.db")])
    assert result.exit_code == 0 and "no transcript" in result.output


def _demo_config(tmp_path: Path, auth: str | None = "optional", **server: object) -> Path:
    """A demo config file; ``auth``: its ``access.auth`` (optional: clients need no key; None:
    the default for the host, ``required`` off loopback)."""
    path = tmp_path / "gateway.yaml"
    lines = [f"  db_path: {tmp_path / 't.db'}", *(f"  {k}: {str(v).lower()}" for k, v in server.items())]
    path.write_text(
        (f"access:\n  auth: {auth}\n" if auth is not None else "") + "server:\n" + "\n".join(lines) + "\n"
        "deployments:\n  - {name: demo, api: demo, model: turnstile-demo, price: {input: 0, output: 0}}\n"
    )
    return path


def _fake_uvicorn(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, object]]:
    """uvicorn.run replaced: records its arguments and builds the app as uvicorn's factory
    call would (no arguments: the factory reads what serve put in the environment)."""
    import uvicorn

    from gateway.server import create_app

    calls: list[dict[str, object]] = []

    def run(*args: object, **kwargs: object) -> None:
        calls.append(kwargs)
        create_app()

    monkeypatch.setattr(uvicorn, "run", run)
    monkeypatch.setattr(logs, "configure", lambda *a, **kw: None)  # keeps the test's stderr
    return calls


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.20", "gateway.example.com"])
def test_serve_refuses_a_non_loopback_host_without_client_authentication(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, host: str
) -> None:
    calls = _fake_uvicorn(monkeypatch)
    result = runner.invoke(app, ["serve", "--config", str(_demo_config(tmp_path)), "--host", host])
    assert result.exit_code == 2 and calls == []
    line = result.stderr.strip()
    assert "\n" not in line, "one line"
    assert line.startswith(f"turnstile: refusing to serve on {host}: it is not a loopback address")
    assert "provider keys" in line and "127.0.0.1" in line and "--allow-anonymous" in line


def test_serve_refuses_a_public_host_from_the_config_or_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _fake_uvicorn(monkeypatch)
    in_config = runner.invoke(app, ["serve", "--config", str(_demo_config(tmp_path, host="0.0.0.0"))])
    monkeypatch.setenv("TURNSTILE_HOST", "::")
    in_env = runner.invoke(app, ["serve", "--config", str(_demo_config(tmp_path))])
    assert (in_config.exit_code, in_env.exit_code) == (2, 2) and calls == []
    assert "refusing to serve on 0.0.0.0" in in_config.stderr and "refusing to serve on ::" in in_env.stderr


def test_serve_on_a_public_host_needs_no_permission_when_keys_are_required_by_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _fake_uvicorn(monkeypatch)
    result = runner.invoke(
        app, ["serve", "--config", str(_demo_config(tmp_path, auth=None)), "--host", "0.0.0.0"]
    )
    assert result.exit_code == 0, result.output
    assert calls[0]["host"] == "0.0.0.0"


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "::1", "localhost"])
def test_serve_on_a_loopback_host_needs_no_permission(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, host: str
) -> None:
    calls = _fake_uvicorn(monkeypatch)
    result = runner.invoke(app, ["serve", "--config", str(_demo_config(tmp_path)), "--host", host])
    assert result.exit_code == 0, result.output
    assert calls[0]["host"] == host


@pytest.mark.parametrize("how", ["flag", "environment", "config"])
def test_allow_anonymous_serves_a_public_host_and_warns_at_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    import structlog
    from structlog.testing import capture_logs

    from gateway import exposure

    monkeypatch.setattr(exposure, "log", structlog.get_logger("turnstile.exposure"))  # not cached yet
    calls = _fake_uvicorn(monkeypatch)
    config = _demo_config(tmp_path, **({"allow_anonymous": True} if how == "config" else {}))
    args = ["serve", "--config", str(config), "--host", "0.0.0.0"]
    if how == "flag":
        args.append("--allow-anonymous")
    if how == "environment":
        monkeypatch.setenv("TURNSTILE_ALLOW_ANONYMOUS", "1")
    with capture_logs() as logged:
        result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert calls[0]["host"] == "0.0.0.0"
    warned = [e for e in logged if e["event"] == "serving_anonymous_clients"]
    assert len(warned) == 1 and warned[0]["log_level"] == "warning" and warned[0]["host"] == "0.0.0.0"


def test_serve_help_says_it_runs_until_stopped_and_names_allow_anonymous() -> None:
    result = runner.invoke(app, ["serve", "--help"], env={"COLUMNS": "200"})
    assert "until Ctrl-C" in result.output and "--allow-anonymous" in result.output


@pytest.mark.parametrize(
    ("host", "flags"),
    [
        ("127.0.0.1 ", []),
        (" 127.0.0.1", []),
        ("127.0.0.1\t", []),
        ("::1\n", []),
        ("local host", []),
        ("no-such-host.invalid", ["--allow-anonymous"]),
        ("127.0.0.300", ["--allow-anonymous"]),
    ],
    ids=["trailing-space", "leading-space", "tab", "newline", "inner-space", "unresolvable", "bad-ipv4"],
)
def test_serve_refuses_a_host_it_cannot_listen_on_in_one_line_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, host: str, flags: list[str]
) -> None:
    calls = _fake_uvicorn(monkeypatch)
    result = runner.invoke(app, ["serve", "--config", str(_demo_config(tmp_path)), "--host", host, *flags])
    assert result.exit_code == 2 and calls == [], result.output
    line = result.stderr.strip()
    assert "\n" not in line, "one line"
    assert line.startswith(f"turnstile: cannot listen on host {host!r}: "), line
    assert "--host, TURNSTILE_HOST or server.host" in line


def test_serve_on_loopback_without_an_admin_key_prints_a_one_time_console_login_link(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _fake_uvicorn(monkeypatch)
    monkeypatch.delenv("TURNSTILE_ADMIN_KEY", raising=False)
    config = _demo_config(tmp_path)
    got = runner.invoke(app, ["serve", "--config", str(config), "--port", "4123"])
    assert got.exit_code == 0, got.output
    token = os.environ["TURNSTILE_CONSOLE_TOKEN"]
    assert len(token) >= 40 and f"http://127.0.0.1:4123/ui/login?token={token}" in got.output
    assert calls and calls[0]["port"] == 4123
    again = runner.invoke(app, ["serve", "--config", str(config), "--port", "4123"])
    assert os.environ["TURNSTILE_CONSOLE_TOKEN"] != token and token not in again.output  # a new one per start
    monkeypatch.setenv("TURNSTILE_ADMIN_KEY", "an-admin-key-of-the-operator")
    keyed = runner.invoke(app, ["serve", "--config", str(config)])
    assert "login link" not in keyed.output and "TURNSTILE_CONSOLE_TOKEN" not in os.environ


def test_serve_with_workers_hands_them_a_fresh_shared_file_for_counters_and_throttles(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import uvicorn

    from gateway.server import create_app

    apps: list[Any] = []
    monkeypatch.setattr(uvicorn, "run", lambda *a, **kw: apps.append((kw, create_app())))
    monkeypatch.setattr(logs, "configure", lambda *a, **kw: None)
    config = str(_demo_config(tmp_path))
    got = runner.invoke(app, ["serve", "--config", config, "--workers", "2"])
    assert got.exit_code == 0, got.output
    kw, built = apps[0]
    shared = Path(os.environ["TURNSTILE_WORKERS_STATE"])
    assert kw["workers"] == 2 and os.environ["TURNSTILE_WORKERS"] == "2"
    assert shared.parent.is_dir() and not shared.exists()  # a fresh one: seeded from the ledger
    assert built.state.key_guesses.shared_path == str(shared)  # the throttle counts in it
    chosen = tmp_path / "operator" / "w.db"
    monkeypatch.setenv("TURNSTILE_WORKERS_STATE", str(chosen))  # an operator's choice is kept
    runner.invoke(app, ["serve", "--config", config, "--workers", "3"])
    assert apps[1][1].state.key_guesses.shared_path == str(chosen)
    runner.invoke(app, ["serve", "--config", config])  # one worker: nothing shared
    assert os.environ["TURNSTILE_WORKERS"] == "1" and apps[2][1].state.key_guesses.shared_path is None
