"""How long the console's pages take over a large transcript (server time, through the real app).

``uv run python -m bench.console [-n 10000] [--postgres URL]`` fills a transcript with ``n``
turns shaped like real traffic (a week of them; a third answer with a tool call, a fifth are
bound to one of 500 sessions, twenty virtual keys, 3 % errors, an alias routed by tier), starts
the gateway app on it (``create_app`` with the console and an admin key, in process: Starlette's
``TestClient``), logs in, and times each page: the median and the 90th percentile of
:data:`ROUNDS` requests after one warm-up, in milliseconds. ``--postgres`` puts the transcript in
that (empty, scratch) PostgreSQL database instead of a SQLite file.

The numbers are wall time on a shared machine: compare them run against run, not to a target.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import re
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

ROUNDS = 15
ADMIN_ENV = "BENCH_CONSOLE_ADMIN_KEY"
TOOLS = [f"tool_{i:02d}" for i in range(20)] + ["get_weather"]


def records(n: int, now: float) -> list[Any]:
    """``n`` transcript records over the week before ``now`` (see the module docstring)."""
    from gateway.access.model import Principal
    from gateway.transcript import TurnRecord

    rng = random.Random(7)
    words = ["the", "of", "and", "to", "in", "is", "that", "for", "it", "as", "with", "on", "be", "at"]
    out = []
    for i in range(n):
        text = " ".join(rng.choice(words) for _ in range(90))
        call = rng.random() < 0.33
        content: list[dict[str, Any]] = (
            [{"type": "tool_call", "id": f"c{i}", "name": rng.choice(TOOLS), "arguments": {"q": text[:40]}}]
            if call
            else [{"type": "text", "text": text + " " + text}]
        )
        route = {"kind": "route", "route": "cheap", "reason": "rules", "policy": "rules", "tier": "cheap"}
        answer = {"role": "assistant", "content": content}
        status = 500 if rng.random() < 0.02 else 400 if rng.random() < 0.01 else 200
        key = f"key-{rng.randrange(20):016x}"
        out.append(
            TurnRecord(
                request_id=f"{i:032x}",
                ts=now - rng.random() * 7 * 86_400,
                client_dialect="openai_chat",
                requested_model="auto",
                stream=rng.random() < 0.5,
                status=status,
                deployment="cheap" if status == 200 else "strong",
                stop_reason="tool_use" if call else "stop",
                usage={"input_tokens": 800 + rng.randrange(4000), "output_tokens": 50 + rng.randrange(800)},
                cost_usd=rng.random() / 1000 if status == 200 else None,
                latency_ms=100 + rng.random() * 3000,
                attempts=[route],
                request={
                    "model": "auto",
                    "messages": [{"role": "user", "content": [{"type": "text", "text": text}]}],
                    "tools": [{"name": t, "parameters": {"type": "object"}} for t in TOOLS[:3]],
                },
                response={"id": "r", "model": "m", "message": answer, "usage": {}},
                principal=Principal(key_id=key, key_name=key, team_id=None, team_name=None, expires_at=None),
                session_id=f"s-{rng.randrange(500)}" if rng.random() < 0.2 else None,
            )
        )
    return out


async def fill(location: str, rows: list[Any]) -> None:
    from gateway.transcript import TranscriptWriter

    writer = TranscriptWriter(location, maxsize=len(rows) + 1)
    await writer.start()
    for r in rows:
        await writer.append(r)
    await writer.close()


def measure(location: str, db_path: Path, n: int) -> list[tuple[str, float, float]]:
    """``(path, median ms, p90 ms)`` per page."""
    from starlette.testclient import TestClient

    from gateway.config import Settings, parse_config
    from gateway.server import create_app

    os.environ[ADMIN_ENV] = "bench-admin-key"
    config = parse_config(
        {
            "server": {"db_path": str(db_path)},
            "storage": {"url": location} if location.startswith("postgres") else {},
            "access": {"admin_key_env": ADMIN_ENV},
            "deployments": [
                {"name": "cheap", "api": "demo", "model": "a", "price": {"input": 1, "output": 2}},
                {"name": "strong", "api": "demo", "model": "b", "price": {"input": 10, "output": 20}},
            ],
            "models": [
                {
                    "name": "auto",
                    "deployments": ["cheap", "strong"],
                    "routing": {"policy": "rules", "tiers": {"cheap": ["cheap"], "strong": ["strong"]}},
                }
            ],
        }
    )
    app = create_app(config=config, settings=Settings(db_path=db_path, log_level="warning"))
    pages = [
        "/ui/turns",
        "/ui/turns?tool=get_weather",
        "/ui/turns?session=s-7",
        "/ui/turns?key=key-0000000000000003",
        "/ui/turns?outcome=5xx",
        "/ui/turns?request_id=00000000000000000000000000000f",
        "/ui/turns?tool=no_such_tool",
        f"/ui/turns/{n // 2:032x}",
        "/ui?window=1h",
        "/ui?window=24h",
        "/ui?window=7d",
        "/ui/deployments",
        "/ui/access",
    ]
    out = []
    with TestClient(app, base_url="http://127.0.0.1") as http:
        form = http.get("/ui/login").text
        csrf = re.search(r'name="csrf" value="([^"]+)"', form).group(1)  # type: ignore[union-attr]
        assert http.post("/ui/login", data={"admin_key": "bench-admin-key", "csrf": csrf}).status_code == 200
        for path in pages:
            assert http.get(path).status_code == 200, path
            times = []
            for _ in range(ROUNDS):
                t0 = time.perf_counter()
                http.get(path)
                times.append((time.perf_counter() - t0) * 1000)
            times.sort()
            out.append((path, statistics.median(times), times[int(len(times) * 0.9) - 1]))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=10_000, help="turns in the transcript")
    parser.add_argument("--postgres", help="a scratch PostgreSQL database URL for the transcript")
    args = parser.parse_args()
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    with tempfile.TemporaryDirectory() as tmp:
        db_path = Path(tmp) / "gateway.db"
        location = args.postgres or str(db_path)
        t0 = time.perf_counter()
        asyncio.run(fill(location, records(args.n, time.time())))
        store = "PostgreSQL" if args.postgres else f"SQLite, {db_path.stat().st_size / 1e6:.0f} MB"
        print(f"{args.n} turns written in {time.perf_counter() - t0:.1f} s ({store})")
        print(f"{'page':62} {'median ms':>10} {'p90 ms':>8}")
        for path, median, p90 in measure(location, db_path, args.n):
            print(f"{path:62} {median:10.1f} {p90:8.1f}")


if __name__ == "__main__":
    main()
