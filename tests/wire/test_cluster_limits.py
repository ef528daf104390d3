"""Budgets, rate limits and key revocation across gateway instances: two ``turnstile serve``
processes behind nginx round robin, one PostgreSQL database (keys, transcript, sessions) and
one Redis (the limit counters), a priced deployment (the demo stand-in at 1 USD a token).

Concurrent clients over both instances never take a key's spend past its hard budget (measured
from the ledger), a requests/min limit holds across instances within its window, and a key
revoked through one instance is refused by the other within a second (its lookup cache TTL).
Needs nginx, PostgreSQL and Redis; without them the tests skip with the reason, unless
``TURNSTILE_REQUIRE_SERVICES=1`` makes that a failure.
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from standins.cluster import Cluster, drop_database, fresh_database, nginx_binary
from standins.serve_process import free_port

REQUIRED = os.environ.get("TURNSTILE_REQUIRE_SERVICES") == "1"
REDIS_URL = os.environ.get("TURNSTILE_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
ADMIN_ENV = "TURNSTILE_CLUSTER_ADMIN_KEY"
ADMIN = "cluster-admin-secret"
AUTH = {"Authorization": f"Bearer {ADMIN}"}
BODY = {"model": "default", "max_tokens": 20, "messages": [{"role": "user", "content": "hi"}]}


def _skip(reason: str) -> None:
    if REQUIRED:
        pytest.fail(f"{reason}; TURNSTILE_REQUIRE_SERVICES=1 requires it")
    pytest.skip(reason)


def _redis_or_skip(prefix: str) -> Any:
    import redis

    client = redis.Redis.from_url(REDIS_URL, socket_timeout=3)
    try:
        client.ping()
    except redis.RedisError as err:
        _skip(f"Redis at {REDIS_URL} is unreachable ({err})")
    return client


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """Two instances sharing one fresh PostgreSQL database and one Redis key prefix."""
    nginx = nginx_binary()
    if nginx is None:
        _skip("nginx is not installed")
    prefix = f"turnstile-test-{uuid.uuid4().hex[:8]}:"
    redis_client = _redis_or_skip(prefix)
    try:
        db_url = fresh_database()
    except Exception as err:
        _skip(f"PostgreSQL is unreachable ({type(err).__name__}: {err})")
    config = {
        "server": {"host": "127.0.0.1"},
        "storage": {"url": db_url},
        "redis": {"url": REDIS_URL, "prefix": prefix},
        "access": {"auth": "required", "admin_key_env": ADMIN_ENV},
        "deployments": [
            {
                "name": "demo",
                "api": "demo",
                "model": "turnstile-demo",
                "price": {"input": 1_000_000.0, "output": 1_000_000.0},
            },
            {  # nothing listens there: every call fails (connection refused), retryable
                "name": "broken",
                "api": "openai_chat",
                "model": "gpt-4o-mini",
                "base_url": f"http://127.0.0.1:{free_port()}/v1",
                "api_key_env": "TURNSTILE_CLUSTER_BROKEN_KEY",
                "price": {"input": 1.0, "output": 1.0},
            },
        ],
        "models": [
            {"name": "default", "deployments": ["demo"]},
            {"name": "broken", "deployments": ["broken"]},
        ],
        "mcp": {"servers": [], "admin_servers": {"url_hosts": ["127.0.0.1"]}},
    }
    env = {ADMIN_ENV: ADMIN, "TURNSTILE_CLUSTER_BROKEN_KEY": "sk-broken"}
    group = Cluster(tmp_path_factory.mktemp("cluster-limits"), config, env=env)
    try:
        group.start(str(nginx))
        yield group
    finally:
        group.stop()
        drop_database(db_url)
        for k in redis_client.scan_iter(match=f"{prefix}*"):
            redis_client.delete(k)


def _key(url: str, **fields: Any) -> tuple[str, str]:
    got = httpx.post(f"{url}/admin/keys", json={"name": "k", **fields}, headers=AUTH, timeout=10)
    assert got.status_code == 201, got.text
    return got.json()["key"]["id"], got.json()["secret"]


def _spent(url: str, key_id: str) -> float:
    got = httpx.get(f"{url}/admin/spend", params={"group_by": "key"}, headers=AUTH, timeout=10)
    assert got.status_code == 200, got.text
    return sum(r["cost_usd"] for r in got.json()["data"] if r["group"] == key_id)


async def _burst(url: str, secret: str, n: int) -> list[int]:
    auth = {"authorization": f"Bearer {secret}"}
    async with httpx.AsyncClient(base_url=url, timeout=60, headers=auth) as http:
        answers = await asyncio.gather(*(http.post("/v1/chat/completions", json=BODY) for _ in range(n)))
    return [a.status_code for a in answers]


def test_a_hard_budget_holds_across_instances_under_concurrent_clients(shared: Cluster) -> None:
    key_id, secret = _key(shared.url, budgets=[{"period": "day", "usd": 400, "hard": True}])
    statuses = asyncio.run(_burst(shared.url, secret, 60))
    assert set(statuses) == {200, 429}, (statuses, shared.logs())
    spent = _spent(shared.url, key_id)
    assert 0 < spent <= 400, spent


def test_a_requests_per_minute_limit_holds_across_instances(shared: Cluster) -> None:
    _, secret = _key(shared.url, rate_limits={"rpm": 7})
    statuses = asyncio.run(_burst(shared.url, secret, 20))
    assert statuses.count(200) == 7 and statuses.count(429) == 13, statuses


def test_a_key_revoked_on_one_instance_is_refused_by_the_other_within_a_second(shared: Cluster) -> None:
    key_id, secret = _key(shared.url)
    one, other = (p.url for p in shared.instances)
    auth = {"authorization": f"Bearer {secret}"}
    assert httpx.post(f"{other}/v1/chat/completions", json=BODY, headers=auth, timeout=20).status_code == 200
    revoked = httpx.delete(f"{one}/admin/keys/{key_id}", headers=AUTH, timeout=10)
    assert revoked.status_code == 200, revoked.text
    start = time.monotonic()
    while True:  # bounded: the other instance's lookup cache lives at most access.cache_ttl_s (1 s)
        status = httpx.post(f"{other}/v1/chat/completions", json=BODY, headers=auth, timeout=20).status_code
        if status == 401:
            break
        assert status == 200 and time.monotonic() - start < 1.0, (status, time.monotonic() - start)
    assert time.monotonic() - start < 1.0


def _circuit(url: str, deployment: str) -> str:
    routing = httpx.get(f"{url}/health", timeout=10).json()["routing"]
    return str(routing.get(deployment, {}).get("state", "closed"))


def test_a_circuit_opened_by_failures_on_one_instance_is_open_on_the_other(shared: Cluster) -> None:
    _, secret = _key(shared.url)
    one, other = (p.url for p in shared.instances)
    auth = {"authorization": f"Bearer {secret}"}
    body = {**BODY, "model": "broken"}
    assert _circuit(other, "broken") == "closed"
    for _ in range(3):  # failure_threshold consecutive failures, all on the first instance
        got = httpx.post(f"{one}/v1/chat/completions", json=body, headers=auth, timeout=20)
        assert got.status_code >= 500, got.text
    assert _circuit(one, "broken") == "open"
    start = time.monotonic()
    while _circuit(other, "broken") != "open":  # bounded: one pub/sub message
        assert time.monotonic() - start < 1.0, shared.logs()


def test_an_mcp_server_registered_on_one_instance_is_listed_by_the_other(shared: Cluster) -> None:
    one, other = (p.url for p in shared.instances)
    spec = {
        "id": "tickets",
        "transport": {"type": "streamable_http", "url": f"http://127.0.0.1:{free_port()}/mcp"},
    }
    made = httpx.post(f"{one}/admin/mcp/servers", json=spec, headers=AUTH, timeout=10)
    assert made.status_code == 201, made.text
    start = time.monotonic()

    def listed(url: str) -> bool:
        got = httpx.get(f"{url}/admin/mcp/servers", headers=AUTH, timeout=10).json()["servers"]
        return any(s["spec"]["id"] == "tickets" for s in got)

    while not listed(other):  # bounded: one pub/sub message and one read
        assert time.monotonic() - start < 1.0, shared.logs()
    removed = httpx.delete(f"{other}/admin/mcp/servers/tickets", headers=AUTH, timeout=10)
    assert removed.status_code == 204, removed.text
    start = time.monotonic()
    while listed(one):
        assert time.monotonic() - start < 1.0, shared.logs()
