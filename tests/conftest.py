"""Shared fixtures. The wire-test servers (upstream stand-in + real gateway) are started once
per session in one background event loop; ``upstream`` hands each test a clean stand-in."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--compat-matrix PATH``: write the compatibility matrix of this run there
    (``tests/compat/matrix.py``)."""
    parser.addoption(
        "--compat-matrix",
        metavar="PATH",
        default=None,
        help="write the client compatibility matrix of this run to PATH (e.g. docs/compat.md)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "compat(client, scenario, api, checks): one cell of the client compatibility matrix",
    )


@pytest.fixture(scope="session")
def wire_servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, object]]:
    """``{"loop", "standin", "gateway", "db_path"}``: the running stand-in and gateway."""
    from standins.servers import GatewayServer, LoopThread
    from standins.topology import KEY_ENV, KEYS, build_config
    from standins.upstream import UpstreamStandin

    from gateway.config import Settings
    from gateway.server import create_app

    db_path: Path = tmp_path_factory.mktemp("wire") / "transcript.db"
    loop = LoopThread()
    standin = UpstreamStandin()
    loop.call(standin.start())
    with pytest.MonkeyPatch.context() as mp:
        for api, var in KEY_ENV.items():
            mp.setenv(var, KEYS[api])
        config = build_config(standin.url, str(db_path))
        app = create_app(config=config, settings=Settings(db_path=db_path, log_level="warning"))
        gateway = GatewayServer(app)
        loop.call(gateway.start())
        try:
            yield {"loop": loop, "standin": standin, "gateway": gateway, "db_path": db_path}
        finally:
            loop.call(gateway.stop())
            loop.call(standin.stop())
            loop.close()


@pytest.fixture(autouse=True, scope="session")
def _loggers_never_cached() -> Iterator[None]:
    """``gateway.logs.configure`` (run by every ``create_app``) caches each structlog logger on
    its first use, which is right for a server; in tests a logger cached under one test's
    configuration would keep writing to stderr past a later test's ``capture_logs`` (the failure
    depended on test order). Tests therefore configure structlog without that cache."""
    import structlog

    configure = structlog.configure

    def uncached(*args: object, **kwargs: object) -> None:
        kwargs["cache_logger_on_first_use"] = False
        configure(*args, **kwargs)  # type: ignore[arg-type]

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(structlog, "configure", uncached)
        configure(**{**structlog.get_config(), "cache_logger_on_first_use": False})
        yield
