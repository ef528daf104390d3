"""``/metrics`` agrees with the transcript: after a mix of turns — a plain answer, a server-side
tool loop of two model steps, a tool loop whose second step fails, and an upstream refusal —
the turn, token and cost counters moved by exactly what the turns' own transcript rows hold
(their step rows ``<id>.step<n>`` repeat the turn's usage piece by piece and are not turns),
and the steps are counted in their own metric."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest
from prometheus_client.parser import text_string_to_metric_families
from standins.recordings import json_exchange
from standins.servers import GatewayServer, LoopThread
from standins.topology import KEY_ENV, KEYS, build_config, time_server_spec
from standins.upstream import OPENAI, UpstreamStandin, http_error, replay
from standins.wirekit import transcript_row

from gateway.config import Settings
from gateway.server import create_app
from mcp_servers.config import McpConfig

MODEL = "gpt-4o-mini"  # the upstream model id of deployment "oa"
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A stand-in upstream and a gateway whose MCP registry runs the PyPI time server."""
    db_path = tmp_path_factory.mktemp("metrics_transcript") / "gateway.db"
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
        app = create_app(
            config=base.model_copy(update={"mcp": mcp}),
            settings=Settings(db_path=db_path, log_level="warning"),
        )
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


def _answer(message: dict[str, Any], finish: str, prompt: int, completion: int) -> dict[str, Any]:
    return {
        "id": "chatcmpl-m",
        "object": "chat.completion",
        "created": 1,
        "model": MODEL,
        "choices": [{"index": 0, "finish_reason": finish, "message": {"role": "assistant", **message}}],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }


def _tool_call(call_id: str, prompt: int, completion: int) -> Any:
    call = {
        "id": call_id,
        "type": "function",
        "function": {"name": "time__get_current_time", "arguments": '{"timezone": "UTC"}'},
    }
    return replay(
        json_exchange(_answer({"content": None, "tool_calls": [call]}, "tool_calls", prompt, completion)),
        api=OPENAI,
    )


def _text(text: str, prompt: int, completion: int) -> Any:
    return replay(json_exchange(_answer({"content": text}, "stop", prompt, completion)), api=OPENAI)


def _scrape(url: str) -> Samples:
    got = httpx.get(f"{url}/metrics", timeout=10)
    assert got.status_code == 200
    out: Samples = {}
    for family in text_string_to_metric_families(got.text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def _moved(before: Samples, after: Samples, name: str) -> float:
    return sum(v - before.get(k, 0.0) for k, v in after.items() if k[0] == name)


def test_metrics_turn_token_and_cost_counters_equal_the_transcript_sums_of_the_same_turns(
    gw: dict[str, Any],
) -> None:
    standin: UpstreamStandin = gw["standin"]
    standin.reset()
    standin.script(
        _text("plain", 11, 3),  # turn 1: one model call
        _tool_call("call_a", 20, 5),  # turn 2: a tool loop of two steps
        _text("It is noon.", 40, 7),
        _tool_call("call_b", 13, 4),  # turn 3: a tool loop whose second step fails
        http_error(400, {"error": {"message": "bad", "type": "invalid_request_error"}}, api=OPENAI),
        http_error(400, {"error": {"message": "refused", "type": "invalid_request_error"}}, api=OPENAI),
    )
    client = openai.OpenAI(base_url=f"{gw['url']}/v1", api_key="sk-x", max_retries=0, timeout=30)
    ask = [{"role": "user", "content": "What time is it?"}]
    mcp = [{"type": "mcp", "server": "time"}]
    before = _scrape(gw["url"])
    ids = [
        client.chat.completions.with_raw_response.create(model="oa", messages=ask).headers[
            "x-turnstile-request-id"
        ]
    ]  # type: ignore[arg-type]
    loop = client.chat.completions.with_raw_response.create(model="oa", messages=ask, tools=mcp)  # type: ignore[arg-type,list-item]
    ids.append(loop.headers["x-turnstile-request-id"])
    for tools in (mcp, None):  # turn 3 fails in its second step; turn 4 is refused upstream at once
        with pytest.raises(openai.BadRequestError) as failed:
            client.chat.completions.create(model="oa", messages=ask, **({"tools": tools} if tools else {}))  # type: ignore[arg-type]
        ids.append(failed.value.response.headers["x-turnstile-request-id"])
    rows = [transcript_row(gw["db_path"], rid) for rid in ids]
    transcript_row(gw["db_path"], f"{ids[1]}.step2")
    after = _scrape(gw["url"])

    assert _moved(before, after, "turnstile_turns_total") == len(ids) == 4
    for column, kind in (("input_tokens", "input"), ("output_tokens", "output")):
        metric = sum(
            v - before.get(k, 0.0)
            for k, v in after.items()
            if k[0] == "turnstile_tokens_total" and ("type", kind) in k[1]
        )
        assert metric == sum(r[column] or 0 for r in rows), column
    assert sum(r["input_tokens"] or 0 for r in rows) == 11 + 20 + 40 + 13
    cost = _moved(before, after, "turnstile_cost_usd_total")
    assert cost == pytest.approx(sum(r["cost_usd"] or 0.0 for r in rows)) and cost > 0
    assert _moved(before, after, "turnstile_tool_loop_steps_total") == 2 + 1
    conn = sqlite3.connect(str(gw["db_path"]))
    try:
        steps = conn.execute("SELECT COUNT(*) FROM turns WHERE request_id LIKE '%.step%'").fetchone()[0]
    finally:
        conn.close()
    assert steps == 3
    assert json.loads(rows[2]["attempts"])  # the failed loop's row names its attempts
