"""In-process micro benchmarks of the hot path (pytest-benchmark).

Run: ``uv run pytest bench/micro`` (not collected by the normal test run: testpaths is tests/).
Targets from issue 4: a guard check on a 200-turn conversation within 2 ms.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import orjson
import pytest

from bench.bodies import anthropic_response, openai_response, request_bodies, tool_conversation
from gateway import invariants
from gateway.config import Deployment, GatewayConfig, GuardPolicy, Settings
from gateway.deployments import DeploymentTable
from gateway.edges import anthropic_messages as anthropic_edge
from gateway.edges import openai_chat as openai_edge
from gateway.providers import anthropic_messages as anthropic_wire
from gateway.providers import openai_chat as openai_wire
from gateway.transcript import TranscriptWriter, TurnRecord

OPENAI_DEP = Deployment(name="oa", api="openai_chat", model="gpt-4o-mini", base_url="http://127.0.0.1:1/v1")
ANTHROPIC_DEP = Deployment(
    name="an", api="anthropic_messages", model="claude-sonnet-4-5", base_url="http://127.0.0.1:1"
)


def _conversation_body(turns: int) -> bytes:
    return orjson.dumps({"model": "m", "messages": tool_conversation(turns), "max_tokens": 256})


# ---------------------------------------------------------------------------- guards


def test_guard_check_200_turn_conversation(benchmark: Any) -> None:
    request = openai_edge.parse_request(_conversation_body(200))
    assert len(request.messages) == 402
    outcome = benchmark(invariants.check_request, request, GuardPolicy())
    assert not outcome.repairs


# ---------------------------------------------------------------------------- client dialects


@pytest.mark.parametrize("case", ["openai", "tools-40"])
def test_openai_edge_parse(benchmark: Any, case: str) -> None:
    body = request_bodies()[case][1]
    benchmark(openai_edge.parse_request, body)


def test_anthropic_edge_parse(benchmark: Any) -> None:
    body = request_bodies()["anthropic"][1]
    benchmark(anthropic_edge.parse_request, body)


def test_openai_edge_render(benchmark: Any) -> None:
    request = openai_edge.parse_request(request_bodies()["openai"][1])
    _up, ctx = openai_wire.build_request(request, OPENAI_DEP, None)
    response = openai_wire.parse_response(openai_response(), ctx)
    benchmark(lambda: orjson.dumps(openai_edge.render_response(response, request)))


def test_anthropic_edge_render(benchmark: Any) -> None:
    request = anthropic_edge.parse_request(request_bodies()["anthropic"][1])
    _up, ctx = anthropic_wire.build_request(request, ANTHROPIC_DEP, None)
    response = anthropic_wire.parse_response(anthropic_response(), ctx)
    benchmark(lambda: orjson.dumps(anthropic_edge.render_response(response, request)))


# ---------------------------------------------------------------------------- upstream wire APIs


@pytest.mark.parametrize("case", ["openai", "tools-40"])
def test_openai_wire_build_and_parse(benchmark: Any, case: str) -> None:
    request = openai_edge.parse_request(request_bodies()[case][1])
    answer = openai_response()

    def roundtrip() -> Any:
        _up, ctx = openai_wire.build_request(request, OPENAI_DEP, "key")
        return openai_wire.parse_response(answer, ctx)

    benchmark(roundtrip)


def test_anthropic_wire_build_and_parse(benchmark: Any) -> None:
    request = openai_edge.parse_request(request_bodies()["openai"][1])  # cross-dialect
    answer = anthropic_response()

    def roundtrip() -> Any:
        _up, ctx = anthropic_wire.build_request(request, ANTHROPIC_DEP, "key")
        return anthropic_wire.parse_response(answer, ctx)

    benchmark(roundtrip)


# ---------------------------------------------------------------------------- routing, tokens


def test_routing_alias_resolution(benchmark: Any) -> None:
    config = GatewayConfig.model_validate(
        {
            "deployments": [OPENAI_DEP.model_dump(), ANTHROPIC_DEP.model_dump()],
            "models": [{"name": "default", "deployments": ["an", "oa"]}],
        }
    )
    table = DeploymentTable.build(config, Settings(), resolve_prices=False)
    deps = benchmark(table.candidates, "default")
    assert [d.name for d in deps] == ["an", "oa"]


def test_token_estimate(benchmark: Any) -> None:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    from gateway.providers.catalog import count_tokens

    request = openai_edge.parse_request(request_bodies()["tools-40"][1])
    count_tokens(request, "gpt-4o-mini")  # load the tokenizer outside the timing
    assert benchmark(count_tokens, request, "gpt-4o-mini") > 0


# ---------------------------------------------------------------------------- transcript


def _record(i: int) -> TurnRecord:
    request = openai_edge.parse_request(request_bodies()["openai"][1])
    return TurnRecord(
        request_id=f"r{i}",
        ts=0.0,
        client_dialect="openai_chat",
        requested_model="m",
        stream=False,
        status=200,
        request=request.model_dump(mode="json", exclude_none=True),
    )


def test_transcript_append(benchmark: Any, tmp_path: Path) -> None:
    """Queueing one turn (what the request path pays); the batched write happens off it."""
    loop = asyncio.new_event_loop()
    writer = TranscriptWriter(tmp_path / "t.db", maxsize=1_000_000)
    loop.run_until_complete(writer.start())
    records = iter([_record(i) for i in range(200_000)])
    try:
        benchmark.pedantic(
            lambda: loop.run_until_complete(writer.append(next(records))), rounds=2000, iterations=1
        )
        loop.run_until_complete(writer.close())
    finally:
        loop.close()


def test_transcript_row_serialisation(benchmark: Any) -> None:
    """What the background writer does per turn before the SQLite insert."""
    rec = _record(0)
    benchmark(rec.row)
