"""The wire matrix: client dialect {openai, anthropic, responses, gemini} x upstream API
{openai_chat, anthropic_messages, gemini, openai_responses} x {stream, non-stream}, through the
real gateway server and the recorded-traffic upstream stand-in, driven by the official SDKs.

Recordings: charmbracelet/fantasy ``TestXCommon`` cassettes (``simple``: one text answer;
``multi_tool``: parallel ``add`` + ``multiply`` calls, then the answer to their results).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from standins import recordings
from standins.drive import ADD_MULTIPLY, Turn, ask, tool_results, user
from standins.topology import KEYS, MATRIX
from standins.upstream import UpstreamStandin, replay
from standins.wirekit import RecordedCall, image_sites, recorded_calls, recorded_text, recorded_usage

DIALECTS = ["openai", "anthropic", "responses", "gemini"]
APIS = ["openai_chat", "anthropic_messages", "gemini", "openai_responses"]
MATRIX_IDS = [(d, a, s) for d in DIALECTS for a in APIS for s in (False, True)]


def _id(p: tuple[str, str, bool]) -> str:
    return f"{p[0]}-{p[1]}-{'stream' if p[2] else 'nonstream'}"


def _client(dialect: str, oai: Any, ant: Any, gem: Any = None) -> Any:
    return {"openai": oai, "responses": oai, "anthropic": ant, "gemini": gem}[dialect]


def _assert_headers(turn: Turn, deployment: str, cost: float | None) -> None:
    h = {k.lower(): v for k, v in turn.headers.items()}
    assert h.get("x-turnstile-request-id"), "x-turnstile-request-id missing"
    assert h.get("x-turnstile-deployment") == deployment
    if cost is not None:
        assert "x-turnstile-cost-usd" in h, "x-turnstile-cost-usd missing on a non-streamed answer"
        assert float(h["x-turnstile-cost-usd"]) == pytest.approx(cost, abs=1e-9)


def _assert_usage(turn: Turn, ex: recordings.Exchange, api: str) -> None:
    rec = recorded_usage(ex, api)
    if turn.dialect == "responses":  # OpenAI's convention: input tokens include cached ones
        assert turn.input_total == rec.total_input
    elif turn.dialect == "openai":
        if ex.stream:
            assert turn.usage_chunks == 1, "include_usage must add exactly one usage chunk"
            assert turn.usage_chunk_choices == [0], "the usage chunk has no choices"
        assert turn.input_total == rec.total_input
    else:
        assert turn.input_uncached == rec.input
    assert turn.output == rec.output


def _assert_calls_equal_recording(turn: Turn, rec: list[RecordedCall]) -> None:
    assert [c["name"] for c in turn.calls] == [r.name for r in rec]
    for seen, want in zip(turn.calls, rec, strict=True):
        if want.signature:
            # a Gemini thoughtSignature on the call travels inside the id the client echoes
            assert seen["id"].startswith(str(want.id)), (seen["id"], want.id)
        else:
            assert seen["id"] == want.id
        if want.raw is not None and seen["raw"] is not None:
            assert seen["raw"] == want.raw, "tool-call arguments must reach the client byte-exact"
        else:
            assert seen["args"] == want.args


@pytest.mark.parametrize("case", MATRIX_IDS, ids=_id)
def test_plain_text_answer_matches_recording(
    case: tuple[str, str, bool], upstream: UpstreamStandin, oai: Any, ant: Any, gem: Any
) -> None:
    dialect, api, stream = case
    name, model = MATRIX[api]
    ex = recordings.common(api, "simple", stream)[0]
    upstream.script(replay(ex, api=api))

    turn = ask(
        dialect,
        _client(dialect, oai, ant, gem),
        model=name,
        stream=stream,
        messages=[user(dialect, "Say hi in Portuguese")],
        system="You are a helpful assistant",
    )

    assert turn.error is None, turn.error
    assert turn.text == recorded_text(ex, api)
    assert turn.stop == "stop"
    assert turn.calls == []
    _assert_usage(turn, ex, api)
    _assert_headers(turn, name, None if stream else recorded_usage(ex, api).cost_usd)
    sent = upstream.requests()
    assert len(sent) == 1
    assert sent[0].api == api and sent[0].model == model and sent[0].stream == stream
    _assert_upstream_key(sent[0], api)


def _assert_upstream_key(sent: Any, api: str) -> None:
    """The deployment's key (from its environment variable) goes upstream in the API's own
    header; the client's key never does."""
    h = sent.headers
    if api in ("openai_chat", "openai_responses"):
        assert h.get("authorization") == f"Bearer {KEYS[api]}"
    elif api == "anthropic_messages":
        assert h.get("x-api-key") == KEYS[api]
        assert h.get("anthropic-version")
    else:
        assert KEYS[api] in (h.get("x-goog-api-key"), sent.query.get("key"))
    everything = json.dumps([h, sent.query]) + sent.raw.decode()
    assert "sk-client-key" not in everything and "sk-ant-client-key" not in everything
    assert "gemini-client-key" not in everything


@pytest.mark.parametrize("case", MATRIX_IDS, ids=_id)
def test_parallel_tool_calls_then_results_with_image(
    case: tuple[str, str, bool], upstream: UpstreamStandin, oai: Any, ant: Any, gem: Any
) -> None:
    dialect, api, stream = case
    name, _ = MATRIX[api]
    first, second = recordings.common(api, "multi_tool", stream)[:2]
    upstream.script(replay(first, api=api), replay(second, api=api))
    client = _client(dialect, oai, ant, gem)
    history = [user(dialect, "Add and multiply the number 2 and 3")]
    system = (
        "You are a helpful assistant. CRITICAL: Always use both add and multiply at the same time ALWAYS."
    )

    turn1 = ask(
        dialect, client, model=name, stream=stream, messages=history, tools=ADD_MULTIPLY, system=system
    )

    assert turn1.error is None, turn1.error
    rec_calls = recorded_calls(first, api)
    assert len(rec_calls) == 2
    _assert_calls_equal_recording(turn1, rec_calls)
    assert turn1.stop == "tool_use"
    if dialect == "openai" and stream:
        for c in turn1.calls:  # the id/name arrive once per call, on its first delta
            assert c["ids"] == [c["id"]]
    _assert_usage(turn1, first, api)
    _assert_headers(turn1, name, None if stream else recorded_usage(first, api).cost_usd)

    # follow-up turn: the client echoes the assistant turn and answers both calls; the first
    # result carries an image
    ids = [c["id"] for c in turn1.calls]
    names = {c["id"]: c["name"] for c in turn1.calls}
    history2 = [
        *history,
        *turn1.echo_items,
        *tool_results(dialect, [(ids[0], "5", True), (ids[1], "6", False)], names),
    ]
    turn2 = ask(
        dialect, client, model=name, stream=stream, messages=history2, tools=ADD_MULTIPLY, system=system
    )

    assert turn2.error is None, turn2.error
    assert turn2.text == recorded_text(second, api)
    assert turn2.stop == "stop"
    sent = upstream.requests()
    assert len(sent) == 2
    _assert_follow_up_upstream(api, sent[1].body, rec_calls, dialect)


def _assert_follow_up_upstream(api: str, body: dict[str, Any], rec: list[RecordedCall], dialect: str) -> None:
    """The second upstream request carries both calls with their original ids (and a Gemini
    signature byte-identical), both results in call order, and the image as an image.
    Arguments an OpenAI client echoes as a string go upstream byte-exact; an Anthropic client
    echoes an object, so only its value is compared."""
    as_image, as_text = image_sites(body)
    assert as_image, "the tool result's image did not reach the upstream as an image"
    assert not as_text, f"image base64 inlined as text at {as_text}"
    if api == "openai_chat":
        msgs = body["messages"]
        assistant = next(m for m in msgs if m["role"] == "assistant")
        assert [tc["id"] for tc in assistant["tool_calls"]] == [r.id for r in rec]
        sent_args = [tc["function"]["arguments"] for tc in assistant["tool_calls"]]
        if dialect in ("openai", "responses"):
            assert sent_args == [r.raw for r in rec]
        else:
            assert [json.loads(a) for a in sent_args] == [r.args for r in rec]
        tools = [m for m in msgs if m["role"] == "tool"]
        assert [m["tool_call_id"] for m in tools] == [r.id for r in rec]
        i = msgs.index(tools[-1])
        assert all(m["role"] == "tool" for m in msgs[msgs.index(tools[0]) : i + 1]), (
            "tool messages not adjacent"
        )
    elif api == "openai_responses":
        _assert_responses_follow_up(body, rec, dialect)
    elif api == "anthropic_messages":
        msgs = body["messages"]
        a = next(i for i, m in enumerate(msgs) if m["role"] == "assistant")
        uses = [b for b in msgs[a]["content"] if b["type"] == "tool_use"]
        assert [(b["id"], b["name"], b["input"]) for b in uses] == [(r.id, r.name, r.args) for r in rec]
        results = msgs[a + 1]["content"]
        kinds = [b["type"] for b in results]
        assert kinds[: len(rec)] == ["tool_result"] * len(rec), f"tool_result blocks must come first: {kinds}"
        assert [b["tool_use_id"] for b in results[: len(rec)]] == [r.id for r in rec]
        first_content = results[0]["content"]
        assert isinstance(first_content, list)
        assert [b["type"] for b in first_content] == ["text", "image"]
    else:
        contents = body["contents"]
        m = next(i for i, c in enumerate(contents) if c["role"] == "model")
        fcs = [p for p in contents[m]["parts"] if "functionCall" in p]
        assert [p["functionCall"]["name"] for p in fcs] == [r.name for r in rec]
        assert [p["functionCall"].get("args") for p in fcs] == [r.args for r in rec]
        for p, r in zip(fcs, rec, strict=True):
            if r.id is not None and "id" in p["functionCall"]:
                assert p["functionCall"]["id"] == r.id
        signed = [r.signature for r in rec if r.signature]
        sent_sigs = [p.get("thoughtSignature") for p in contents[m]["parts"] if p.get("thoughtSignature")]
        assert sent_sigs == signed, "thoughtSignature must go back byte-identical"
        responses = [
            p["functionResponse"] for c in contents[m + 1 :] for p in c["parts"] if "functionResponse" in p
        ]
        assert [r["name"] for r in responses] == [r.name for r in rec]


def _assert_responses_follow_up(body: dict[str, Any], rec: list[RecordedCall], dialect: str) -> None:
    """Responses input: both ``function_call`` items with their call ids, then one
    ``function_call_output`` each in call order, adjacent; the image result as a list output."""
    items = body["input"]
    calls = [it for it in items if it.get("type") == "function_call"]
    assert [c["call_id"] for c in calls] == [r.id for r in rec]
    if dialect == "openai":
        assert [c["arguments"] for c in calls] == [r.raw for r in rec]
    else:
        assert [json.loads(c["arguments"]) for c in calls] == [r.args for r in rec]
    outputs = [i for i, it in enumerate(items) if it.get("type") == "function_call_output"]
    assert [items[i]["call_id"] for i in outputs] == [r.id for r in rec]
    assert outputs == list(range(outputs[0], outputs[0] + len(rec))), "outputs not adjacent"
    first = items[outputs[0]]["output"]
    assert isinstance(first, list) and [p["type"] for p in first] == ["input_text", "input_image"]
    assert body["store"] is False


VERCEL_GOOGLE = "vercel-ai/packages/google/src/__fixtures__"
VERCEL_OPENAI_RESPONSES = "vercel-ai/packages/openai/src/responses/__fixtures__"
ENVOY_TOOLS = "envoy-ai-gateway/tests/internal/testopenai/cassettes/chat-parallel-tools.yaml"
OTHER_RECORDINGS = {
    # vercel/ai google-text fixtures: Gemini 3 text answer with a thoughtSignature, thoughts in usage
    "vercel-gemini-text-stream": (
        "gemini",
        lambda: recordings.vercel_chunks(f"{VERCEL_GOOGLE}/google-text.chunks.txt", "gemini"),
    ),
    "vercel-gemini-text-json": (
        "gemini",
        lambda: recordings.vercel_json(f"{VERCEL_GOOGLE}/google-text.json"),
    ),
    # envoyproxy/ai-gateway chat-parallel-tools: gpt-5-nano tool call, 192 reasoning tokens
    "envoy-openai-tools-json": (
        "openai_chat",
        lambda: recordings.govcr(ENVOY_TOOLS)[0],
    ),
    # vercel/ai openai-reasoning-encrypted-content: gpt-5.1-codex-max, a reasoning item with
    # encrypted_content then the answer, 128 reasoning tokens (a Responses upstream)
    "vercel-responses-reasoning-json": (
        "openai_responses",
        lambda: recordings.vercel_json(
            f"{VERCEL_OPENAI_RESPONSES}/openai-reasoning-encrypted-content.1.json"
        ),
    ),
    # fantasy TestOpenAIResponsesWithSummaryThinking gpt-5: reasoning summary + weather call
    "fantasy-responses-thinking-stream": ("openai_responses", lambda: recordings.responses_thinking(True)[0]),
    "fantasy-responses-thinking-json": ("openai_responses", lambda: recordings.responses_thinking(False)[0]),
    # anthropic-sdk-python basic_response.txt: "Hello there!"
    "anthropic-sdk-basic-stream": ("anthropic_messages", recordings.anthropic_basic_sse),
}
WEATHER_TOOL = [
    {
        "name": "get_current_weather",
        "description": "Get the current weather in a given location",
        "parameters": {
            "type": "object",
            "required": ["location"],
            "properties": {
                "location": {"type": "string"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            },
        },
    }
]


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("recording", sorted(OTHER_RECORDINGS))
def test_other_recorded_answers_reach_both_dialects(
    dialect: str, recording: str, upstream: UpstreamStandin, oai: Any, ant: Any, gem: Any
) -> None:
    api, load = OTHER_RECORDINGS[recording]
    ex = load()
    name, _ = MATRIX[api]
    upstream.script(replay(ex, api=api))
    turn = ask(
        dialect,
        _client(dialect, oai, ant, gem),
        model=name,
        stream=ex.stream,
        messages=[user(dialect, "What is the weather like in San Francisco?")],
        tools=WEATHER_TOOL,
    )
    assert turn.error is None, turn.error
    assert turn.text == recorded_text(ex, api)
    _assert_calls_equal_recording(turn, recorded_calls(ex, api))
    _assert_usage(turn, ex, api)
    _assert_headers(turn, name, None if ex.stream else recorded_usage(ex, api).cost_usd)
