"""The handed cases (``tests/fixtures/cases/handed.jsonl``) end to end: the case's client
request goes through the official SDK to the real gateway; the case's ``upstream_stream`` /
``upstream_response`` is the upstream stand-in's scripted answer; each test asserts the rules
of the case's ``expected`` text. Where a case allows two behaviours (repair or reject), either
passes as long as its rule holds. Several cases are also tried with a sibling input of the same
kind (the other dialect, the other stream mode, a disagreeing duplicate)."""

from __future__ import annotations

import contextlib
import copy
import json
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest
from standins import recordings
from standins.drive import Turn, send
from standins.topology import AUTO_A_FIRST, AUTO_B_FIRST, C16_MODELS
from standins.upstream import UpstreamStandin, http_error, replay
from standins.wirekit import PNG_B64, image_sites, transcript_row, walk

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

ANTHROPIC_OK = recordings.common("anthropic_messages", "simple", False)[0]
OPENAI_OK = recordings.common("openai_chat", "simple", False)[0]
GEMINI_OK = recordings.common("gemini", "simple", False)[0]


def case(case_id: str) -> dict[str, Any]:
    return copy.deepcopy(recordings.handed_case(case_id))


def _client(dialect: str, oai: Any, ant: Any) -> Any:
    return oai if dialect == "openai" else ant


def _dialect(client_api: str) -> str:
    return "openai" if client_api == "openai_chat" else "anthropic"


def _error_of(exc: Any) -> dict[str, Any]:
    body = exc.response.json()
    return dict(body["error"])


def _headers(turn: Turn) -> dict[str, str]:
    return {k.lower(): v for k, v in turn.headers.items()}


def _rejected(dialect: str, oai: Any, ant: Any, request: dict[str, Any]) -> Any:
    sdk = openai if dialect == "openai" else anthropic
    with pytest.raises(sdk.BadRequestError) as exc:
        send(dialect, _client(dialect, oai, ant), request)
    return exc.value


# ------------------------------------------------------------------------------ C01 C02 C22


def test_C01_orphan_tool_call_is_rejected_naming_call_2_with_zero_upstream(
    upstream: UpstreamStandin, oai: Any, ant: Any
) -> None:
    req = case("C01")["input"]["request"]
    err = _rejected("openai", oai, ant, req)
    assert err.status_code == 400
    body = _error_of(err)
    assert body["type"] == "invalid_request_error"
    assert "call_2" in body["message"]
    assert "messages[1].tool_calls[1]" in body["message"]
    assert upstream.received == [], "no upstream request for a rejected history"

    again = _rejected("openai", oai, ant, req)
    assert _error_of(again) == body, "the same error on retry"
    assert upstream.received == []


def test_C01_kind_orphan_call_from_anthropic_client_is_rejected(
    upstream: UpstreamStandin, oai: Any, ant: Any
) -> None:
    req = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 256,
        "messages": [
            {"role": "user", "content": "Show me the folder contents and the working directory."},
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {"cmd": "ls"}},
                    {"type": "tool_use", "id": "toolu_2", "name": "bash", "input": {"cmd": "pwd"}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "README.md"},
                    {"type": "text", "text": "Are you still there?"},
                ],
            },
        ],
    }
    err = _rejected("anthropic", oai, ant, req)
    body = _error_of(err)
    assert body["type"] == "invalid_request_error"
    assert "toolu_2" in body["message"] and "messages[1]" in body["message"]
    assert upstream.received == []


def test_C02_orphan_tool_result_is_rejected_naming_toolu_old7(
    upstream: UpstreamStandin, oai: Any, ant: Any
) -> None:
    req = case("C02")["input"]["request"]
    err = _rejected("openai", oai, ant, req)
    body = _error_of(err)
    assert err.status_code == 400 and body["type"] == "invalid_request_error"
    assert "toolu_old7" in body["message"]
    assert "messages[1]" in body["message"]
    assert upstream.received == []


def test_C22_regenerated_ids_name_both_problems_with_zero_upstream(
    upstream: UpstreamStandin, oai: Any, ant: Any
) -> None:
    req = case("C22")["input"]["request"]
    err = _rejected("openai", oai, ant, req)
    body = _error_of(err)
    assert err.status_code == 400
    assert "call_b9" in body["message"], "the result without a call is named"
    assert "call_a7" in body["message"], "the call without a result is named"
    assert upstream.received == []


# ------------------------------------------------------------------------------ C04 C05 C07


def test_C04_text_before_tool_result_is_reordered_or_rejected(
    upstream: UpstreamStandin, oai: Any, ant: Any
) -> None:
    req = case("C04")["input"]["request"]
    upstream.script(replay(ANTHROPIC_OK, api="anthropic_messages"))
    try:
        turn = send("anthropic", ant, req)
    except anthropic.BadRequestError as err:
        assert "messages[2]" in _error_of(err)["message"]
        assert upstream.received == []
        return
    assert turn.text
    (sent,) = upstream.requests()
    msgs = sent.body["messages"]
    assert [b["type"] for b in msgs[2]["content"]] == ["tool_result", "text"]
    assert msgs[2]["content"][0]["tool_use_id"] == "toolu_l1"
    assert msgs[2]["content"][1]["text"] == "Here is the listing:"


def _c05_body(sent_body: dict[str, Any]) -> tuple[int, int]:
    uses = sum(
        1
        for _, v in walk(sent_body)
        if isinstance(v, dict) and v.get("type") == "tool_use" and v.get("id") == "toolu_d1"
    )
    results = sum(
        1
        for _, v in walk(sent_body)
        if isinstance(v, dict) and v.get("type") == "tool_result" and v.get("tool_use_id") == "toolu_d1"
    )
    return uses, results


def test_C05_same_call_twice_is_collapsed_into_one(upstream: UpstreamStandin, oai: Any, ant: Any) -> None:
    req = case("C05")["input"]["request"]
    upstream.script(replay(ANTHROPIC_OK, api="anthropic_messages"))
    turn = send("openai", oai, req)
    assert turn.text
    (sent,) = upstream.requests()
    assert _c05_body(sent.body) == (1, 1), "exactly one tool_use and one tool_result for toolu_d1"


def test_C05_kind_disagreeing_duplicate_is_rejected_naming_the_id(
    upstream: UpstreamStandin, oai: Any, ant: Any
) -> None:
    req = case("C05")["input"]["request"]
    req["messages"][1]["tool_calls"][0]["function"]["arguments"] = '{"dir":"/etc"}'
    err = _rejected("openai", oai, ant, req)
    body = _error_of(err)
    assert "toolu_d1" in body["message"]
    msg = body["message"].lower()
    assert any(w in msg for w in ("duplicate", "two different", "more than once", "twice")), msg
    assert upstream.received == []


@pytest.mark.parametrize("step", [0, 1], ids=["A_anthropic_replay", "B_openai_empty_content"])
def test_C07_empty_text_next_to_tool_call_is_not_sent(
    step: int, upstream: UpstreamStandin, oai: Any, ant: Any
) -> None:
    st = case("C07")["input"]["steps"][step]
    upstream.script(replay(ANTHROPIC_OK, api="anthropic_messages"))
    turn = send(_dialect(st["client_api"]), _client(_dialect(st["client_api"]), oai, ant), st["request"])
    assert turn.text, "pairing is unaffected and the request succeeds"
    (sent,) = upstream.requests()
    assistant = sent.body["messages"][1]
    assert assistant["role"] == "assistant"
    assert [b["type"] for b in assistant["content"]] == ["tool_use"]
    assert assistant["content"][0]["id"] == ("toolu_e1" if step == 0 else "call_e2")
    assert not any(
        isinstance(v, dict) and v.get("type") == "text" and not str(v.get("text", "")).strip()
        for _, v in walk(sent.body)
    ), "no empty or whitespace text block anywhere"


# ------------------------------------------------------------------------------ C08 C09 images


def test_C08_tool_result_image_reaches_anthropic_as_image_block(
    upstream: UpstreamStandin, oai: Any, ant: Any
) -> None:
    req = case("C08")["input"]["request"]
    upstream.script(replay(ANTHROPIC_OK, api="anthropic_messages"))
    send("openai", oai, req)
    (sent,) = upstream.requests()
    result = next(
        b
        for m in sent.body["messages"]
        if isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") == "tool_result"
    )
    assert result["tool_use_id"] == "call_s1"
    assert isinstance(result["content"], list), "content must be an array, never a string"
    assert result["content"] == [
        {"type": "text", "text": "Screenshot captured."},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG_B64}},
    ]
    as_image, as_text = image_sites(sent.body)
    assert as_image and not as_text


def test_C09_tool_result_image_reaches_openai_compatible_server_as_image(
    upstream: UpstreamStandin, oai: Any, ant: Any
) -> None:
    req = case("C09")["input"]["request"]
    upstream.script(replay(OPENAI_OK, api="openai_chat"))
    send("anthropic", ant, req)
    (sent,) = upstream.requests()
    msgs = sent.body["messages"]
    t = next(i for i, m in enumerate(msgs) if m["role"] == "tool")
    assert msgs[t]["tool_call_id"] == "toolu_i1"
    url = f"data:image/png;base64,{PNG_B64}"
    tool_content = msgs[t]["content"]
    in_tool = (
        isinstance(tool_content, list) and {"type": "image_url", "image_url": {"url": url}} in tool_content
    )
    if in_tool:  # (a) image parts in the tool message
        assert {"type": "text", "text": "Image loaded."} in tool_content
    else:  # (b) the text in the tool message, the image in the user message right after it
        text = (
            tool_content
            if isinstance(tool_content, str)
            else "".join(p.get("text", "") for p in tool_content)
        )
        assert "Image loaded." in text
        nxt = msgs[t + 1]
        assert nxt["role"] == "user"
        assert any(p.get("type") == "image_url" and p["image_url"]["url"] == url for p in nxt["content"])
    as_image, as_text = image_sites(sent.body)
    assert as_image and not as_text, "never inline base64 as text"


# ------------------------------------------------------------------------------ C10 C12 C13 C15 streams


def test_C10_anthropic_stream_to_openai_chunks_indexes_tool_calls_from_zero(
    upstream: UpstreamStandin, oai: Any, ant: Any
) -> None:
    inp = case("C10")["input"]
    upstream.script(
        replay(
            recordings.stream_exchange("anthropic_messages", inp["upstream_stream"]), api="anthropic_messages"
        )
    )
    turn = send("openai", oai, inp["request"])
    assert turn.error is None, turn.error
    chunks = turn.raw.chunks
    assert turn.text == "Checking both hosts."
    deltas = [
        (
            tc.index,
            tc.id,
            tc.function.name if tc.function else None,
            tc.function.arguments if tc.function else None,
        )
        for ch in chunks
        for c in ch.choices
        for tc in (c.delta.tool_calls or [])
    ]
    indexes = [d[0] for d in deltas]
    assert indexes == sorted(indexes) and set(indexes) == {0, 1}, "index 0 fragments, then index 1 fragments"
    first0 = next(d for d in deltas if d[0] == 0)
    first1 = next(d for d in deltas if d[0] == 1)
    assert (first0[1], first0[2]) == ("toolu_s1", "ping")
    assert (first1[1], first1[2]) == ("toolu_s2", "ping")
    assert [(c["id"], c["name"], c["raw"]) for c in turn.calls] == [
        ("toolu_s1", "ping", '{"host":"a.example"}'),
        ("toolu_s2", "ping", '{"host":"b.example"}'),
    ]
    finishes = [c.finish_reason for ch in chunks for c in ch.choices if c.finish_reason]
    assert finishes == ["tool_calls"]
    last_choice_chunk = [ch for ch in chunks if ch.choices][-1]
    assert last_choice_chunk.choices[0].finish_reason == "tool_calls"


def test_C12_openai_delta_with_text_and_tool_start_gives_both_blocks(
    upstream: UpstreamStandin, oai: Any, ant: Any
) -> None:
    inp = case("C12")["input"]
    upstream.script(
        replay(recordings.stream_exchange("openai_chat", inp["upstream_stream"]), api="openai_chat")
    )
    turn = send("anthropic", ant, inp["request"])
    assert turn.error is None, turn.error
    evs = [e.model_dump() for e in turn.raw.events]
    kinds = [(e["type"], e.get("index")) for e in evs if e["type"].startswith("content_block")]
    starts = [e for e in evs if e["type"] == "content_block_start"]
    assert [(s["index"], s["content_block"]["type"]) for s in starts] == [(0, "text"), (1, "tool_use")]
    assert starts[1]["content_block"]["id"] == "call_m1" and starts[1]["content_block"]["name"] == "run"
    text = "".join(
        e["delta"]["text"]
        for e in evs
        if e["type"] == "content_block_delta" and e["delta"]["type"] == "text_delta" and e["index"] == 0
    )
    assert text == "Initialising the project: "
    assert kinds.index(("content_block_stop", 0)) < kinds.index(("content_block_start", 1)), (
        "text block closes first"
    )
    partial = [
        e for e in evs if e["type"] == "content_block_delta" and e["delta"]["type"] == "input_json_delta"
    ]
    assert {e["index"] for e in partial} == {1}
    assert "".join(e["delta"]["partial_json"] for e in partial) == '{"cmd":"make init"}'
    assert ("content_block_stop", 1) in kinds
    assert turn.raw_stop == "tool_use"


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "nonstream"])
def test_C13_whole_gemini_function_call_in_one_chunk(
    stream: bool, upstream: UpstreamStandin, oai: Any, ant: Any
) -> None:
    inp = case("C13")["input"]
    chunk = inp["upstream_stream"][0]
    ex = recordings.stream_exchange("gemini", [chunk]) if stream else recordings.json_exchange(chunk)
    upstream.script(replay(ex, api="gemini"))
    req = {**inp["request"], "stream": stream}
    turn = send("anthropic", ant, req)
    assert turn.error is None, turn.error
    assert [(c["name"], c["args"]) for c in turn.calls] == [("add_numbers", {"a": 17, "b": 25})]
    assert turn.raw_stop == "tool_use"
    if stream:
        evs = [e.model_dump() for e in turn.raw.events]
        start = next(
            e for e in evs if e["type"] == "content_block_start" and e["content_block"]["type"] == "tool_use"
        )
        assert start["content_block"]["input"] == {}
        partial = [
            e for e in evs if e["type"] == "content_block_delta" and e["delta"]["type"] == "input_json_delta"
        ]
        assert partial, "at least one input_json_delta"
        assert json.loads("".join(e["delta"]["partial_json"] for e in partial)) == {"a": 17, "b": 25}
        assert any(e["type"] == "content_block_stop" and e["index"] == start["index"] for e in evs)


def test_C13_stream_equals_non_stream_for_same_request(upstream: UpstreamStandin, oai: Any, ant: Any) -> None:
    inp = case("C13")["input"]
    chunk = inp["upstream_stream"][0]
    upstream.script(
        replay(recordings.stream_exchange("gemini", [chunk]), api="gemini"),
        replay(recordings.json_exchange(chunk), api="gemini"),
    )
    streamed = send("anthropic", ant, {**inp["request"], "stream": True})
    whole = send("anthropic", ant, {**inp["request"], "stream": False})
    assert [(c["name"], c["args"]) for c in streamed.calls] == [(c["name"], c["args"]) for c in whole.calls]
    assert streamed.text == whole.text
    assert streamed.raw_stop == whole.raw_stop == "tool_use"
    assert streamed.output == whole.output and streamed.input_uncached == whole.input_uncached


def _raw_openai_stream(oai: Any, request: dict[str, Any]) -> list[str]:
    return _raw_openai_stream_with_headers(oai, request)[1]


def _raw_openai_stream_with_headers(oai: Any, request: dict[str, Any]) -> tuple[dict[str, str], list[str]]:
    """The ``data:`` lines of a streamed answer exactly as sent (the SDK's raw stream)."""
    with oai.chat.completions.with_streaming_response.create(**request) as resp:
        return dict(resp.headers), [line for line in resp.iter_lines() if line.startswith("data:")]


def test_C15_usage_chunk_is_last_with_no_choices_then_done(
    upstream: UpstreamStandin, oai: Any, ant: Any
) -> None:
    inp = case("C15")["input"]
    upstream.script(
        replay(
            recordings.stream_exchange("anthropic_messages", inp["upstream_stream"]), api="anthropic_messages"
        )
    )
    lines = _raw_openai_stream(oai, inp["request"])
    assert lines[-1] == "data: [DONE]"
    chunks = [json.loads(line[5:]) for line in lines[:-1]]
    with_usage = [c for c in chunks if c.get("usage") is not None]
    assert len(with_usage) == 1 and with_usage[0] is chunks[-1], "only the last chunk carries usage"
    assert chunks[-1]["choices"] == []
    u = chunks[-1]["usage"]
    assert (u["prompt_tokens"], u["completion_tokens"], u["total_tokens"]) == (12, 4, 16)
    finishes = [
        c["choices"][0]["finish_reason"]
        for c in chunks
        if c["choices"] and c["choices"][0].get("finish_reason")
    ]
    assert finishes == ["stop"]
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    assert text == "Hello there."


def test_C15_without_include_usage_no_usage_chunk(upstream: UpstreamStandin, oai: Any, ant: Any) -> None:
    inp = case("C15")["input"]
    upstream.script(
        replay(
            recordings.stream_exchange("anthropic_messages", inp["upstream_stream"]), api="anthropic_messages"
        )
    )
    req = {k: v for k, v in inp["request"].items() if k != "stream_options"}
    lines = _raw_openai_stream(oai, req)
    assert lines[-1] == "data: [DONE]"
    chunks = [json.loads(line[5:]) for line in lines[:-1]]
    assert all(c.get("usage") is None for c in chunks)
    assert all(c["choices"] for c in chunks), "no choices-less usage chunk"


# ------------------------------------------------------------------------------ C16 C17 signatures


def _c16_turn1_answer(model: str) -> recordings.Exchange:
    resp = case("C16")["input"]["steps"][0]["upstream_response"]
    body = {
        "id": "msg_c16_turn1",
        "type": "message",
        "model": model,
        "stop_sequence": None,
        "usage": {"input_tokens": 40, "output_tokens": 30},
        **resp,
    }
    return recordings.json_exchange(body)


def _c16_turn1(ant: Any, upstream: UpstreamStandin) -> tuple[dict[str, Any], Turn]:
    steps = case("C16")["input"]["steps"]
    upstream.script(replay(_c16_turn1_answer(C16_MODELS["model-A"]), model=C16_MODELS["model-A"]))
    req1 = {**steps[0]["request"], "model": AUTO_A_FIRST}
    turn1 = send("anthropic", ant, req1)
    assert _headers(turn1)["x-turnstile-deployment"] == "model-A"
    assert turn1.thinking and turn1.thinking[0]["thinking"] == "Need the price tool."
    return req1, turn1


def _turn2_request(req1: dict[str, Any], turn1: Turn, model: str) -> dict[str, Any]:
    return {
        **req1,
        "model": model,
        "messages": [
            *req1["messages"],
            turn1.echo,
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_k1", "content": "9.99"}],
            },
        ],
    }


def test_C16_open_tool_loop_stays_on_the_model_that_signed(
    upstream: UpstreamStandin, oai: Any, ant: Any
) -> None:
    req1, turn1 = _c16_turn1(ant, upstream)
    upstream.script(replay(ANTHROPIC_OK, api="anthropic_messages"))
    turn2 = send("anthropic", ant, _turn2_request(req1, turn1, AUTO_B_FIRST))  # routing would pick model-B
    assert turn2.text
    sent = upstream.requests()[1]
    assert sent.model == C16_MODELS["model-A"], "turn 2 goes to model-A, which signed the thinking"
    assert _headers(turn2)["x-turnstile-deployment"] == "model-A"
    thinking = [b for b in sent.body["messages"][1]["content"] if b["type"] == "thinking"]
    assert thinking == [{"type": "thinking", "thinking": "Need the price tool.", "signature": "SIG_A_opaque"}]


def test_C16_switch_to_other_model_strips_signed_thinking(
    upstream: UpstreamStandin, oai: Any, ant: Any
) -> None:
    req1, turn1 = _c16_turn1(ant, upstream)
    upstream.script(
        http_error(429, recordings.anthropic_rate_limited(), model=C16_MODELS["model-A"], retry_after="5"),
        replay(ANTHROPIC_OK, model=C16_MODELS["model-B"]),
    )
    try:
        turn2 = send("anthropic", ant, _turn2_request(req1, turn1, AUTO_A_FIRST))
    except anthropic.APIStatusError as err:  # allowed: a clear error that the model cannot change mid loop
        assert "model" in _error_of(err)["message"].lower()
        assert not any(
            "SIG_A_opaque" in r.raw.decode() for r in upstream.requests(model=C16_MODELS["model-B"])
        )
        return
    assert turn2.text
    to_b = upstream.requests(model=C16_MODELS["model-B"])
    assert len(to_b) == 1
    raw = to_b[0].raw.decode()
    assert "SIG_A_opaque" not in raw, "SIG_A_opaque is never sent to model-B"
    assert not any(
        isinstance(v, dict) and v.get("type") in ("thinking", "redacted_thinking")
        for _, v in walk(to_b[0].body)
    )
    assert (to_b[0].body.get("thinking") or {}).get("type", "disabled") == "disabled", (
        "thinking is disabled for a continuation whose signed thinking was removed"
    )


def test_C16_raw_signature_from_client_never_reaches_model_B(
    upstream: UpstreamStandin, oai: Any, ant: Any
) -> None:
    """The case's literal turn-2 request (the client sends SIG_A_opaque as it is)."""
    req2 = {**case("C16")["input"]["steps"][1]["request"], "model": AUTO_B_FIRST}
    upstream.script(replay(ANTHROPIC_OK, api="anthropic_messages"))
    with contextlib.suppress(anthropic.APIStatusError):  # a clear refusal is allowed
        send("anthropic", ant, req2)
    for r in upstream.requests(model=C16_MODELS["model-B"]):
        assert "SIG_A_opaque" not in r.raw.decode(), "SIG_A_opaque is never sent to model-B"


@pytest.mark.parametrize("stream", [False, True], ids=["nonstream", "stream"])
def test_C17_gemini_thought_signature_survives_the_client_round_trip(
    stream: bool, upstream: UpstreamStandin, oai: Any, ant: Any
) -> None:
    steps = case("C17")["input"]["steps"]
    answer = steps[0]["upstream_response"]
    ex = recordings.stream_exchange("gemini", [answer]) if stream else recordings.json_exchange(answer)
    upstream.script(replay(ex, api="gemini"), replay(GEMINI_OK, api="gemini"))
    req1 = {**steps[0]["request"], "stream": stream}
    turn1 = send("anthropic", ant, req1)
    assert turn1.error is None, turn1.error
    assert [(c["name"], c["args"]) for c in turn1.calls] == [("shell", {"command": "ls"})]
    call_id = turn1.calls[0]["id"]
    req2 = {
        **steps[0]["request"],
        "messages": [
            *req1["messages"],
            turn1.echo,
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": call_id, "content": "a.txt"}],
            },
        ],
    }
    send("anthropic", ant, req2)

    body = upstream.requests()[1].body
    contents = body["contents"]
    m = next(i for i, c in enumerate(contents) if c["role"] == "model")
    parts = contents[m]["parts"]
    fcs = [p for p in parts if "functionCall" in p]
    assert [(p["functionCall"]["name"], p["functionCall"].get("args")) for p in fcs] == [
        ("shell", {"command": "ls"})
    ]
    sig_parts = [p for p in parts if p.get("thoughtSignature") == "SIG_G1_opaque"]
    assert sig_parts, "SIG_G1_opaque must go back byte-identical"
    assert sig_parts[0] is parts[0] or "functionCall" in sig_parts[0], (
        "on the part that carried it or on the first functionCall part"
    )
    after = [p["functionResponse"] for c in contents[m + 1 :] for p in c["parts"] if "functionResponse" in p]
    assert len(after) == 1 and after[0]["name"] == "shell"
    assert "a.txt" in json.dumps(after[0]["response"])


# ------------------------------------------------------------------------------ C19 order


def test_C19_results_in_completion_order_reach_gemini_in_call_order(
    upstream: UpstreamStandin, oai: Any, ant: Any
) -> None:
    req = case("C19")["input"]["request"]
    upstream.script(replay(GEMINI_OK, api="gemini"))
    try:
        send("anthropic", ant, req)
    except anthropic.BadRequestError as err:  # allowed alternative: reject naming the out-of-order results
        msg = _error_of(err)["message"]
        assert "toolu_r2" in msg or "toolu_r1" in msg
        assert upstream.received == []
        return
    (sent,) = upstream.requests()
    contents = sent.body["contents"]
    m = next(i for i, c in enumerate(contents) if c["role"] == "model")
    fcs = [p["functionCall"] for p in contents[m]["parts"] if "functionCall" in p]
    assert [(f["name"], f["args"]["path"]) for f in fcs] == [
        ("read_file", "a.txt"),
        ("read_file", "b.txt"),
        ("read_file", "c.txt"),
    ]
    answer_turns = [c for c in contents[m + 1 :] if any("functionResponse" in p for p in c["parts"])]
    assert len(answer_turns) == 1, "one user turn with the function responses"
    frs = [p["functionResponse"] for p in answer_turns[0]["parts"] if "functionResponse" in p]
    assert [f["name"] for f in frs] == ["read_file"] * 3
    carried = []
    for f in frs:
        values = [v for _, v in walk(f["response"]) if isinstance(v, str)]
        carried.append([x for x in ("A", "B", "C") if x in values])
    assert carried == [["A"], ["B"], ["C"]], "each response carries its own call's output, in call order"
    for call, resp in zip(fcs, frs, strict=True):
        if "id" in call or "id" in resp:
            assert call.get("id") == resp.get("id")


# ------------------------------------------------------------------------------ C20 truncation


@pytest.mark.parametrize("dialect", ["openai", "anthropic"])
def test_C20_A_stream_max_tokens_mid_call_gives_length_and_no_call(
    dialect: str, upstream: UpstreamStandin, oai: Any, ant: Any, db_path: Path
) -> None:
    step = case("C20")["input"]["steps"][0]
    upstream.script(
        replay(
            recordings.stream_exchange("anthropic_messages", step["upstream_stream"]),
            api="anthropic_messages",
        )
    )
    req = step["request"]
    if dialect == "anthropic":
        req = {
            **req,
            "tools": [
                {
                    "name": t["function"]["name"],
                    "description": t["function"]["description"],
                    "input_schema": t["function"]["parameters"],
                }
                for t in req["tools"]
            ],
        }
    turn = send(dialect, _client(dialect, oai, ant), req)
    assert turn.error is None, turn.error
    assert turn.calls == [], "no executable tool call for toolu_t1"
    assert turn.stop == "length"
    if dialect == "openai":
        assert not any(c.delta.tool_calls for ch in turn.raw.chunks for c in ch.choices)
    else:
        assert not any(
            e.type == "content_block_start" and e.content_block.type == "tool_use" for e in turn.raw.events
        )
    row = transcript_row(db_path, _headers(turn)["x-turnstile-request-id"])
    assert "toolu_t1" in (row["withheld"] or "")


@pytest.mark.parametrize("dialect", ["openai", "anthropic"])
def test_C20_B_length_with_parseable_arguments_is_still_withheld(
    dialect: str, upstream: UpstreamStandin, oai: Any, ant: Any
) -> None:
    step = case("C20")["input"]["steps"][1]
    answer = {
        "id": "chatcmpl-c20b",
        "object": "chat.completion",
        "created": 0,
        "model": "some-oai-model",
        **step["upstream_response"],
    }
    upstream.script(replay(recordings.json_exchange(answer), api="openai_chat"))
    req = step["request"]
    if dialect == "anthropic":
        req = {
            **req,
            "tools": [
                {
                    "name": t["function"]["name"],
                    "description": t["function"]["description"],
                    "input_schema": t["function"]["parameters"],
                }
                for t in req["tools"]
            ],
        }
    client = _client(dialect, oai, ant)
    turn = send(dialect, client, req)
    assert turn.calls == []
    assert turn.stop == "length"
    where = [p for p, v in walk(turn.raw.model_dump()) if isinstance(v, str) and "npm test" in v]
    assert all("withheld" in p for p in where), (
        f"the cut command list may only appear as withheld metadata, found at {where}"
    )
    assert "call_t2" in (_headers(turn).get("x-turnstile-withheld-tool-calls") or "")


# ------------------------------------------------------------------------------ C30 cost


def _anthropic_answer_with_usage(usage: dict[str, int]) -> recordings.Exchange:
    body = ANTHROPIC_OK.json()
    body["usage"] = {"cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, **usage}
    return recordings.json_exchange(body)


@pytest.mark.parametrize("dialect", ["openai", "anthropic"])
def test_C30_A_cache_writes_billed_once_at_their_rate(
    dialect: str, upstream: UpstreamStandin, oai: Any, ant: Any
) -> None:
    usage = case("C30")["input"]["case_A_non_streaming_usage"]
    upstream.script(replay(_anthropic_answer_with_usage(usage), api="anthropic_messages"))
    req = {"model": "claude-sonnet-4-5", "max_tokens": 500, "messages": [{"role": "user", "content": "hi"}]}
    turn = send(dialect, _client(dialect, oai, ant), req)
    assert float(_headers(turn)["x-turnstile-cost-usd"]) == pytest.approx(0.043515, abs=1e-9)
    assert turn.input_total == 10005
    assert turn.output == 400
    if dialect == "anthropic":
        u = turn.raw.usage
        assert (u.input_tokens, u.cache_creation_input_tokens, u.cache_read_input_tokens) == (5, 10000, 0)


def test_C30_B_stream_cost_and_openai_usage(
    upstream: UpstreamStandin, oai: Any, ant: Any, db_path: Path
) -> None:
    events = case("C30")["input"]["case_B_streaming_events"]
    events = [
        *events,
        {"event": "message_stop", "data": {"type": "message_stop"}},
    ]  # every real stream ends so
    upstream.script(
        replay(recordings.stream_exchange("anthropic_messages", events), api="anthropic_messages")
    )
    req = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 500,
        "stream": True,
        "stream_options": {"include_usage": True},
        "messages": [{"role": "user", "content": "hi"}],
    }
    headers, lines = _raw_openai_stream_with_headers(oai, req)
    chunks = [json.loads(line[5:]) for line in lines if line != "data: [DONE]"]
    usage = chunks[-1]["usage"]
    assert usage["prompt_tokens"] == 2004
    assert usage["prompt_tokens_details"]["cached_tokens"] == 2000
    assert usage["completion_tokens"] == 20
    assert [r.stream for r in upstream.requests()] == [True]
    row = transcript_row(db_path, {k.lower(): v for k, v in headers.items()}["x-turnstile-request-id"])
    assert row["cost_usd"] == pytest.approx(0.000912, abs=1e-9)


def test_C30_B_same_usage_non_streamed_costs_the_same(upstream: UpstreamStandin, oai: Any, ant: Any) -> None:
    upstream.script(
        replay(
            _anthropic_answer_with_usage(
                {
                    "input_tokens": 4,
                    "cache_creation_input_tokens": 0,
                    "cache_read_input_tokens": 2000,
                    "output_tokens": 20,
                }
            ),
            api="anthropic_messages",
        )
    )
    req = {"model": "claude-sonnet-4-5", "max_tokens": 500, "messages": [{"role": "user", "content": "hi"}]}
    turn = send("openai", oai, req)
    assert float(_headers(turn)["x-turnstile-cost-usd"]) == pytest.approx(0.000912, abs=1e-9)
