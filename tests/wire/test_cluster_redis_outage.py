"""Redis killed mid-test under two gateway instances (nginx round robin, one PostgreSQL
database): a Redis server of the test's own on a free port, killed with SIGKILL and started
again empty — never the machine's shared one.

* ``redis.fail: closed`` (the default): while Redis is away every keyed turn is refused with a
  clear 503 in the client's dialect (``retry-after: 1``), on every instance; once it is back,
  turns run again and the budget counter agrees with the ledger.
* ``redis.fail: open``: turns are admitted unchecked while it is away; once it is back (empty:
  its counters re-seeded from the ledger), the spend of the turns that ran during the outage is
  charged once — the counter equals the ledger, nothing twice, nothing lost.

Needs nginx, PostgreSQL and the ``redis-server`` binary; without them the tests skip with the
reason, unless ``TURNSTILE_REQUIRE_SERVICES=1`` makes that a failure.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from standins.cluster import Cluster, drop_database, fresh_database, nginx_binary
from standins.serve_process import free_port

REQUIRED = os.environ.get("TURNSTILE_REQUIRE_SERVICES") == "1"
ADMIN_ENV = "TURNSTILE_OUTAGE_ADMIN_KEY"
ADMIN = "outage-admin-secret"
AUTH = {"Authorization": f"Bearer {ADMIN}"}
BODY = {"model": "default", "max_tokens": 20, "messages": [{"role": "user", "content": "hi"}]}


def _skip(reason: str) -> None:
    if REQUIRED:
        pytest.fail(f"{reason}; TURNSTILE_REQUIRE_SERVICES=1 requires it")
    pytest.skip(reason)


class OwnRedis:
    """A ``redis-server`` of this test's own on ``port``, without persistence (started again,
    it is empty: a Redis that lost its data)."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        binary = shutil.which("redis-server") or "/usr/bin/redis-server"
        log = (self.workdir / "redis.log").open("ab")
        args = [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        self.proc = subprocess.Popen(args, cwd=self.workdir, stdout=log, stderr=subprocess.STDOUT)
        import redis

        deadline = time.monotonic() + 10
        while True:  # bounded: the server starts in milliseconds
            try:
                redis.Redis(port=self.port, socket_timeout=1).ping()
                return
            except redis.RedisError:
                assert time.monotonic() < deadline, "redis-server did not start"
                time.sleep(0.02)  # polling pace while it starts

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def client(self) -> Any:
        import redis

        return redis.Redis(port=self.port, socket_timeout=2, decode_responses=True)


@pytest.fixture(scope="module")
def services(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, OwnRedis]]:
    """nginx, a fresh PostgreSQL database and the test's own Redis."""
    nginx = nginx_binary()
    if nginx is None:
        _skip("nginx is not installed")
    if shutil.which("redis-server") is None and not Path("/usr/bin/redis-server").is_file():
        _skip("redis-server is not installed")
    try:
        db_url = fresh_database()
    except Exception as err:
        _skip(f"PostgreSQL is unreachable ({type(err).__name__}: {err})")
    own = OwnRedis(tmp_path_factory.mktemp("own-redis"))
    own.start()
    try:
        yield str(nginx), db_url, own
    finally:
        own.kill()
        drop_database(db_url)


def _cluster(tmp: Path, nginx: str, db_url: str, own: OwnRedis, fail: str) -> Cluster:
    config = {
        "server": {"host": "127.0.0.1"},
        "storage": {"url": db_url},
        "redis": {"url": own.url, "prefix": f"outage-{fail}-{uuid.uuid4().hex[:6]}:", "fail": fail},
        "access": {"auth": "required", "admin_key_env": ADMIN_ENV},
        "deployments": [
            {
                "name": "demo",
                "api": "demo",
                "model": "turnstile-demo",
                "price": {"input": 1_000_000.0, "output": 1_000_000.0},
            }
        ],
        "models": [{"name": "default", "deployments": ["demo"]}],
        "mcp": {"servers": []},
    }
    group = Cluster(tmp, config, env={ADMIN_ENV: ADMIN})
    group.start(nginx)
    return group


def _key(url: str) -> tuple[str, str]:
    got = httpx.post(
        f"{url}/admin/keys",
        json={"name": "k", "budgets": [{"period": "total", "usd": 1_000_000, "hard": True}]},
        headers=AUTH,
        timeout=10,
    )
    assert got.status_code == 201, got.text
    return got.json()["key"]["id"], got.json()["secret"]


def _ledger(url: str, key_id: str) -> float:
    got = httpx.get(f"{url}/admin/spend", params={"group_by": "key"}, headers=AUTH, timeout=10)
    assert got.status_code == 200, got.text
    return sum(r["cost_usd"] for r in got.json()["data"] if r["group"] == key_id)


def _counter(own: OwnRedis, prefix: str, key_id: str) -> float | None:
    """The key's total-budget counter in USD; None while no instance has re-seeded it yet."""
    client = own.client()
    keys = list(client.scan_iter(match=f"{prefix}b:key:{key_id}:total:*"))
    if not keys:
        return None
    [key] = keys
    return int(client.hget(key, "s") or 0) / 1e9


def _ask(url: str, secret: str, path: str = "/v1/chat/completions") -> httpx.Response:
    headers = {"authorization": f"Bearer {secret}", "x-api-key": secret, "anthropic-version": "2023-06-01"}
    return httpx.post(f"{url}{path}", json=BODY, headers=headers, timeout=20)


def _until_answered(url: str, secret: str) -> None:
    start = time.monotonic()
    while (got := _ask(url, secret)).status_code != 200:  # bounded: the limits' 1 s cooldown
        assert got.status_code == 503 and time.monotonic() - start < 5, got.text


def test_redis_killed_fails_closed_with_a_503_in_each_dialect_and_counts_once_when_back(
    services: tuple[str, str, OwnRedis], tmp_path: Path
) -> None:
    nginx, db_url, own = services
    group = _cluster(tmp_path, nginx, db_url, own, "closed")
    try:
        key_id, secret = _key(group.url)
        assert _ask(group.url, secret).status_code == 200
        own.kill()
        for proc in group.instances:  # every instance refuses, in the client's dialect
            chat = _ask(proc.url, secret)
            assert chat.status_code == 503 and chat.headers["retry-after"] == "1", chat.text
            assert "Redis" in chat.json()["error"]["message"]
            claude = _ask(proc.url, secret, "/v1/messages")
            assert claude.status_code == 503 and claude.json()["type"] == "error", claude.text
            assert claude.json()["error"]["type"] == "overloaded_error"
        own.start()  # back, empty
        for proc in group.instances:
            _until_answered(proc.url, secret)
        prefix = group.config["redis"]["prefix"]
        assert _counter(own, prefix, key_id) == pytest.approx(_ledger(group.url, key_id), abs=1e-6)
    finally:
        group.stop()
        if own.proc is None or own.proc.poll() is not None:
            own.start()


def test_redis_killed_fails_open_when_configured_and_charges_the_outage_once(
    services: tuple[str, str, OwnRedis], tmp_path: Path
) -> None:
    nginx, db_url, own = services
    group = _cluster(tmp_path, nginx, db_url, own, "open")
    try:
        key_id, secret = _key(group.url)
        for _ in range(2):
            assert _ask(group.url, secret).status_code == 200
        own.kill()
        statuses = [_ask(group.url, secret).status_code for _ in range(6)]  # both instances
        assert statuses == [200] * 6
        own.start()  # back, empty: counters re-seeded from the ledger
        prefix = group.config["redis"]["prefix"]
        start = time.monotonic()
        while True:  # bounded: within the limits' 1 s cooldown an admission is still unchecked
            for proc in group.instances:  # each sends its kept settles before its next admission
                assert _ask(proc.url, secret).status_code == 200
            spent = _ledger(group.url, key_id)
            counted = _counter(own, prefix, key_id)
            if counted is not None and counted == pytest.approx(spent, abs=1e-6):
                break  # charged once: a double charge (or a lost one) never converges
            assert time.monotonic() - start < 15, (counted, spent)  # generous on a loaded machine
    finally:
        group.stop()
        if own.proc is None or own.proc.poll() is not None:
            own.start()
