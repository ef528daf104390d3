"""Shared fixtures. The wire-test servers (upstream stand-in + real gateway) are started once
per session in one background event loop; ``upstream`` hands each test a clean stand-in."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


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
