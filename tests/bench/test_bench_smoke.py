"""The benchmark harness runs end to end in smoke mode: nginx, the floor, Turnstile and
LiteLLM's proxy start, every server answers every case (translation lanes included), one level
of the sustained-load and stream-ceiling ramps runs for each, Turnstile runs with two worker
processes, and the results tables print. No timing is asserted."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
REQUIRED = os.environ.get("TURNSTILE_REQUIRE_SERVICES") == "1"
LANES = ("x-an2oa", "x-an2oa-stream", "x-oa2an", "x-oa2an-stream")  # bench.bodies.LANES


def _have_tools() -> bool:
    return shutil.which("wrk") is not None and (shutil.which("nginx") or Path("/usr/sbin/nginx").exists())


@pytest.mark.skipif(
    not _have_tools() and not REQUIRED, reason="nginx and wrk are not installed (.ci/run installs them)"
)
def test_benchmark_smoke_every_server_answers_and_a_table_prints(tmp_path: Path) -> None:
    out = tmp_path / "RESULTS.md"
    res = subprocess.run(
        [sys.executable, "-m", "bench.run", "--smoke", "--no-install", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
    )
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-4000:]
    text = out.read_text()
    assert "| case | conns | server | req/s |" in text
    for server in ("upstream alone (nginx)", "floor (Starlette+aiohttp)", "Turnstile", "LiteLLM proxy"):
        for case in ("openai", "openai-stream", "anthropic", "anthropic-stream", "tools-40", *LANES):
            assert f"| {case} | 1 | {server} |" in text, f"no row for {server} / {case}"
    assert "all answered correctly." in text
    # the four figures: every server has its row, and each ramp ran its one smoke level
    assert "## The four figures" in text
    for server in ("floor (Starlette+aiohttp)", "Turnstile", "LiteLLM proxy"):
        assert f"| {server} | 4 |" in text, f"no sustained-load level for {server}"
        assert f"| {server} | 8 |" in text, f"no stream-ceiling level for {server}"
    assert "| 2 | 1 |" in text  # Turnstile with two worker processes
