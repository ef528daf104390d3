"""What a keyed turn costs is charged once, the same on the limit counters and in the spend
ledger, and a hard budget holds for every model step of the server-side tool loop — through
the real gateway, the upstream stand-in priced at 1 USD a token, and the fixture MCP server.

* Concurrent tool-loop turns against a tight hard budget never take the ledger's spend past it:
  each model step is held on the budget before it goes upstream (the second step, which
  carries the first's long tool call and its result back, costs far more than the first's
  worst case, which is all a turn used to reserve).
* A stream the client leaves mid-answer is charged what was delivered, priced: its transcript
  row (the ledger) and the counter agree — also when a tool loop's second step is cut.
* A tool loop that fails after a step answered is charged that step, on both.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from standins.keyed import counter_usd, demo_config, keyed_gateway, ledger_usd, make_key
from standins.servers import LoopThread
from standins.tool_answers import Call, tool_call_answer
from standins.topology import KEY_ENV, KEYS
from standins.upstream import OPENAI, Gate, UpstreamStandin, answering, http_error, reset_mid_stream
from standins.wirekit import transcript_row

FIXTURE_SERVER = str(Path(__file__).parents[1] / "mcp_servers" / "fixture_server.py")
ECHOED = "lorem " * 8000  # ~8,000 tokens written as the tool call's arguments, echoed back
MAX_TOKENS = 10_000
FIRST_OUT = 8000  # tokens the upstream reports for step 1 (the long call)


@pytest.fixture(scope="module")
def acct_gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Keys required; deployment ``oa`` (OpenAI Chat at the stand-in, 1 USD a token), alias
    ``oa-fx`` running the fixture server's tools in the tool loop."""
    from gateway.providers.catalog import load_tokenizer

    load_tokenizer()  # worst cases counted with the tokenizer, not bounded by the byte length
    db_path = tmp_path_factory.mktemp("acct") / "gateway.db"
    loop = LoopThread()
    standin = UpstreamStandin()
    loop.call(standin.start())
    config = demo_config(
        db_path,
        deployments=[
            {
                "name": "oa",
                "api": "openai_chat",
                "model": "gpt-4o-mini",
                "base_url": f"{standin.url}/v1",
                "api_key_env": KEY_ENV[OPENAI],
                "price": {"input": 1_000_000.0, "output": 1_000_000.0},
            }
        ],
        models=[{"name": "oa-fx", "deployments": ["oa"], "mcp_servers": ["fx"]}],
        mcp={
            "health_interval_s": 600,
            "servers": [
                {
                    "id": "fx",
                    "transport": {
                        "type": "stdio",
                        "command": sys.executable,
                        "args": [FIXTURE_SERVER, "--name", "fx"],
                    },
                }
            ],
        },
    )
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(KEY_ENV[OPENAI], KEYS[OPENAI])
        try:
            with keyed_gateway(config, mcp_ready_s=30) as gw:
                gw["standin"] = standin
                yield gw
        finally:
            loop.call(standin.stop())
            loop.close()


@pytest.fixture
def standin(acct_gw: dict[str, Any]) -> Iterator[UpstreamStandin]:
    s: UpstreamStandin = acct_gw["standin"]
    s.reset()
    yield s
    s.reset()


def _step(api: str, body: Any, stream: bool) -> Any:
    """Step 1 (no tool result yet): a long ``fx__echo`` call; step 2: a short answer whose
    reported input is the request's size (its messages' JSON length / 6: "lorem " is one
    token)."""
    if not any(m.get("role") == "tool" for m in body["messages"]):
        call = Call("call_echo", "fx__echo", json.dumps({"text": ECHOED}))
        return tool_call_answer(api, [call], stream=stream, input_tokens=100, output_tokens=FIRST_OUT)
    size = len(json.dumps(body["messages"])) // 6
    return tool_call_answer(
        api, [], stream=stream, stop="stop", text="done", input_tokens=size, output_tokens=10
    )


def _agree(gw: dict[str, Any], key_id: str) -> float:
    """The key's spend, once the ledger and the counter agree on it (no reservation left)."""
    ledger = ledger_usd(gw, f"key:{key_id}")
    spent, reserved = counter_usd(gw, f"key:{key_id}")
    assert reserved == 0
    assert spent == pytest.approx(ledger, abs=1e-6), (spent, ledger)
    return ledger


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_concurrent_tool_loop_turns_never_take_the_spend_past_a_hard_budget(
    acct_gw: dict[str, Any], standin: UpstreamStandin, stream: bool
) -> None:
    limit = 100_000.0  # room for every loop's first step and about one second step
    key_id, secret = make_key(acct_gw["url"], budgets=[{"period": "total", "usd": limit, "hard": True}])
    turns = 8
    standin.script(*(answering(_step, api=OPENAI) for _ in range(2 * turns)))
    body = {
        "model": "oa-fx",
        "max_tokens": MAX_TOKENS,
        "stream": stream,
        "messages": [{"role": "user", "content": "echo this back"}],
    }

    async def race() -> list[tuple[int, str]]:
        async with httpx.AsyncClient(
            base_url=acct_gw["url"], timeout=60, headers={"authorization": f"Bearer {secret}"}
        ) as http:
            answers = await asyncio.gather(
                *(http.post("/v1/chat/completions", json=body) for _ in range(turns))
            )
            return [(a.status_code, a.text) for a in answers]

    results = asyncio.run(race())
    assert {s for s, _ in results} <= {200, 429}, results
    spent = _agree(acct_gw, key_id)
    assert spent <= limit, spent
    # each loop costs ~24,000 (its second step carries the long call and its result back, far
    # above the ~11,000 its first step's worst case is): several loops' steps were spent
    assert spent > 3 * (100 + FIRST_OUT), spent


def test_a_stream_the_client_leaves_is_charged_what_it_delivered_on_the_ledger_and_the_counter(
    acct_gw: dict[str, Any], standin: UpstreamStandin
) -> None:
    from standins import recordings
    from standins.upstream import stop_frame_index

    key_id, secret = make_key(acct_gw["url"], budgets=[{"period": "total", "usd": 1_000_000, "hard": True}])
    ex = recordings.common("openai_chat", "simple", True)[0]
    gate = Gate(timeout_s=15.0)
    standin.script(reset_mid_stream(ex, frames=max(1, stop_frame_index(ex) - 1), api=OPENAI, gate=gate))
    body = {"model": "oa", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    try:
        with httpx.stream(
            "POST",
            f"{acct_gw['url']}/v1/chat/completions",
            json=body,
            headers={"authorization": f"Bearer {secret}"},
            timeout=10,
        ) as resp:
            assert resp.status_code == 200
            rid = resp.headers["x-turnstile-request-id"]
            assert next(resp.iter_raw())  # some of the answer arrived; now the client hangs up
        row = transcript_row(acct_gw["db_path"], rid, timeout_s=5.0)
    finally:
        gate.release()
    assert row["status"] == 499
    assert row["cost_usd"] and row["cost_usd"] > 0  # the delivered part, priced
    assert _agree(acct_gw, key_id) == pytest.approx(row["cost_usd"])


def test_a_tool_loop_stream_cut_in_its_second_step_charges_both_steps_on_the_ledger_and_the_counter(
    acct_gw: dict[str, Any], standin: UpstreamStandin
) -> None:
    key_id, secret = make_key(acct_gw["url"], budgets=[{"period": "total", "usd": 1_000_000, "hard": True}])
    gate = Gate(timeout_s=15.0)
    second = tool_call_answer(OPENAI, [], stream=True, stop="stop", text="partial answer " * 20)
    standin.script(
        answering(_step, api=OPENAI),
        reset_mid_stream(second, frames=3, api=OPENAI, gate=gate),
    )
    body = {
        "model": "oa-fx",
        "max_tokens": MAX_TOKENS,
        "stream": True,
        "messages": [{"role": "user", "content": "x"}],
    }
    try:
        with httpx.stream(
            "POST",
            f"{acct_gw['url']}/v1/chat/completions",
            json=body,
            headers={"authorization": f"Bearer {secret}"},
            timeout=20,
        ) as resp:
            assert resp.status_code == 200
            rid = resp.headers["x-turnstile-request-id"]
            seen = b""
            for chunk in resp.iter_raw():
                seen += chunk
                if b"partial answer" in seen:  # step 2 is streaming: hang up
                    break
        row = transcript_row(acct_gw["db_path"], rid, timeout_s=5.0)
    finally:
        gate.release()
    assert row["status"] == 499
    step1 = 100 + FIRST_OUT
    assert row["cost_usd"] > step1  # step 1 and the part of step 2 delivered
    assert _agree(acct_gw, key_id) == pytest.approx(row["cost_usd"])


def test_a_tool_loop_that_fails_after_a_step_answered_is_charged_that_step_on_both(
    acct_gw: dict[str, Any], standin: UpstreamStandin
) -> None:
    key_id, secret = make_key(acct_gw["url"], budgets=[{"period": "total", "usd": 1_000_000, "hard": True}])
    standin.script(
        answering(_step, api=OPENAI),
        http_error(400, {"error": {"message": "bad request", "type": "invalid_request_error"}}, api=OPENAI),
    )
    client = openai.OpenAI(base_url=f"{acct_gw['url']}/v1", api_key=secret, max_retries=0, timeout=30)
    with pytest.raises(openai.APIStatusError) as err:
        client.chat.completions.create(
            model="oa-fx", max_tokens=MAX_TOKENS, messages=[{"role": "user", "content": "x"}]
        )
    row = transcript_row(acct_gw["db_path"], err.value.response.headers["x-turnstile-request-id"])
    assert row["status"] >= 400 and row["cost_usd"] == 100 + FIRST_OUT  # step 1, which answered
    assert _agree(acct_gw, key_id) == 100 + FIRST_OUT
