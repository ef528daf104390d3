"""The server-side tool loop end to end: the official ``openai`` SDK asks a real gateway with the
PyPI ``mcp-server-time`` server attached (``tools: [{"type": "mcp", "server": "time"}]``); the
scripted upstream stand-in asks for the time, then answers. Two model requests go upstream; the
second carries the time server's real result, in call order; the transcript holds both steps.
The same loop serves a Responses client (``{"type": "mcp", "server_label": "time"}``), whose
stream keeps alive with ``response.in_progress`` events while tools run.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest
from standins.recordings import json_exchange, stream_exchange
from standins.servers import GatewayServer, LoopThread
from standins.tool_answers import Call, text_answer, tool_call_answer
from standins.topology import KEY_ENV, KEYS, build_config, time_server_spec
from standins.upstream import OPENAI, UpstreamStandin, replay
from standins.wirekit import transcript_row

from gateway.config import ModelAlias, Settings
from gateway.server import create_app
from mcp_servers.config import McpConfig

MODEL = "gpt-4o-mini"  # the upstream model id of deployment "oa"


@pytest.fixture(scope="module")
def loop_gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A stand-in upstream and a gateway whose MCP registry runs the time server; alias
    ``oa-time`` attaches it in config."""
    db_path = tmp_path_factory.mktemp("toolloop") / "gateway.db"
    loop = LoopThread()
    standin = UpstreamStandin()
    loop.call(standin.start())
    with pytest.MonkeyPatch.context() as mp:
        for api, var in KEY_ENV.items():
            mp.setenv(var, KEYS[api])
        base = build_config(standin.url, str(db_path))
        mcp = McpConfig.model_validate(
            {
                "restart_backoff_s": 0.05,
                "health_interval_s": 600,
                "servers": [time_server_spec()],
            }
        )
        config = base.model_copy(
            update={
                "mcp": mcp,
                "models": [
                    *base.models,
                    ModelAlias(name="oa-time", deployments=["oa"], mcp_servers=["time"]),
                    ModelAlias(name="an-time", deployments=["an"], mcp_servers=["time"]),
                ],
            }
        )
        app = create_app(config=config, settings=Settings(db_path=db_path, log_level="warning"))
        gateway = GatewayServer(app)
        loop.call(gateway.start())
        try:
            ready = loop.call(app.state.mcp.registry.wait_ready(30), timeout=40)
            assert all(ready.values()), ready
            yield {"standin": standin, "url": gateway.url, "db_path": db_path}
        finally:
            loop.call(gateway.stop())
            loop.call(standin.stop())
            loop.close()


def _tool_call_answer(call_id: str, args: dict[str, Any]) -> dict[str, Any]:
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
                            "function": {"name": "time__get_current_time", "arguments": json.dumps(args)},
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


@pytest.fixture
def standin(loop_gw: dict[str, Any]) -> Iterator[UpstreamStandin]:
    s: UpstreamStandin = loop_gw["standin"]
    s.reset()
    yield s
    s.reset()


def _tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in body["messages"] if m.get("role") == "tool"]


def test_openai_sdk_runs_a_multi_step_mcp_tool_loop(
    loop_gw: dict[str, Any], standin: UpstreamStandin
) -> None:
    standin.script(
        replay(json_exchange(_tool_call_answer("call_a", {"timezone": "UTC"})), api=OPENAI),
        replay(json_exchange(_tool_call_answer("call_b", {"timezone": "Europe/Paris"})), api=OPENAI),
        replay(json_exchange(_text_answer("It is noon in UTC.")), api=OPENAI),
    )
    client = openai.OpenAI(base_url=f"{loop_gw['url']}/v1", api_key="sk-x", max_retries=0, timeout=30)
    done = client.chat.completions.with_raw_response.create(
        model="oa",
        messages=[{"role": "user", "content": "What time is it?"}],
        tools=[{"type": "mcp", "server": "time"}],  # type: ignore[list-item]
    )
    completion = done.parse()
    assert completion.choices[0].message.content == "It is noon in UTC."
    assert completion.choices[0].message.tool_calls is None
    assert completion.usage is not None and completion.usage.prompt_tokens == 20 + 20 + 40
    sent = standin.requests(OPENAI)
    assert len(sent) == 3
    assert [t["function"]["name"] for t in sent[0].body["tools"]] == [
        "time__convert_time",
        "time__get_current_time",
    ]
    first, second = _tool_results(sent[1].body), _tool_results(sent[2].body)
    assert [r["tool_call_id"] for r in first] == ["call_a"]
    assert [r["tool_call_id"] for r in second] == ["call_a", "call_b"]
    assert '"timezone": "UTC"' in json.dumps(first[0]["content"]).replace('\\"', '"')
    assert "Europe/Paris" in json.dumps(second[1]["content"])
    rid = done.headers["x-turnstile-request-id"]
    turn = transcript_row(loop_gw["db_path"], rid)  # the turn row is written last
    assert turn["stop"] == "stop"
    steps = {n: transcript_row(loop_gw["db_path"], f"{rid}.step{n}") for n in (1, 2, 3)}
    assert [steps[n]["stop"] for n in (1, 2, 3)] == ["tool_use", "tool_use", "stop"]
    last = json.loads(steps[3]["request"])["messages"]  # internal schema, call order
    assert [m.get("tool_call_id") for m in last if m["role"] == "tool"] == ["call_a", "call_b"]


def test_alias_attaches_mcp_servers_and_the_stream_shows_tool_progress(
    loop_gw: dict[str, Any], standin: UpstreamStandin
) -> None:
    chunks = [
        {
            "id": "c",
            "object": "chat.completion.chunk",
            "created": 3,
            "model": MODEL,
            "choices": [
                {"index": 0, "delta": {"role": "assistant", "content": "It is "}, "finish_reason": None}
            ],
        },
        {
            "id": "c",
            "object": "chat.completion.chunk",
            "created": 3,
            "model": MODEL,
            "choices": [{"index": 0, "delta": {"content": "noon."}, "finish_reason": "stop"}],
        },
    ]
    tool_chunks = [
        {
            "id": "t",
            "object": "chat.completion.chunk",
            "created": 3,
            "model": MODEL,
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "role": "assistant",
                        "tool_calls": [
                            {
                                "index": 0,
                                "id": "call_s",
                                "type": "function",
                                "function": {
                                    "name": "time__get_current_time",
                                    "arguments": '{"timezone": "UTC"}',
                                },
                            }
                        ],
                    },
                    "finish_reason": None,
                }
            ],
        },
        {
            "id": "t",
            "object": "chat.completion.chunk",
            "created": 3,
            "model": MODEL,
            "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}],
        },
    ]
    standin.script(
        replay(stream_exchange(OPENAI, tool_chunks), api=OPENAI),
        replay(stream_exchange(OPENAI, chunks), api=OPENAI),
    )
    body = {"model": "oa-time", "stream": True, "messages": [{"role": "user", "content": "time?"}]}
    with httpx.stream("POST", f"{loop_gw['url']}/v1/chat/completions", json=body, timeout=30) as resp:
        raw = b"".join(resp.iter_bytes()).decode()
    assert ": turnstile tool time__get_current_time done" in raw
    assert "tool_calls" not in raw  # the gateway's own calls are never handed to the client
    assert raw.index("turnstile tool") < raw.index("noon.")
    client = openai.OpenAI(base_url=f"{loop_gw['url']}/v1", api_key="sk-x", max_retries=0, timeout=30)
    standin.script(
        replay(stream_exchange(OPENAI, tool_chunks), api=OPENAI),
        replay(stream_exchange(OPENAI, chunks), api=OPENAI),
    )
    text = "".join(
        c.choices[0].delta.content or ""
        for c in client.chat.completions.create(model="oa-time", stream=True, messages=body["messages"])
        if c.choices
    )
    assert text == "It is noon."
    results = _tool_results(standin.requests(OPENAI)[-1].body)
    assert [r["tool_call_id"] for r in results] == ["call_s"]


def test_unknown_mcp_server_is_a_400_naming_it(loop_gw: dict[str, Any], standin: UpstreamStandin) -> None:
    client = openai.OpenAI(base_url=f"{loop_gw['url']}/v1", api_key="sk-x", max_retries=0, timeout=30)
    with pytest.raises(openai.BadRequestError) as err:
        client.chat.completions.create(
            model="oa",
            messages=[{"role": "user", "content": "hi"}],
            tools=[{"type": "mcp", "server": "nope"}],  # type: ignore[list-item]
        )
    assert "'nope' is not registered" in str(err.value)
    assert standin.requests(OPENAI) == []


# ---------------------------------------------------------------------- ids reused across steps

LOOP_ALIAS = {"openai_chat": "oa-time", "anthropic_messages": "an-time"}


def _loop_turn(url: str, dialect: str, alias: str, stream: bool) -> httpx.Response:
    if dialect == "openai":
        path, body = (
            "/v1/chat/completions",
            {"model": alias, "messages": [{"role": "user", "content": "time?"}]},
        )
    else:
        path = "/v1/messages"
        body = {"model": alias, "max_tokens": 300, "messages": [{"role": "user", "content": "time?"}]}
    if stream:
        body["stream"] = True
    with httpx.Client(base_url=url, timeout=30) as client:
        resp = client.post(path, json=body)
        resp.read()
        return resp


def _history_ids(api: str, body: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(call ids, result ids) of an upstream request body, in order."""
    calls: list[str] = []
    results: list[str] = []
    for m in body["messages"]:
        if api == "openai_chat":
            calls += [c["id"] for c in m.get("tool_calls") or []]
            if m["role"] == "tool":
                results.append(m["tool_call_id"])
        elif isinstance(m["content"], list):
            calls += [b["id"] for b in m["content"] if b["type"] == "tool_use"]
            results += [b["tool_use_id"] for b in m["content"] if b["type"] == "tool_result"]
    return calls, results


@pytest.mark.parametrize("dialect", ["openai", "anthropic"])
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize("api", ["openai_chat", "anthropic_messages"])
def test_an_upstream_reusing_a_tool_call_id_in_the_next_step_does_not_stop_the_loop(
    dialect: str, stream: bool, api: str, loop_gw: dict[str, Any], standin: UpstreamStandin
) -> None:
    args = '{"timezone": "UTC"}'
    standin.script(
        replay(
            tool_call_answer(api, [Call("call_same", "time__get_current_time", args)], stream=stream), api=api
        ),
        replay(
            tool_call_answer(api, [Call("call_same", "time__get_current_time", args)], stream=stream), api=api
        ),
        replay(text_answer(api, "It is noon.", stream=stream), api=api),
    )

    resp = _loop_turn(loop_gw["url"], dialect, LOOP_ALIAS[api], stream)

    assert resp.status_code == 200, resp.text
    assert "It is noon." in resp.text
    sent = standin.requests(api)
    assert len(sent) == 3
    calls, results = _history_ids(api, sent[2].body)
    assert len(calls) == 2 and len(set(calls)) == 2, calls
    assert calls[0] == "call_same", "the first use keeps the upstream's id"
    assert calls[1] == "call_same_s2", "a reused id is renamed by step, deterministically"
    assert results == calls, "each call has its result, in call order"
    rid = resp.headers["x-turnstile-request-id"]
    step2 = json.loads(transcript_row(loop_gw["db_path"], f"{rid}.step2")["response"])
    assert [p["id"] for p in step2["message"]["content"] if p["type"] == "tool_call"] == ["call_same"], (
        "the step's row keeps what the upstream sent"
    )


# ---------------------------------------------------------------------- output budget in the loop


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_a_loop_call_at_the_output_budget_is_not_run_and_the_model_is_told_why(
    stream: bool, loop_gw: dict[str, Any], standin: UpstreamStandin
) -> None:
    api = "openai_chat"
    call = Call("call_cut", "time__get_current_time", '{"timezone": "Europe/Par"}')
    standin.script(
        replay(tool_call_answer(api, [call], stream=stream, output_tokens=40), api=api),
        replay(text_answer(api, "Sorry, I ran out of room.", stream=stream), api=api),
    )
    body: dict[str, Any] = {
        "model": "oa-time",
        "max_tokens": 40,
        "messages": [{"role": "user", "content": "time in Paris?"}],
    }
    if stream:
        body["stream"] = True
    resp = httpx.post(f"{loop_gw['url']}/v1/chat/completions", json=body, timeout=30)

    assert resp.status_code == 200, resp.text
    [result] = _tool_results(standin.requests(api)[1].body)
    text = json.dumps(result["content"])
    assert "not executed" in text, "the tool never ran: its result is the gateway's error text"
    assert "output token limit" in text and "40 of 40" in text, text


def test_responses_client_runs_the_loop_through_an_mcp_tool_naming_a_registered_server(
    loop_gw: dict[str, Any], standin: UpstreamStandin
) -> None:
    standin.script(
        replay(json_exchange(_tool_call_answer("call_r", {"timezone": "UTC"})), api=OPENAI),
        replay(json_exchange(_text_answer("It is noon in UTC.")), api=OPENAI),
    )
    client = openai.OpenAI(base_url=f"{loop_gw['url']}/v1", api_key="sk-x", max_retries=0, timeout=30)
    response = client.responses.create(
        model="oa",
        input="What time is it?",
        tools=[{"type": "mcp", "server_label": "time", "require_approval": "never"}],
    )
    assert response.output_text == "It is noon in UTC."
    assert [i.type for i in response.output] == ["message"]  # the gateway's own calls stay inside
    sent = standin.requests(OPENAI)
    assert "time__get_current_time" in [t["function"]["name"] for t in sent[0].body["tools"]]
    assert [r["tool_call_id"] for r in _tool_results(sent[1].body)] == ["call_r"]


def test_responses_stream_keeps_alive_with_in_progress_events_while_the_loop_runs_tools(
    loop_gw: dict[str, Any], standin: UpstreamStandin
) -> None:
    tool = _tool_call_answer("call_k", {"timezone": "UTC"})
    call = tool["choices"][0]["message"]["tool_calls"][0]
    tool_chunks = [
        {
            "id": "t",
            "object": "chat.completion.chunk",
            "created": 3,
            "model": MODEL,
            "choices": [
                {
                    "index": 0,
                    "delta": {"role": "assistant", "tool_calls": [{"index": 0, **call}]},
                    "finish_reason": None,
                }
            ],
        },
        {
            "id": "t",
            "object": "chat.completion.chunk",
            "created": 3,
            "model": MODEL,
            "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}],
        },
    ]
    text_chunks = [
        {
            "id": "c",
            "object": "chat.completion.chunk",
            "created": 3,
            "model": MODEL,
            "choices": [
                {"index": 0, "delta": {"role": "assistant", "content": "noon."}, "finish_reason": "stop"}
            ],
        }
    ]
    standin.script(
        replay(stream_exchange(OPENAI, tool_chunks), api=OPENAI),
        replay(stream_exchange(OPENAI, text_chunks), api=OPENAI),
    )
    client = openai.OpenAI(base_url=f"{loop_gw['url']}/v1", api_key="sk-x", max_retries=0, timeout=30)
    with client.responses.stream(model="oa-time", input="time?") as stream:
        types = [e.type for e in stream]
        final = stream.get_final_response()
    assert final.output_text == "noon."
    at = [i for i, t in enumerate(types) if t == "response.in_progress"]
    assert len(at) == 2, types  # the start, then the tool's progress: a data event Codex's idle timer counts
    assert at[1] < types.index("response.output_text.delta")


# ---------------------------------------------------------------------- a Gemini client


@pytest.mark.parametrize("stream", [False, True], ids=["nonstream", "stream"])
def test_google_genai_sdk_runs_the_tool_loop_and_reads_its_progress_frames(
    loop_gw: dict[str, Any], standin: UpstreamStandin, stream: bool
) -> None:
    from google import genai
    from google.genai import types

    standin.script(
        replay(json_exchange(_tool_call_answer("call_g", {"timezone": "UTC"})), api=OPENAI),
        replay(json_exchange(_text_answer("It is noon in UTC.")), api=OPENAI),
    )
    if stream:
        standin.reset()
        first = {
            "id": "t",
            "object": "chat.completion.chunk",
            "created": 3,
            "model": MODEL,
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "role": "assistant",
                        "tool_calls": [
                            {
                                "index": 0,
                                "id": "call_g",
                                "type": "function",
                                "function": {
                                    "name": "time__get_current_time",
                                    "arguments": '{"timezone": "UTC"}',
                                },
                            }
                        ],
                    },
                    "finish_reason": "tool_calls",
                }
            ],
        }
        second = {
            "id": "c",
            "object": "chat.completion.chunk",
            "created": 3,
            "model": MODEL,
            "choices": [{"index": 0, "delta": {"content": "It is noon in UTC."}, "finish_reason": "stop"}],
        }
        standin.script(
            replay(stream_exchange(OPENAI, [first]), api=OPENAI),
            replay(stream_exchange(OPENAI, [second]), api=OPENAI),
        )
    options = types.HttpOptions(base_url=loop_gw["url"], api_version="v1beta", timeout=30_000)
    client = genai.Client(api_key="gemini-key", http_options=options)
    # the alias attaches the time server (the SDK has no field for Turnstile's {"type": "mcp"} entry)
    if stream:
        chunks = list(client.models.generate_content_stream(model="oa-time", contents="What time is it?"))
        text = "".join(c.text or "" for c in chunks)
        assert not any(c.function_calls for c in chunks), "the gateway's own calls are never handed out"
    else:
        resp = client.models.generate_content(model="oa-time", contents="What time is it?")
        text = resp.text or ""
        assert not resp.function_calls, "the gateway's own calls are never handed to the client"
    assert text == "It is noon in UTC."
    results = _tool_results(standin.requests(OPENAI)[-1].body)
    assert [r["tool_call_id"] for r in results] == ["call_g"]
