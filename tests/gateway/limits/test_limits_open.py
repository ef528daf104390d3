"""The backend the configuration asks for: Redis with ``redis.url``, else the workers' shared
SQLite file (``--workers N``), else in process."""

from __future__ import annotations

from pathlib import Path

from gateway.config import Settings, parse_config, workers_state_path
from gateway.limits.memory import MemoryLimits
from gateway.limits.open import open_limits
from gateway.limits.redis_backend import RedisLimits
from gateway.limits.sqlite_backend import SqliteLimits


async def test_without_a_redis_url_the_counters_live_in_process() -> None:
    lim = open_limits(parse_config({"limits": {"timezone": "Europe/Paris", "lease_ttl_s": 30}}))
    assert isinstance(lim, MemoryLimits)
    assert (str(lim.windows.tz), lim.lease_ttl_s) == ("Europe/Paris", 30)


async def test_a_redis_url_gives_the_shared_counters_with_the_configured_fail_mode() -> None:
    cfg = parse_config({"redis": {"url": "redis://127.0.0.1:1/0", "fail": "open", "prefix": "gw1:"}})
    lim = open_limits(cfg)  # connecting is lazy: nothing listens on port 1
    assert isinstance(lim, RedisLimits)
    assert (lim.fail, lim.prefix) == ("open", "gw1:")
    await lim.aclose()


async def test_one_of_several_workers_without_redis_counts_in_the_workers_shared_file(tmp_path: Path) -> None:
    cfg = parse_config({"server": {"db_path": str(tmp_path / "t.db")}, "limits": {"lease_ttl_s": 30}})
    shared = workers_state_path(cfg, Settings(workers=2))
    assert shared == f"{tmp_path / 't.db'}.workers"
    lim = open_limits(cfg, shared=shared)
    assert isinstance(lim, SqliteLimits)
    assert (lim.path, lim.lease_ttl_s) == (shared, 30)
    await lim.aclose()


def test_one_worker_shares_nothing_and_redis_wins_over_the_shared_file(tmp_path: Path) -> None:
    cfg = parse_config({"server": {"db_path": str(tmp_path / "t.db")}})
    assert workers_state_path(cfg, Settings(workers=1)) is None
    assert isinstance(open_limits(cfg, shared=workers_state_path(cfg, Settings())), MemoryLimits)
    given = Settings(workers=3, workers_state=tmp_path / "run" / "w.db")
    assert workers_state_path(cfg, given) == str(tmp_path / "run" / "w.db")
    red = parse_config({"redis": {"url": "redis://127.0.0.1:1/0"}})
    assert isinstance(open_limits(red, shared=str(tmp_path / "w.db")), RedisLimits)
