"""Relaying through ``/mcp`` (mcp_servers/relay.py): an upstream's log messages, sampling and
elicitation requests reach the calling client, and ``resources/updated`` reaches subscribers.

Every combination of protocol eras: the conformance fixture server behind the gateway as a
2026-07-28 upstream (``conf``: asks through ``InputRequiredResult``) and as a handshake-era one
(``old``, ``protocol: legacy``: asks with server-to-client requests), called by a handshake-era
client (``mode="legacy"``) and a 2026-07-28 one (``mode="auto"``).
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.types import (
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    CreateMessageResult,
    ElicitResult,
    InputRequiredResult,
    ResourceUpdatedNotification,
    TextContent,
)
from mcp_harness import McpGateway, start_gateway

from mcp_servers.aggregate import namespace_uri
from mcp_servers.relay import missing_capabilities

CONFORMANCE_SERVER = str(Path(__file__).with_name("conformance_server.py"))
pytestmark = pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
UPSTREAMS = ["conf", "old"]
CLIENTS = ["legacy", "auto"]


@pytest.fixture(scope="module")
def relay_gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[McpGateway]:
    """The fixture server twice: a 2026-07-28 upstream and a handshake-era one."""
    servers = [
        {
            "id": "conf",
            "transport": {"type": "stdio", "command": sys.executable, "args": [CONFORMANCE_SERVER]},
        },
        {
            "id": "old",
            "protocol": "legacy",
            "transport": {"type": "stdio", "command": sys.executable, "args": [CONFORMANCE_SERVER]},
        },
    ]
    yield from start_gateway(tmp_path_factory.mktemp("relay"), servers)


def _text(result: Any) -> str:
    return "".join(b.text for b in result.content if isinstance(b, TextContent))


class Caller:
    """Callbacks of a test client: what it was asked and what it was told."""

    def __init__(self) -> None:
        self.elicited: list[Any] = []
        self.sampled: list[Any] = []
        self.logs: list[Any] = []
        self.updated: list[str] = []
        self.got_update = asyncio.Event()

    async def elicit(self, context: Any, params: Any) -> ElicitResult:
        self.elicited.append(params)
        return ElicitResult(action="accept", content={"username": "ada", "email": "ada@example.org"})

    async def sample(self, context: Any, params: Any) -> CreateMessageResult:
        self.sampled.append(params)
        return CreateMessageResult(
            role="assistant", content=TextContent(type="text", text="forty-two"), model="test-model"
        )

    async def log(self, params: Any) -> None:
        self.logs.append(params)

    async def message(self, message: Any) -> None:
        if isinstance(message, ResourceUpdatedNotification):
            self.updated.append(str(message.params.uri))
            self.got_update.set()

    def client(self, gw: McpGateway, mode: str, **kw: Any) -> Client:
        return Client(
            gw.mcp_url,
            mode=mode,  # type: ignore[arg-type]
            elicitation_callback=self.elicit,
            sampling_callback=self.sample,
            logging_callback=self.log,
            message_handler=self.message,
            **kw,
        )


@pytest.mark.parametrize("upstream", UPSTREAMS)
@pytest.mark.parametrize("mode", CLIENTS)
async def test_upstream_elicitation_reaches_the_calling_client(
    relay_gw: McpGateway, upstream: str, mode: str
) -> None:
    caller = Caller()
    async with caller.client(relay_gw, mode) as client:
        result = await client.call_tool(f"{upstream}__test_elicitation", {"message": "Who are you?"})
    if upstream == "old" and mode == "auto":
        # a 2026-07-28 caller has no back-channel during a call to a handshake-era upstream
        assert result.is_error and "2026-07-28" in _text(result), _text(result)
        assert not caller.elicited
        return
    assert not result.is_error, _text(result)
    assert (
        _text(result)
        == 'User response: action=accept, content={"username": "ada", "email": "ada@example.org"}'
    )
    assert [p.message for p in caller.elicited] == ["Who are you?"]
    assert caller.elicited[0].requested_schema["required"] == ["username", "email"]
    assert (result.meta or {})["io.modelcontextprotocol/serverInfo"]["name"] == "turnstile"


@pytest.mark.parametrize("upstream", UPSTREAMS)
@pytest.mark.parametrize("mode", CLIENTS)
async def test_upstream_sampling_reaches_the_calling_client(
    relay_gw: McpGateway, upstream: str, mode: str
) -> None:
    caller = Caller()
    async with caller.client(relay_gw, mode) as client:
        result = await client.call_tool(f"{upstream}__test_sampling", {"prompt": "What is six times seven?"})
    if upstream == "old" and mode == "auto":
        assert result.is_error and not caller.sampled
        return
    assert _text(result) == "LLM response: forty-two"
    assert caller.sampled[0].messages[0].content.text == "What is six times seven?"


@pytest.mark.parametrize("upstream", UPSTREAMS)
@pytest.mark.parametrize("mode", CLIENTS)
async def test_upstream_log_messages_reach_the_calling_client(
    relay_gw: McpGateway, upstream: str, mode: str
) -> None:
    caller = Caller()
    async with caller.client(relay_gw, mode, log_level="info") as client:
        result = await client.call_tool(f"{upstream}__test_tool_with_logging", {})
    assert _text(result) == "Tool with logging executed successfully"
    assert [(m.level, m.data) for m in caller.logs] == [
        ("info", "Tool execution started"),
        ("info", "Tool processing data"),
        ("info", "Tool execution completed"),
    ]


async def test_log_level_is_respected_for_a_2026_client(relay_gw: McpGateway) -> None:
    caller = Caller()
    async with caller.client(relay_gw, "auto", log_level="error") as client:
        await client.call_tool("conf__test_tool_with_logging", {})
    assert caller.logs == []


async def test_client_without_elicitation_gets_an_error_not_a_question(relay_gw: McpGateway) -> None:
    async with Client(relay_gw.mcp_url, mode="legacy") as client:
        result = await client.call_tool("conf__test_elicitation", {"message": "Who are you?"})
    assert result.is_error and "does not support elicitation" in _text(result), _text(result)


async def _never_asked(context: Any, params: Any) -> ElicitResult:
    raise AssertionError("the rounds are the test's own")


async def test_a_2026_client_without_elicitation_gets_missing_capability(relay_gw: McpGateway) -> None:
    async with Client(relay_gw.mcp_url, mode="auto") as client:
        with pytest.raises(MCPError) as refused:
            await client.session.call_tool(
                "conf__test_elicitation", {"message": "hi"}, allow_input_required=True
            )
    assert refused.value.error.code == MISSING_REQUIRED_CLIENT_CAPABILITY
    assert refused.value.error.data == {"requiredCapabilities": {"elicitation": {}}}


async def test_forged_request_state_does_not_reach_the_upstream(relay_gw: McpGateway) -> None:
    async with Client(relay_gw.mcp_url, mode="auto", elicitation_callback=_never_asked) as client:
        first = await client.session.call_tool(
            "conf__test_elicitation", {"message": "hi"}, allow_input_required=True
        )
        assert isinstance(first, InputRequiredResult)
        assert list(first.input_requests or {}) == ["ask"]
        answer: dict[str, Any] = {
            "ask": ElicitResult(action="accept", content={"username": "x", "email": "y"})
        }
        forged = await client.session.call_tool(
            "conf__test_elicitation",
            {"message": "other"},
            input_responses=answer,
            request_state=first.request_state,
            allow_input_required=True,
        )
    # bound to the first call's arguments: the retry of another call starts over
    assert isinstance(forged, InputRequiredResult) and list(forged.input_requests or {}) == ["ask"]


@pytest.mark.parametrize("upstream", UPSTREAMS)
async def test_resource_updates_reach_a_subscribed_client(relay_gw: McpGateway, upstream: str) -> None:
    uri = namespace_uri(upstream, "test://watched-resource")
    caller = Caller()
    async with caller.client(relay_gw, "legacy") as client:
        await client.subscribe_resource(uri)
        await client.call_tool(f"{upstream}__touch_watched", {})
        await asyncio.wait_for(caller.got_update.wait(), 10)
        await client.unsubscribe_resource(uri)
    assert caller.updated == [uri]


def test_missing_capabilities_name_what_the_requests_need() -> None:
    requests = {"a": {"method": "sampling/createMessage"}, "b": {"method": "roots/list"}}
    assert missing_capabilities(requests, {"sampling": {}}) == {"roots": {}}
    assert missing_capabilities(requests, {"sampling": {}, "roots": {}}) == {}
