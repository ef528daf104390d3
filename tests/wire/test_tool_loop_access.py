"""Who may run which MCP tools through the server-side tool loop, and what a loop turn offers,
through the real gateway with the official SDKs.

The gateway has ``mcp.clients`` configured: ``alice`` may see the ``time`` server's tools,
``bob`` the fixture server ``fx``'s, ``carol`` only ``time__get_current_time``. Per-client
visibility holds on the chat path exactly as on ``/mcp``: a key that may not see a server gets
a 403 naming it, no key (or an unknown one) a 401, both in the client's own dialect and before
anything goes upstream; a permitted key is offered only the tools it may see. A tool-loop call
whose arguments do not match the tool's input schema never reaches the MCP server, and a
``tool_choice`` naming an attached MCP tool counts as offered. A Responses client naming the
server in an ``mcp`` tool (``server_label``) is held to the same visibility.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import pytest
from standins.recordings import json_exchange
from standins.servers import GatewayServer, LoopThread
from standins.topology import KEY_ENV, KEYS, build_config, time_server_spec
from standins.upstream import OPENAI, UpstreamStandin, replay
from standins.wirekit import transcript_row

from gateway.config import ModelAlias, Settings
from gateway.server import create_app
from mcp_servers.clients import Visibility
from mcp_servers.config import McpConfig

FIXTURE_SERVER = str(Path(__file__).parents[1] / "mcp_servers" / "fixture_server.py")
MODEL = "gpt-4o-mini"  # the upstream model id of deployment "oa"
ALICE, BOB, CAROL = "alice-chat-key", "bob-chat-key", "carol-chat-key"


@pytest.fixture(scope="module")
def access_gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A stand-in upstream and a gateway with the time and fixture servers and three clients."""
    db_path = tmp_path_factory.mktemp("loopaccess") / "gateway.db"
    loop = LoopThread()
    standin = UpstreamStandin()
    loop.call(standin.start())
    with pytest.MonkeyPatch.context() as mp:
        for api, var in KEY_ENV.items():
            mp.setenv(var, KEYS[api])
        for name, key in (("ALICE", ALICE), ("BOB", BOB), ("CAROL", CAROL)):
            mp.setenv(f"TURNSTILE_TEST_MCP_KEY_{name}", key)
        base = build_config(standin.url, str(db_path))
        mcp = McpConfig.model_validate(
            {
                "restart_backoff_s": 0.05,
                "health_interval_s": 600,
                "servers": [
                    time_server_spec(),
                    {
                        "id": "fx",
                        "transport": {
                            "type": "stdio",
                            "command": sys.executable,
                            "args": [FIXTURE_SERVER, "--name", "fx"],
                        },
                        "trust": {"reset": "allow"},  # would run at once: only the schema check stops it
                    },
                ],
                "clients": [
                    {"name": "alice", "key_env": "TURNSTILE_TEST_MCP_KEY_ALICE", "tools": ["time__*"]},
                    {"name": "bob", "key_env": "TURNSTILE_TEST_MCP_KEY_BOB", "tools": ["fx__*"]},
                    {
                        "name": "carol",
                        "key_env": "TURNSTILE_TEST_MCP_KEY_CAROL",
                        "tools": ["time__get_current_time"],
                    },
                ],
            }
        )
        config = base.model_copy(
            update={
                "mcp": mcp,
                "models": [
                    *base.models,
                    ModelAlias(name="oa-time", deployments=["oa"], mcp_servers=["time"]),
                ],
            }
        )
        app = create_app(config=config, settings=Settings(db_path=db_path, log_level="warning"))
        gateway = GatewayServer(app)
        loop.call(gateway.start())
        try:
            ready = loop.call(app.state.mcp.registry.wait_ready(30), timeout=40)
            assert all(ready.values()), ready
            yield {"standin": standin, "url": gateway.url, "app": app, "loop": loop, "db_path": db_path}
        finally:
            loop.call(gateway.stop())
            loop.call(standin.stop())
            loop.close()


@pytest.fixture
def standin(access_gw: dict[str, Any]) -> Iterator[UpstreamStandin]:
    s: UpstreamStandin = access_gw["standin"]
    s.reset()
    yield s
    s.reset()


def _oai(gw: dict[str, Any], key: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{gw['url']}/v1", api_key=key, max_retries=0, timeout=30)


def _ant(gw: dict[str, Any], key: str) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=gw["url"], api_key=key, max_retries=0, timeout=30)


def _call_answer(name: str, args: dict[str, Any], call_id: str = "call_1") -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": MODEL,
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": call_id,
                            "type": "function",
                            "function": {"name": name, "arguments": json.dumps(args)},
                        }
                    ],
                },
            }
        ],
        "usage": {"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25},
    }


def _text_answer(text: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-2",
        "object": "chat.completion",
        "created": 2,
        "model": MODEL,
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": 40, "completion_tokens": 7, "total_tokens": 47},
    }


HI = [{"role": "user", "content": "What time is it?"}]
TIME_TOOLS: Any = [{"type": "mcp", "server": "time"}]


def test_a_key_that_may_not_see_a_server_gets_403_naming_it_and_nothing_goes_upstream(
    access_gw: dict[str, Any], standin: UpstreamStandin
) -> None:
    with pytest.raises(openai.PermissionDeniedError) as oai_err:
        _oai(access_gw, BOB).chat.completions.create(model="oa", messages=HI, tools=TIME_TOOLS)
    assert "'time'" in oai_err.value.message and "'bob'" in oai_err.value.message
    body: Any = oai_err.value.body
    assert body["type"] == "invalid_request_error" and body["code"] == "permission_denied"
    row = transcript_row(access_gw["db_path"], oai_err.value.response.headers["x-turnstile-request-id"])
    assert row["status"] == 403 and "'time'" in row["error"]  # one row, as for any refused turn
    with pytest.raises(anthropic.PermissionDeniedError) as ant_err:
        _ant(access_gw, BOB).messages.create(model="oa", max_tokens=64, messages=HI, tools=TIME_TOOLS)
    assert "'time'" in ant_err.value.message
    assert ant_err.value.body["error"]["type"] == "permission_error"  # type: ignore[index]
    with pytest.raises(openai.PermissionDeniedError):  # an alias's mcp_servers likewise
        _oai(access_gw, BOB).chat.completions.create(model="oa-time", messages=HI)
    assert standin.requests(OPENAI) == []


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer nope"}, {"x-api-key": "nope"}])
def test_no_key_or_an_unknown_key_gets_401_in_the_clients_dialect(
    access_gw: dict[str, Any], standin: UpstreamStandin, headers: dict[str, str]
) -> None:
    oai_body = {"model": "oa", "messages": HI, "tools": TIME_TOOLS}
    ant_body = {"model": "oa", "max_tokens": 64, "messages": HI, "tools": TIME_TOOLS}
    alias_body = {"model": "oa-time", "messages": HI}
    with httpx.Client(base_url=access_gw["url"], timeout=30) as http:
        oai = http.post("/v1/chat/completions", json=oai_body, headers=headers)
        ant = http.post("/v1/messages", json=ant_body, headers=headers)
        alias = http.post("/v1/chat/completions", json=alias_body, headers=headers)
        streamed = http.post("/v1/messages", json={**ant_body, "stream": True}, headers=headers)
    assert oai.status_code == 401 and oai.json()["error"]["code"] == "invalid_api_key"
    assert "x-api-key" in oai.json()["error"]["message"]
    assert ant.status_code == 401 and ant.json()["error"]["type"] == "authentication_error"
    assert alias.status_code == 401
    assert streamed.status_code == 401 and streamed.json()["error"]["type"] == "authentication_error"
    assert standin.requests(OPENAI) == []


def test_a_turn_without_mcp_servers_needs_no_mcp_key(
    access_gw: dict[str, Any], standin: UpstreamStandin
) -> None:
    standin.script(replay(json_exchange(_text_answer("hello")), api=OPENAI))
    done = _oai(access_gw, "sk-anything").chat.completions.create(model="oa", messages=HI)
    assert done.choices[0].message.content == "hello"


def test_a_permitted_key_is_offered_only_the_tools_it_may_see(
    access_gw: dict[str, Any], standin: UpstreamStandin
) -> None:
    standin.script(
        replay(json_exchange(_call_answer("time__get_current_time", {"timezone": "UTC"})), api=OPENAI),
        replay(json_exchange(_text_answer("It is noon.")), api=OPENAI),
    )
    done = _oai(access_gw, CAROL).chat.completions.create(model="oa", messages=HI, tools=TIME_TOOLS)
    assert done.choices[0].message.content == "It is noon."
    sent = standin.requests(OPENAI)
    assert [t["function"]["name"] for t in sent[0].body["tools"]] == ["time__get_current_time"]
    result = next(m for m in sent[1].body["messages"] if m.get("role") == "tool")
    assert '"timezone": "UTC"' in json.dumps(result["content"]).replace('\\"', '"')


def test_anthropic_sdk_key_in_x_api_key_runs_the_loop(
    access_gw: dict[str, Any], standin: UpstreamStandin
) -> None:
    standin.script(
        replay(json_exchange(_call_answer("time__get_current_time", {"timezone": "UTC"})), api=OPENAI),
        replay(json_exchange(_text_answer("It is noon.")), api=OPENAI),
    )
    message = _ant(access_gw, ALICE).messages.create(model="oa", max_tokens=64, messages=HI, tools=TIME_TOOLS)
    assert message.content[0].text == "It is noon."  # type: ignore[union-attr]
    sent = standin.requests(OPENAI)
    assert {t["function"]["name"] for t in sent[0].body["tools"]} == {
        "time__get_current_time",
        "time__convert_time",
    }


def test_the_loops_runner_refuses_a_tool_the_caller_may_not_see(access_gw: dict[str, Any]) -> None:
    endpoint = access_gw["app"].state.mcp.endpoint
    carol = Visibility("carol", ("time__get_current_time",))
    hidden = access_gw["loop"].call(
        endpoint.call_for_loop(
            "time__convert_time",
            {"source_timezone": "UTC", "time": "12:00", "target_timezone": "UTC"},
            visibility=carol,
        )
    )
    unknown = access_gw["loop"].call(endpoint.call_for_loop("time__nothing", {}, visibility=carol))
    assert hidden.is_error and hidden.content[0].text == unknown.content[0].text.replace(
        "time__nothing", "time__convert_time"
    )


def test_loop_arguments_that_do_not_match_the_schema_never_reach_the_server(
    access_gw: dict[str, Any], standin: UpstreamStandin
) -> None:
    standin.script(
        replay(json_exchange(_call_answer("fx__reset", {"mode": "hardest"})), api=OPENAI),
        replay(json_exchange(_text_answer("I could not.")), api=OPENAI),
    )
    done = _oai(access_gw, BOB).chat.completions.create(
        model="oa",
        messages=HI,
        tools=[{"type": "mcp", "server": "fx"}],  # type: ignore[list-item]
    )
    assert done.choices[0].message.content == "I could not."
    result = next(m for m in standin.requests(OPENAI)[1].body["messages"] if m.get("role") == "tool")
    text = json.dumps(result["content"])
    assert "arguments.mode: 'hardest' is not one of ['soft', 'hard']" in text
    endpoint = access_gw["app"].state.mcp.endpoint
    received = access_gw["loop"].call(endpoint.call_for_loop("fx__received_calls", {}))
    assert json.loads(received.content[0].text) == []


@pytest.mark.parametrize("choice", ["named", "required"])
@pytest.mark.parametrize("dialect", ["openai", "anthropic"])
def test_tool_choice_naming_an_attached_mcp_tool_counts_as_offered(
    access_gw: dict[str, Any], standin: UpstreamStandin, dialect: str, choice: str
) -> None:
    standin.script(
        replay(json_exchange(_call_answer("time__get_current_time", {"timezone": "UTC"})), api=OPENAI),
        replay(json_exchange(_text_answer("It is noon.")), api=OPENAI),
    )
    name = "time__get_current_time"
    if dialect == "openai":
        forced: Any = {"type": "function", "function": {"name": name}} if choice == "named" else "required"
        done = _oai(access_gw, ALICE).chat.completions.create(
            model="oa", messages=HI, tools=TIME_TOOLS, tool_choice=forced
        )
        assert done.choices[0].message.content == "It is noon."
    else:
        forced = {"type": "tool", "name": name} if choice == "named" else {"type": "any"}
        message = _ant(access_gw, ALICE).messages.create(
            model="oa", max_tokens=64, messages=HI, tools=TIME_TOOLS, tool_choice=forced
        )
        assert message.content[0].text == "It is noon."  # type: ignore[union-attr]
    first, second = (r.body for r in standin.requests(OPENAI))
    want = {"type": "function", "function": {"name": name}} if choice == "named" else "required"
    assert first["tool_choice"] == want
    assert (
        second.get("tool_choice", "auto") == "auto"
    )  # the gateway ran the forced call: the model may answer


RESPONSES_TIME_TOOLS: Any = [{"type": "mcp", "server_label": "time", "require_approval": "never"}]


def test_responses_clients_get_the_same_visibility_in_their_own_error_shape(
    access_gw: dict[str, Any], standin: UpstreamStandin
) -> None:
    with pytest.raises(openai.PermissionDeniedError) as err:
        _oai(access_gw, BOB).responses.create(
            model="oa", input="What time is it?", tools=RESPONSES_TIME_TOOLS
        )
    assert "'time'" in err.value.message and "'bob'" in err.value.message
    body: Any = err.value.body
    assert body["type"] == "invalid_request_error" and body["code"] == "permission_denied"
    assert standin.requests(OPENAI) == []
    standin.script(
        replay(json_exchange(_call_answer("time__get_current_time", {"timezone": "UTC"})), api=OPENAI),
        replay(json_exchange(_text_answer("It is noon.")), api=OPENAI),
    )
    done = _oai(access_gw, CAROL).responses.create(
        model="oa", input="What time is it?", tools=RESPONSES_TIME_TOOLS
    )
    assert done.output_text == "It is noon."
    assert [t["function"]["name"] for t in standin.requests(OPENAI)[0].body["tools"]] == [
        "time__get_current_time"
    ]
