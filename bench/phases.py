"""The phases of ``bench.run`` beyond the case table: sustained load behind a 20 ms upstream,
and the stream ceiling.

*Sustained* (:func:`sustained`): wrk against the ``openai-20ms`` case (the upstream answers
after :data:`bench.bodies.UPSTREAM_DELAY_S`) at rising connection counts; a level holds when its
p99 is under :data:`P99_BOUND_MS` and fewer than :data:`ERROR_BOUND` of its requests failed.
The figure is the highest req/s among the levels that hold (wrk keeps a closed loop: the load is
the connection count, each connection sending its next request when the last one is answered).

*Stream ceiling*: :mod:`bench.streams`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench import streams

P99_BOUND_MS = 1000.0
ERROR_BOUND = 0.001
SUSTAIN_LEVELS = (16, 64, 256, 1024)

Wrk = Callable[[str, Path, int, float], dict[str, float]]


@dataclass
class Sustained:
    """The wrk rows of one server's ramp, by connection count."""

    rows: dict[int, dict[str, float]] = field(default_factory=dict)

    @staticmethod
    def holds(row: dict[str, float]) -> bool:
        """p99 under the bound and errors under the bound's share of the requests (wrk counts a
        non-2xx answer as a request and as an error; errors without an answer are few here)."""
        total = row["requests"]
        return row["p99"] < P99_BOUND_MS and total > 0 and row["errors"] / total < ERROR_BOUND

    def best(self) -> tuple[int, dict[str, float]] | None:
        """(connections, row) of the highest req/s among the levels that hold, or None."""
        ok = [(c, r) for c, r in self.rows.items() if self.holds(r)]
        return max(ok, key=lambda cr: cr[1]["rps"]) if ok else None


async def sustained(
    wrk: Wrk, url: str, body_file: Path, levels: tuple[int, ...], duration_s: float, warmup_s: float
) -> Sustained:
    """Ramp ``levels`` (connections) until a level no longer holds (that one included)."""
    out = Sustained()
    for conns in levels:
        if warmup_s > 0:
            await asyncio.to_thread(wrk, url, body_file, conns, warmup_s)
        row = await asyncio.to_thread(wrk, url, body_file, conns, duration_s)
        out.rows[conns] = row
        print(
            f"    20ms upstream c={conns:<5} {row['rps']:9.0f} req/s  p50 {row['p50']:8.2f} ms  "
            f"p99 {row['p99']:8.2f} ms  errors {int(row['errors'])}",
            flush=True,
        )
        if not Sustained.holds(row):
            break
    return out


async def stream_ceiling(
    base: str, path: str, body: bytes, headers: dict[str, str], levels: tuple[int, ...]
) -> list[streams.Level]:
    """:func:`bench.streams.ceiling` against ``base`` (``http://127.0.0.1:PORT``)."""
    host, port = base.removeprefix("http://").split(":")
    return await streams.ceiling(host, int(port), path, body, headers, levels)


def ceiling_row(levels: list[streams.Level]) -> dict[str, Any]:
    """The summary of one server's ramp: highest level passed, and the first failure."""
    failed = next((lv for lv in levels if not lv.passed()), None)
    return {
        "ceiling": streams.highest_passed(levels),
        "failed_at": failed.streams if failed else None,
        "why": (
            None
            if failed is None
            else (
                f"{failed.failed} streams failed ({failed.note})"
                if failed.failed
                else f"added gap {failed.added_max_ms():.0f} ms"
            )
        ),
    }
