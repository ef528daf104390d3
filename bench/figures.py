"""The four figures of a run (added latency at one connection, sustained load behind a 20 ms
upstream, the stream ceiling, the translation lanes), every worker count, and their targets, as
Markdown sections of ``bench/RESULTS.md``."""

from __future__ import annotations

from bench.bodies import LANES, PACED_CHUNKS, PACED_GAP_S, UPSTREAM_DELAY_S
from bench.phases import ERROR_BOUND, P99_BOUND_MS, Sustained
from bench.report import NAMES, Results, servers_of
from bench.streams import STALL_MS, highest_passed

LANE_CONNS = 16
"""Connections at which a translation lane is compared with its same-API lane."""


def _f(x: float | None, nd: int = 3) -> str:
    return "—" if x is None else f"{x:,.{nd}f}"


def added(r: Results, server: str, key: str) -> float | None:
    """``key`` (p50 / p99, ms) of ``server`` less the upstream alone's, openai case, 1 connection."""
    row, up = r.runs.get((server, "openai", 1)), r.runs.get(("upstream", "openai", 1))
    return None if row is None or up is None else row[key] - up[key]


def lane_ratio(r: Results, server: str, lane: str) -> float | None:
    """req/s of translation ``lane`` over its same-API lane's, at :data:`LANE_CONNS`."""
    a = r.runs.get((server, lane, LANE_CONNS), {}).get("rps")
    b = r.runs.get((server, LANES[lane], LANE_CONNS), {}).get("rps")
    return a / b if a and b else None


def _sustained_cell(r: Results, server: str) -> str:
    ramp: Sustained | None = r.sustained.get(server)
    if ramp is None:
        return "—"
    best = ramp.best()
    return "none held" if best is None else f"{best[1]['rps']:,.0f} (c={best[0]})"


def _ceiling_cell(r: Results, server: str) -> str:
    levels = r.ceiling.get(server)
    if levels is None:
        return "—"
    top = highest_passed(levels)
    more = "" if any(not lv.passed() for lv in levels) else "+"
    return f"{top:,}{more}" if top else f"< {levels[0].streams}"


def figures(r: Results) -> list[str]:
    """The figures' sections (empty lines between sections included)."""
    servers = servers_of(r)
    out = [
        "",
        "## The four figures",
        "",
        "- **added p50 / p99** at 1 connection: the openai case's p50 / p99 less the upstream "
        "alone's (wrk, one connection, the run's duration).",
        f"- **sustained req/s**: the upstream answers after {UPSTREAM_DELAY_S * 1000:.0f} ms (nginx "
        "`echo_sleep`); wrk (closed loop) at rising connection counts; the highest req/s of a level "
        f"with p99 < {P99_BOUND_MS:.0f} ms and errors < {ERROR_BOUND:.1%}.",
        f"- **stream ceiling**: the upstream sends {PACED_CHUNKS} chunks {PACED_GAP_S * 1000:.0f} ms "
        "apart (a 2 s answer); N clients each keep one stream open over one keep-alive connection, "
        "starting evenly over 2 s, measuring the streams begun in the next 4 s; a stream's gap is the "
        "longest time between two arrivals of body bytes, less the upstream's 50 ms, or its time to first "
        "byte (the upstream's first chunk is immediate); the ceiling is the largest N (64 → 2,048, "
        "doubling) with no stream failed, every client finishing one at least, and no added wait above "
        f"{STALL_MS:.0f} ms "
        "(`+`: the ramp's top level passed). The client (`bench/streams.py`, raw asyncio protocol on "
        "uvloop) and nginx share the 2 cores with the server.",
        f"- **translation lane**: req/s at {LANE_CONNS} connections of an Anthropic Messages client "
        "answered by an OpenAI Chat upstream (`x-an2oa`) over the Anthropic→Anthropic lane, and of an "
        "OpenAI Chat client answered by an Anthropic upstream (`x-oa2an`) over OpenAI→OpenAI; whole and "
        "streamed. The floor does not translate (it forwards the body as is), so its lane rows are a "
        "pass-through of the other dialect.",
        "",
        "| server | added p50 ms | added p99 ms | sustained req/s (20 ms upstream) | stream ceiling "
        "| an→oa / an | an→oa stream / an stream | oa→an / oa | oa→an stream / oa stream |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for s in servers:
        lanes = [
            lane_ratio(r, s, lane) for lane in ("x-an2oa", "x-an2oa-stream", "x-oa2an", "x-oa2an-stream")
        ]
        cells = ["—" if x is None else f"{x:.0%}" for x in lanes]
        p50 = None if s == "upstream" else added(r, s, "p50")
        p99 = None if s == "upstream" else added(r, s, "p99")
        out.append(
            f"| {NAMES[s]} | {_f(p50)} | {_f(p99)} | {_sustained_cell(r, s)} | {_ceiling_cell(r, s)} | "
            + " | ".join(cells)
            + " |"
        )
    out += _sustained_table(r, servers) + _ceiling_table(r, servers) + _workers_table(r)
    if r.notes:
        out += ["", *[f"- {n}" for n in r.notes]]
    return out


def _sustained_table(r: Results, servers: list[str]) -> list[str]:
    if not r.sustained:
        return []
    out = [
        "",
        "### Sustained load behind a 20 ms upstream (every level run)",
        "",
        "| server | conns | req/s | p50 ms | p99 ms | errors | holds |",
        "| --- | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for s in servers:
        ramp: Sustained | None = r.sustained.get(s)
        for c, row in ramp.rows.items() if ramp else ():
            out.append(
                f"| {NAMES[s]} | {c} | {row['rps']:,.0f} | {row['p50']:,.2f} | {row['p99']:,.2f} | "
                f"{int(row['errors'])} | {'yes' if Sustained.holds(row) else 'no'} |"
            )
    return out


def _ceiling_table(r: Results, servers: list[str]) -> list[str]:
    if not r.ceiling:
        return []
    out = [
        "",
        "### Concurrent streams (every level run)",
        "",
        "| server | streams | completed | failed | added gap p50 ms | p99 ms | max ms | TTFB p99 ms "
        "| passes |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    base = PACED_GAP_S * 1000
    for s in servers:
        for lv in r.ceiling.get(s, []):
            g = sorted(max(0.0, x - base) for x in lv.gaps_ms)
            t = sorted(lv.ttfb_ms)

            def q(v: list[float], p: float) -> str:
                return _f(v[min(len(v) - 1, int(p * len(v)))], 1) if v else "—"

            out.append(
                f"| {NAMES[s]} | {lv.streams:,} | {lv.completed:,} | {lv.failed:,} | {q(g, 0.5)} | "
                f"{q(g, 0.99)} | {_f(lv.added_max_ms(), 1)} | {q(t, 0.99)} | "
                f"{'yes' if lv.passed() else 'no' + (f' ({lv.note})' if lv.note else '')} |"
            )
    return out


def _workers_table(r: Results) -> list[str]:
    if not r.workers:
        return []
    out = [
        "",
        "### Turnstile worker processes (`turnstile serve --workers N`, openai case, back to back)",
        "",
        "Neither wrk nor nginx is pinned: on 2 cores the load generator and the upstream share the "
        "cores with the workers, so a second worker gets what they leave.",
        "",
        "| workers | conns | req/s | p50 ms | p99 ms | errors | peak RSS MB | vs 1 worker |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for (n, c), row in sorted(r.workers.items()):
        one = r.workers.get((1, c), {}).get("rps")
        ratio = f"{row['rps'] / one:.2f}x" if one else "—"
        out.append(
            f"| {n} | {c} | {row['rps']:,.0f} | {row['p50']:,.3f} | {row['p99']:,.3f} | "
            f"{int(row['errors'])} | {row['rss_mb']:.0f} | {ratio} |"
        )
    return out


def targets(r: Results) -> list[str]:
    """The issue's targets this run reached or missed (one line each)."""
    out = []

    def line(what: str, value: str, target: str, ok: bool) -> None:
        out.append(f"- {what} = {value} (target {target}): {'reached' if ok else 'missed'}")

    p99 = added(r, "turnstile", "p99")
    if p99 is not None:
        line("added p99 at 1 connection", f"{p99:.3f} ms", "≤ 0.5 ms", p99 <= 0.5)
    levels = r.ceiling.get("turnstile")
    if levels:
        top = highest_passed(levels)
        line("concurrent streams without a stall", f"{top:,}", "≥ 1,000", top >= 1000)
    for lane in LANES:
        ratio = lane_ratio(r, "turnstile", lane)
        if ratio is not None:
            line(f"translation lane {lane} / {LANES[lane]}", f"{ratio:.0%}", "≥ 90%", ratio >= 0.9)
    for c in sorted({c for (_, c) in r.workers}):
        one, two = r.workers.get((1, c), {}).get("rps"), r.workers.get((2, c), {}).get("rps")
        if one and two:
            line(f"2 workers / 1 worker at {c} connections", f"{two / one:.2f}x", "≥ 1.8x", two / one >= 1.8)
    return out
