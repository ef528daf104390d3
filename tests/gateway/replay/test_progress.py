"""Progress of ``turnstile replay`` from its first second: lines on stderr when stdout is not a
terminal, a progress bar when it is (gateway/replay/progress.py and the command)."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gateway.cli import app
from gateway.replay import cli as replay_cli
from gateway.replay.progress import LineProgress

FIX = Path(__file__).resolve().parents[3] / "tests" / "fixtures"
FILES = [FIX / "toolbench", FIX / "tau-bench"]  # 3 small files
COUNTED = re.compile(r"^replay: (\d+)/(\d+) files, (\d+) errors, \d+ s$")


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_replay_prints_progress_lines_on_stderr_from_the_start_when_stdout_is_not_a_terminal() -> None:
    result = CliRunner().invoke(app, ["replay", *map(str, FILES), "--jobs", "1", "--no-routing"])
    assert result.exit_code == 0, result.output
    lines = result.stderr.splitlines()
    assert lines[0].startswith("replay: starting"), lines  # before the pipeline is even imported
    counted = [m.groups() for m in map(COUNTED.match, lines) if m]
    assert counted[0] == ("0", "3", "0"), lines  # the files were found, none done yet
    assert counted[-1] == ("3", "3", "0"), lines
    assert all(COUNTED.match(line) or line.startswith("replay: ") for line in lines), lines
    assert "Totals" in result.stdout and "replay:" not in result.stdout  # the report stays clean


def test_replay_shows_a_progress_bar_from_the_start_when_stdout_is_a_terminal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(replay_cli, "stdout_is_terminal", lambda: True)
    result = CliRunner().invoke(
        app, ["replay", *map(str, FILES), "--jobs", "1", "--no-routing"], env={"COLUMNS": "100"}
    )
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "starting: loading the pipeline" in out  # drawn before anything was replayed
    assert "0/3" in out and "files, 0 errors" in out  # the files were found
    assert out.index("starting") < out.index("0/3") < out.index("Totals")
    assert result.stderr == ""  # no progress lines as well


def test_progress_lines_come_every_few_seconds_even_while_one_long_file_runs() -> None:
    clock, out = Clock(), io.StringIO()
    progress = LineProgress(out, clock=clock, every_s=5.0, ticker=False)
    progress.start(306)
    clock.t += 3
    progress.tick()  # too soon
    clock.t += 2
    progress.tick()
    clock.t += 7
    progress.file_done("a.jsonl", 1, 306, 0)  # not a tenth of the files, not 5 s since the last line
    clock.t += 0.5
    progress.file_done("b.jsonl", 120, 306, 3)  # a multiple of the tenth (30 files)
    progress.close()
    assert out.getvalue().splitlines() == [
        "replay: 0/306 files, 0 errors, 0 s",
        "replay: 0/306 files, 0 errors, 5 s",
        "replay: 1/306 files, 0 errors, 12 s",
        "replay: 120/306 files, 3 errors, 12 s",
        "replay: 120/306 files, 3 errors, 12 s (stopped)",
    ]
