"""Resource updates reach only the callers that may see the resource's server: on
``subscriptions/listen`` streams (:class:`mcp_servers.scoped_bus.ScopedBus`) and on handshake-era
``resources/subscribe`` subscriptions (:class:`mcp_servers.aggregate.Aggregator`). A hidden
resource's subscription is accepted like one to a URI that does not exist, and never fires."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from mcp.shared.subscriptions import ResourceUpdated, ServerEvent, ToolsListChanged
from mcp.types import SubscribeRequestParams

from mcp_servers.aggregate import Aggregator, namespace_uri
from mcp_servers.clients import EVERYTHING, STATE_KEY, Visibility
from mcp_servers.config import McpConfig
from mcp_servers.scoped_bus import ScopedBus

LIMITED = Visibility("limited", ("t__echo",))


def _sees(visible: Visibility, server: str) -> bool:
    return visible.sees_server(server, [f"{server}__echo"])


def _listen(bus: ScopedBus, visible: Visibility) -> list[ServerEvent]:
    got: list[ServerEvent] = []
    with bus.listening_as(visible):
        bus.subscribe(got.append)
    return got


async def test_a_listen_stream_gets_updates_only_of_servers_its_caller_may_see() -> None:
    bus = ScopedBus(_sees)
    limited, full = _listen(bus, LIMITED), _listen(bus, EVERYTHING)
    await bus.publish_update("secret", namespace_uri("secret", "secret://key"))
    await bus.publish_update("t", namespace_uri("t", "t://key"))
    await bus.publish(ToolsListChanged())
    assert limited == [ResourceUpdated(uri="turnstile://t/t://key"), ToolsListChanged()]
    assert full == [
        ResourceUpdated(uri="turnstile://secret/secret://key"),
        ResourceUpdated(uri="turnstile://t/t://key"),
        ToolsListChanged(),
    ]


async def test_a_listener_subscribed_outside_a_caller_gets_no_resource_update() -> None:
    bus = ScopedBus(_sees)
    stray: list[ServerEvent] = []
    bus.subscribe(stray.append)  # fails closed
    await bus.publish_update("t", "turnstile://t/t://key")
    assert stray == []


class _Connection:
    def __init__(self) -> None:
        self.updated: list[str] = []

    async def send_resource_updated(self, uri: str) -> None:
        self.updated.append(uri)


class _Upstream:
    def __init__(self) -> None:
        self.watched: list[tuple[str, bool]] = []

    async def watch_resource(self, uri: str, on: bool) -> None:
        self.watched.append((uri, on))


def _registry(upstreams: dict[str, _Upstream]) -> Any:
    config = McpConfig.model_validate(
        {"clients": [{"name": "limited", "key_env": "K", "tools": ["t__echo"]}]}
    )
    tools = [SimpleNamespace(server=s, exposed=f"{s}__echo") for s in upstreams]
    return SimpleNamespace(
        config=config,
        on_list_change=lambda _: None,
        on_resource_updated=lambda _: None,
        tools=lambda include_unavailable=False: tools,
        server_ids=lambda: sorted(upstreams),
        upstream=upstreams.get,
    )


def _ctx(visible: Visibility, connection: _Connection) -> Any:
    request = SimpleNamespace(scope={"state": {STATE_KEY: visible}})
    return SimpleNamespace(
        protocol_version="2025-06-18", session=SimpleNamespace(_connection=connection), request=request
    )


async def test_a_subscription_to_a_hidden_resource_is_accepted_and_never_fires() -> None:
    secret, t = _Upstream(), _Upstream()
    agg = Aggregator(_registry({"secret": secret, "t": t}), name="gw", version="1")
    hidden_uri = namespace_uri("secret", "secret://key")
    limited, full = _Connection(), _Connection()
    await agg.subscribe(_ctx(LIMITED, limited), SubscribeRequestParams(uri=hidden_uri))
    assert secret.watched == []  # not followed upstream for a caller that may not see it
    await agg.subscribe(_ctx(EVERYTHING, full), SubscribeRequestParams(uri=hidden_uri))
    assert secret.watched == [("secret://key", True)]
    await agg._send_updated("secret", hidden_uri)
    assert (limited.updated, full.updated) == ([], [hidden_uri])
    visible_uri = namespace_uri("t", "t://key")
    await agg.subscribe(_ctx(LIMITED, limited), SubscribeRequestParams(uri=visible_uri))
    await agg._send_updated("t", visible_uri)
    assert limited.updated == [visible_uri] and t.watched == [("t://key", True)]
