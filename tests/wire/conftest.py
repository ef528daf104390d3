"""Per-test fixtures of the wire tests: a clean upstream stand-in and SDK clients pointed at
the running gateway (started once per session in ``tests/conftest.py``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest
from google import genai
from standins.upstream import UpstreamStandin


def _forget_routing_state(wire_servers: dict[str, Any]) -> None:
    """Drop the gateway's in-process routing state (deployment health: cooldowns, circuit
    breakers, retry budget; sticky routes) so each test starts from a fresh process's view.
    The engine is rebuilt on first use (``gateway.layers.route.engine``)."""
    gw = wire_servers["gateway"].app.state.gateway
    if hasattr(gw, "routing"):
        gw.routing = None


@pytest.fixture
def upstream(wire_servers: dict[str, Any]) -> Iterator[UpstreamStandin]:
    """The upstream stand-in, with an empty script and request log for this test; the
    gateway's routing health is reset too."""
    standin: UpstreamStandin = wire_servers["standin"]
    standin.reset()
    _forget_routing_state(wire_servers)
    yield standin
    standin.reset()


@pytest.fixture
def gateway_url(wire_servers: dict[str, Any]) -> str:
    """``http://127.0.0.1:<port>`` of the real gateway."""
    return str(wire_servers["gateway"].url)


@pytest.fixture
def db_path(wire_servers: dict[str, Any]) -> Path:
    """The gateway's transcript SQLite file."""
    return Path(wire_servers["db_path"])


@pytest.fixture
def oai(gateway_url: str) -> Iterator[openai.OpenAI]:
    """The official OpenAI SDK, unchanged, pointed at the gateway (no SDK retries)."""
    client = openai.OpenAI(base_url=f"{gateway_url}/v1", api_key="sk-client-key", max_retries=0, timeout=15)
    yield client
    client.close()


@pytest.fixture
def ant(gateway_url: str) -> Iterator[anthropic.Anthropic]:
    """The official Anthropic SDK, unchanged, pointed at the gateway (no SDK retries)."""
    client = anthropic.Anthropic(base_url=gateway_url, api_key="sk-ant-client-key", max_retries=0, timeout=15)
    yield client
    client.close()


@pytest.fixture
def gem(gateway_url: str) -> Iterator[genai.Client]:
    """The official google-genai SDK, unchanged, pointed at the gateway's ``/v1beta`` (Gemini
    CLI's API version; the SDK does not retry without retry options)."""
    options = genai.types.HttpOptions(base_url=gateway_url, api_version="v1beta", timeout=15_000)
    client = genai.Client(api_key="gemini-client-key", http_options=options)
    yield client
    client.close()
