"""``turnstile serve --workers 2`` without Redis (a real uvicorn with two worker processes, one
SQLite file): a key's requests/min limit is counted once across the workers (exactly N turns
admitted of a burst, whichever worker took each), and ``/metrics`` answers the sum of both
workers' turns, whichever worker answers the scrape; a key revoked through one worker is
refused by both within ``access.cache_ttl_s``."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml
from standins.serve_process import ServeProcess, clean_env, free_port

ADMIN_ENV = "TURNSTILE_WORKERS_TEST_ADMIN_KEY"
ADMIN = "workers-admin-secret"
AUTH = {"Authorization": f"Bearer {ADMIN}"}
BODY = {"model": "demo", "max_tokens": 20, "messages": [{"role": "user", "content": "hi"}]}
RPM = 7
BURST = 24
WAIT_S = 15.0
MAX_TRIES = 8
"""The bound of the wait for the workers' metrics to be folded (they fold each second)."""


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    tmp = tmp_path_factory.mktemp("serve-workers")
    config = tmp / "turnstile.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "server": {"db_path": str(tmp / "turnstile.db")},
                "access": {"auth": "required", "admin_key_env": ADMIN_ENV},
                "deployments": [
                    {
                        "name": "demo",
                        "api": "demo",
                        "model": "turnstile-demo",
                        "price": {"input": 0, "output": 0},
                    }
                ],
            }
        )
    )
    metrics_dir = tmp / "metrics"
    metrics_dir.mkdir()
    env = clean_env(**{ADMIN_ENV: ADMIN, "PROMETHEUS_MULTIPROC_DIR": str(metrics_dir)})
    proc = ServeProcess(config, free_port(), cwd=tmp, env=env, args=["--workers", "2", "--log-level", "info"])
    proc.start()  # returns when the first worker answers
    try:
        deadline = time.monotonic() + WAIT_S
        while proc.output().count("Application startup complete") < 2:
            assert time.monotonic() < deadline, f"the second worker did not start:\n{proc.output()}"
            time.sleep(0.05)  # polling pace while the second worker starts, not a synchronisation
        yield proc
    finally:
        proc.kill()


async def _burst(url: str, secret: str, n: int) -> list[int]:
    auth = {"authorization": f"Bearer {secret}"}
    limits = httpx.Limits(max_keepalive_connections=0)  # a connection per turn: both workers accept
    async with httpx.AsyncClient(base_url=url, timeout=60, headers=auth, limits=limits) as http:
        answers = await asyncio.gather(*(http.post("/v1/chat/completions", json=BODY) for _ in range(n)))
    return [a.status_code for a in answers]


def _turns(url: str) -> tuple[float, float]:
    """The turns counted, and the turn-duration histogram's observations, of every worker."""
    got = httpx.get(f"{url}/metrics", headers=AUTH, timeout=10)
    assert got.status_code == 200, got.text

    def total(prefix: str) -> float:
        return sum(float(line.rsplit(" ", 1)[1]) for line in got.text.splitlines() if line.startswith(prefix))

    return total("turnstile_turns_total{"), total("turnstile_turn_duration_seconds_count{")


def test_a_requests_per_minute_limit_admits_exactly_its_turns_across_the_workers(
    gateway: ServeProcess,
) -> None:
    # The kernel hands the shared socket's connections to the workers as it likes: a burst may
    # land on one worker only. Each try is a new key whose limit must hold exactly; tries end
    # once both workers have served turns (bounded).
    counters = Path(gateway.env["PROMETHEUS_MULTIPROC_DIR"])
    tries = 0
    counted: set[str] = set()
    while len(counted) < 2 and tries < MAX_TRIES:
        tries += 1
        made = httpx.post(
            f"{gateway.url}/admin/keys", json={"name": f"k{tries}", "rate_limits": {"rpm": RPM}}, headers=AUTH
        )
        assert made.status_code == 201, made.text
        statuses = asyncio.run(_burst(gateway.url, made.json()["secret"], BURST))
        assert statuses.count(200) == RPM and statuses.count(429) == BURST - RPM, (statuses, gateway.output())
        counted = {p.name.split("_")[1] for p in counters.glob("counter_*.db")}
    assert len(counted) == 2, f"both workers served turns in {tries} bursts: {counted}"
    deadline = time.monotonic() + WAIT_S
    seen = [_turns(gateway.url) for _ in range(2)]
    want = (BURST * tries, BURST * tries)
    while seen[-1] != want and time.monotonic() < deadline:  # each worker folds its turns each second
        time.sleep(0.1)  # polling pace, not a synchronisation
        seen.append(_turns(gateway.url))
    assert seen[-1] == want, seen  # both workers' turns, each once (counter, histogram)


def test_a_key_revoked_through_one_worker_is_refused_by_every_worker_within_the_cache_ttl(
    gateway: ServeProcess,
) -> None:
    made = httpx.post(f"{gateway.url}/admin/keys", json={"name": "r"}, headers=AUTH)
    assert made.status_code == 201, made.text
    key_id, secret = made.json()["key"]["id"], made.json()["secret"]
    assert set(asyncio.run(_burst(gateway.url, secret, 8))) == {200}  # cached in both workers now
    assert httpx.delete(f"{gateway.url}/admin/keys/{key_id}", headers=AUTH).status_code == 200
    revoked = time.monotonic()
    deadline = revoked + 1.0 + 5.0  # access.cache_ttl_s (1 s) and the slack of a loaded machine
    while set(statuses := asyncio.run(_burst(gateway.url, secret, 8))) != {401}:
        assert time.monotonic() < deadline, statuses
