"""Results of a benchmark run and their Markdown report (tables, ratios, targets)."""

from __future__ import annotations

import importlib.metadata as md
import os
import platform
import subprocess
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.bodies import STREAM_CASES

NAMES = {
    "upstream": "upstream alone (nginx)",
    "floor": "floor (Starlette+aiohttp)",
    "turnstile": "Turnstile",
    "litellm": "LiteLLM proxy",
}


@dataclass
class Results:
    opts: dict[str, Any]
    runs: dict[tuple[str, str, int], dict[str, float]] = field(default_factory=dict)
    ttfb: dict[tuple[str, str], dict[str, float]] = field(default_factory=dict)
    answers: dict[tuple[str, str], str] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)
    sustained: dict[str, Any] = field(default_factory=dict)
    """server -> :class:`bench.phases.Sustained`"""
    ceiling: dict[str, Any] = field(default_factory=dict)
    """server -> list of :class:`bench.streams.Level`"""
    workers: dict[tuple[int, int], dict[str, float]] = field(default_factory=dict)
    """(Turnstile worker processes, connections) -> wrk row of the openai case"""
    notes: list[str] = field(default_factory=list)

    def complete(self) -> bool:
        """True when every started server answered every case and no server failed."""
        return not self.failures and all(v == "ok" for v in self.answers.values())


def _cmd(argv: list[str]) -> str:
    try:
        res = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return "absent"
    return (res.stdout + res.stderr).strip().splitlines()[0] if (res.stdout + res.stderr).strip() else "?"


def _ver(pkg: str) -> str:
    try:
        return md.version(pkg)
    except md.PackageNotFoundError:
        return "absent"


def machine() -> list[str]:
    """Lines describing this machine and the software versions."""
    cpu = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = "?"
    try:
        kb = int(Path("/proc/meminfo").read_text().split()[1])
        mem = f"{kb / 1024 / 1024:.1f} GiB"
    except (OSError, ValueError, IndexError):
        pass
    from bench.procs import DEFAULT_LITELLM_VENV, LITELLM_VERSION

    litellm_py = DEFAULT_LITELLM_VENV / "bin" / "python"
    litellm_v = (
        _cmd([str(litellm_py), "-c", "import importlib.metadata as m; print(m.version('litellm'))"])
        if litellm_py.exists()
        else f"{LITELLM_VERSION} (not installed)"
    )
    rev = _cmd(["git", "-C", str(Path(__file__).resolve().parent.parent), "rev-parse", "--short", "HEAD"])
    return [
        f"- machine: {platform.node()}, {platform.system()} {platform.release()}, {cpu}, "
        f"{os.cpu_count()} CPUs, {mem} RAM",
        f"- Turnstile {_ver('turnstile-gateway')} (git {rev}), Python {platform.python_version()}, "
        f"uvicorn {_ver('uvicorn')}, uvloop {_ver('uvloop')}, httptools {_ver('httptools')}, "
        f"starlette {_ver('starlette')}, aiohttp {_ver('aiohttp')}, pydantic {_ver('pydantic')}, "
        f"orjson {_ver('orjson')}",
        f"- LiteLLM proxy {litellm_v} (own virtual environment), {_cmd(['nginx', '-v'])}, "
        f"{_cmd(['wrk', '-v'])}",
    ]


def _f(x: float | None, nd: int = 2) -> str:
    return "—" if x is None else f"{x:,.{nd}f}"


def _ratio(a: float | None, b: float | None) -> str:
    return "—" if not a or not b else f"{a / b:.2f}x"


def servers_of(r: Results) -> list[str]:
    """The servers of this run, in table order."""
    return [s for s in NAMES if any(k[0] == s for k in r.answers)]


def render(r: Results, elapsed_s: float) -> str:
    """The Markdown report."""
    o = r.opts
    conns: list[int] = o["connections"]
    cases: list[str] = o["cases"]
    servers = servers_of(r)
    out = [
        "# Benchmark: Turnstile vs LiteLLM proxy vs a bare pass-through floor",
        "",
        f"Run {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')} with `python -m bench.run` "
        f"({elapsed_s:.0f} s). wrk, 1 thread, {o['duration_s']:.0f} s per run after "
        f"{o['warmup_s']:.0f} s warm-up; one worker process per server; everything on 127.0.0.1.",
        "",
        *machine(),
        f"- load average (1 min) at start {o.get('load_start', 0):.2f}, at end {os.getloadavg()[0]:.2f} "
        "(other work on the machine shares its 2 cores: compare within a run, not across runs)",
        "",
        "Turnstile runs as in production: guards (pairing reject, ordering reorder, truncation "
        "withhold, thinking strip), aliases with a fallback deployment, accounting with the litellm "
        "price table, SQLite transcript, one JSON access-log line per request.",
        "",
        "## Throughput and latency",
        "",
        "`+p50` is the median added over the upstream alone at the same connection count; RSS is the "
        "server's peak resident memory during that run; errors are failed or non-2xx responses.",
        "",
        "| case | conns | server | req/s | p50 ms | p99 ms | +p50 ms | peak RSS MB | errors |",
        "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for case in cases:
        for c in conns:
            up = r.runs.get(("upstream", case, c))
            for s in servers:
                row = r.runs.get((s, case, c))
                if row is None:
                    status = r.answers.get((s, case)) or r.failures.get(s, "not run")
                    out.append(f"| {case} | {c} | {NAMES[s]} | — | — | — | — | — | {status[:60]} |")
                    continue
                added = None if up is None or s == "upstream" else row["p50"] - up["p50"]
                rss = "—" if s == "upstream" else f"{row['rss_mb']:.0f}"
                out.append(
                    f"| {case} | {c} | {NAMES[s]} | {_f(row['rps'], 0)} | {_f(row['p50'], 3)} | "
                    f"{_f(row['p99'], 3)} | {_f(added, 3)} | {rss} | {int(row['errors'])} |"
                )
    out += [
        "",
        "## Ratios (requests/s)",
        "",
        "| case | conns | Turnstile / LiteLLM | Turnstile / floor |",
        "| --- | ---: | ---: | ---: |",
    ]
    for case in cases:
        for c in conns:
            t = r.runs.get(("turnstile", case, c), {}).get("rps")
            lite = r.runs.get(("litellm", case, c), {}).get("rps")
            fl = r.runs.get(("floor", case, c), {}).get("rps")
            out.append(f"| {case} | {c} | {_ratio(t, lite)} | {_ratio(t, fl)} |")
    stream_cases = [c for c in cases if c in STREAM_CASES]
    if stream_cases:
        out += [
            "",
            "## Streams: time to first byte",
            "",
            f"{o['ttfb_samples']} sequential streamed requests per cell from an aiohttp client; "
            "`last` is the time to the last byte; `+TTFB vs floor` is Turnstile's median TTFB minus "
            "the floor's.",
            "",
            "| case | server | TTFB p50 ms | TTFB p99 ms | last byte p50 ms | SSE frames |",
            "| --- | --- | ---: | ---: | ---: | ---: |",
        ]
        for case in stream_cases:
            for s in servers:
                t = r.ttfb.get((s, case))
                if t is None:
                    continue
                out.append(
                    f"| {case} | {NAMES[s]} | {_f(t['ttfb_p50'], 3)} | {_f(t['ttfb_p99'], 3)} | "
                    f"{_f(t['last_p50'], 3)} | {int(t['frames'])} |"
                )
            tt, ft = r.ttfb.get(("turnstile", case)), r.ttfb.get(("floor", case))
            if tt and ft:
                out.append(f"| {case} | +TTFB vs floor | {_f(tt['ttfb_p50'] - ft['ttfb_p50'], 3)} | | | |")
    from bench.figures import figures, targets

    out += figures(r)
    out += ["", "## Targets (this run)", ""]
    out += _targets(r) + targets(r)
    if r.failures:
        out += ["", "## Failures", ""] + [
            f"- {NAMES.get(k, k)}: {v.splitlines()[0]}" for k, v in r.failures.items()
        ]
    bad = {k: v for k, v in r.answers.items() if v != "ok"}
    out += [
        "",
        "## Answers",
        "",
        "Every server was checked with one request per case before loading it: "
        + ("all answered correctly." if not bad else ""),
    ]
    out += [f"- {NAMES[s]} / {c}: {v}" for (s, c), v in bad.items()]
    return "\n".join(out) + "\n"


def _targets(r: Results) -> list[str]:
    def rps(s: str, case: str, c: int) -> float | None:
        return r.runs.get((s, case, c), {}).get("rps")

    lines = []
    t16, l16, f16 = rps("turnstile", "openai", 16), rps("litellm", "openai", 16), rps("floor", "openai", 16)
    if t16 and l16:
        lines.append(
            f"- OpenAI non-streaming, 16 connections, Turnstile / LiteLLM = {t16 / l16:.1f}x "
            f"(target ≥ 25x): {'reached' if t16 / l16 >= 25 else 'missed'}"
        )
    if t16 and f16:
        lines.append(
            f"- OpenAI non-streaming, 16 connections, Turnstile / floor = {t16 / f16:.0%} "
            f"(target ≥ 60%): {'reached' if t16 / f16 >= 0.6 else 'missed'}"
        )
    t1, u1 = r.runs.get(("turnstile", "openai", 1)), r.runs.get(("upstream", "openai", 1))
    if t1 and u1:
        added = t1["p50"] - u1["p50"]
        lines.append(
            f"- added median latency at 1 connection = {added:.3f} ms (target ≤ 0.5 ms): "
            f"{'reached' if added <= 0.5 else 'missed'}"
        )
    for case in STREAM_CASES:
        tt, ft = r.ttfb.get(("turnstile", case)), r.ttfb.get(("floor", case))
        if tt and ft:
            d = tt["ttfb_p50"] - ft["ttfb_p50"]
            lines.append(
                f"- {case}: TTFB over the floor = {d:.3f} ms (target ≤ 1 ms): "
                f"{'reached' if d <= 1 else 'missed'}"
            )
    peak = [v["rss_mb"] for (s, _, c), v in r.runs.items() if s == "turnstile" and c == 64]
    if peak:
        lines.append(
            f"- Turnstile peak RSS under 64 connections = {max(peak):.0f} MB (target ≤ 200 MB): "
            f"{'reached' if max(peak) <= 200 else 'missed'}"
        )
    return lines or ["- (not enough cells in this run to judge the targets)"]
