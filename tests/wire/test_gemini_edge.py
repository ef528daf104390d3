"""The Gemini client dialect through the real gateway, driven by the official ``google-genai``
SDK, against every upstream wire API's stand-in (the Gemini row of the wire matrix), stream and
whole, on ``/v1beta`` (Gemini CLI's and the python SDK's default) and ``/v1``.

Recordings: charmbracelet/fantasy ``TestXCommon`` cassettes (``simple``: one text answer;
``multi_tool``: parallel ``add`` + ``multiply`` calls, then the answer to their results); the
Gemini ones carry ``thoughtSignature`` on the calls.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from google import genai
from google.genai import errors, types
from standins import recordings
from standins.drive import ADD_MULTIPLY, ask, tool_results, user
from standins.topology import MATRIX
from standins.upstream import UpstreamStandin, http_error, replay, reset_mid_stream
from standins.wirekit import recorded_calls, recorded_text, recorded_usage, transcript_count, transcript_row

APIS = ["openai_chat", "anthropic_messages", "gemini"]
CASES = [(a, s) for a in APIS for s in (False, True)]
SYSTEM = "You are a helpful assistant. CRITICAL: Always use both add and multiply at the same time ALWAYS."


def _id(p: tuple[str, bool]) -> str:
    return f"gemini-{p[0]}-{'stream' if p[1] else 'nonstream'}"


def _client(gateway_url: str, version: str) -> genai.Client:
    opts = types.HttpOptions(base_url=gateway_url, api_version=version, timeout=15_000)
    return genai.Client(api_key="gemini-client-key", http_options=opts)


@pytest.fixture
def gem_v1(gateway_url: str) -> Iterator[genai.Client]:
    """google-genai on API version ``v1`` (the python SDK's default is ``v1beta``; other
    clients use ``v1``)."""
    client = _client(gateway_url, "v1")
    yield client
    client.close()


_TOOLS = [
    types.Tool(
        function_declarations=[
            types.FunctionDeclaration(
                name=t["name"], description=t["description"], parameters_json_schema=t["parameters"]
            )
            for t in ADD_MULTIPLY
        ]
    )
]


def _ask(client: genai.Client, model: str, contents: Any, stream: bool, **config: Any) -> types.Content:
    """One turn: the answer's content (stream chunks folded: their parts in order, adjacent
    plain text joined), with ``finish`` and ``usage`` of the last chunk on the attributes of a
    small record."""
    cfg = types.GenerateContentConfig(max_output_tokens=4000, **config)
    if not stream:
        resp = client.models.generate_content(model=model, contents=contents, config=cfg)
        _ask.last = resp  # type: ignore[attr-defined]
        assert resp.candidates
        content = resp.candidates[0].content
        assert content is not None
        return content
    parts: list[types.Part] = []
    last = None
    for chunk in client.models.generate_content_stream(model=model, contents=contents, config=cfg):
        last = chunk
        for cand in chunk.candidates or []:
            for p in (cand.content.parts if cand.content else None) or []:
                plain = p.text is not None and not p.thought and p.thought_signature is None
                prev = parts[-1] if parts else None
                if (
                    plain
                    and prev is not None
                    and prev.text is not None
                    and not prev.thought
                    and prev.thought_signature is None
                ):
                    parts[-1] = types.Part(text=(prev.text or "") + (p.text or ""))
                    continue
                if p.text == "" and p.thought_signature is None:
                    continue
                parts.append(p)
    _ask.last = last  # type: ignore[attr-defined]
    return types.Content(role="model", parts=parts)


def _last() -> Any:
    return _ask.last  # type: ignore[attr-defined]


def _text(content: types.Content) -> str:
    return "".join(p.text or "" for p in content.parts or [] if not p.thought)


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_plain_text_answer_matches_recording(
    case: tuple[str, bool], upstream: UpstreamStandin, gem: genai.Client
) -> None:
    api, stream = case
    name, model = MATRIX[api]
    ex = recordings.common(api, "simple", stream)[0]
    upstream.script(replay(ex, api=api))

    content = _ask(
        gem, name, "Say hi in Portuguese", stream, system_instruction="You are a helpful assistant"
    )

    assert _text(content) == recorded_text(ex, api)
    last = _last()
    assert last.candidates[0].finish_reason == types.FinishReason.STOP
    rec = recorded_usage(ex, api)
    assert last.usage_metadata.prompt_token_count == rec.total_input
    out = (last.usage_metadata.candidates_token_count or 0) + (last.usage_metadata.thoughts_token_count or 0)
    assert out == rec.output
    sent = upstream.requests()
    assert len(sent) == 1
    assert sent[0].api == api and sent[0].model == model and sent[0].stream == stream
    everything = str(sent[0].headers) + str(sent[0].query) + sent[0].raw.decode()
    assert "gemini-client-key" not in everything, "the client's key must not go upstream"


@pytest.mark.parametrize("stream", [False, True], ids=["nonstream", "stream"])
def test_the_v1_path_serves_generate_content(
    stream: bool, upstream: UpstreamStandin, gem_v1: genai.Client
) -> None:
    api = "openai_chat"
    name, _ = MATRIX[api]
    ex = recordings.common(api, "simple", stream)[0]
    upstream.script(replay(ex, api=api))

    content = _ask(gem_v1, name, "Say hi in Portuguese", stream)

    assert _text(content) == recorded_text(ex, api)


def _results(calls: list[types.FunctionCall], values: list[str], with_ids: bool) -> types.Content:
    return types.Content(
        role="user",
        parts=[
            types.Part(
                function_response=types.FunctionResponse(
                    id=c.id if with_ids else None, name=c.name, response={"output": v}
                )
            )
            for c, v in zip(calls, values, strict=True)
        ],
    )


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_function_calls_then_responses_across_two_rounds(
    case: tuple[str, bool], upstream: UpstreamStandin, gem: genai.Client
) -> None:
    api, stream = case
    name, _ = MATRIX[api]
    first, second = recordings.common(api, "multi_tool", stream)[:2]
    upstream.script(replay(first, api=api), replay(second, api=api))
    history: list[Any] = [
        types.Content(role="user", parts=[types.Part(text="Add and multiply the number 2 and 3")])
    ]

    answer = _ask(gem, name, history, stream, tools=_TOOLS, system_instruction=SYSTEM)

    calls = [p.function_call for p in answer.parts or [] if p.function_call is not None]
    rec = recorded_calls(first, api)
    assert [(c.name, c.args) for c in calls] == [(r.name, r.args) for r in rec]
    for c, r in zip(calls, rec, strict=True):
        assert c.id, "every functionCall carries an id the client echoes"
        if r.id:
            assert c.id == r.id
    signed = [p for p in answer.parts or [] if p.function_call is not None and p.thought_signature]
    assert len(signed) == len([r for r in rec if r.signature])
    assert _last().candidates[0].finish_reason == types.FinishReason.STOP

    history += [answer, _results(calls, ["5", "6"], with_ids=True)]
    final = _ask(gem, name, history, stream, tools=_TOOLS, system_instruction=SYSTEM)

    assert _text(final) == recorded_text(second, api)
    sent = upstream.requests()
    assert len(sent) == 2
    if api == "gemini":  # the signatures go back to the signer byte-identical
        contents = sent[1].body["contents"]
        model_turn = next(c for c in contents if c["role"] == "model")
        sigs = [p["thoughtSignature"] for p in model_turn["parts"] if "thoughtSignature" in p]
        assert sigs == [r.signature for r in rec if r.signature]
        responses = [p["functionResponse"] for c in contents for p in c["parts"] if "functionResponse" in p]
        assert [r["name"] for r in responses] == ["add", "multiply"]
    elif api == "openai_chat":
        msgs = sent[1].body["messages"]
        assert [m["tool_call_id"] for m in msgs if m["role"] == "tool"] == [r.id for r in rec]


def test_function_responses_without_ids_pair_by_name_and_order(
    upstream: UpstreamStandin, gem: genai.Client
) -> None:
    api = "openai_chat"
    name, _ = MATRIX[api]
    first, second = recordings.common(api, "multi_tool", False)[:2]
    upstream.script(replay(first, api=api), replay(second, api=api))
    history: list[Any] = [
        types.Content(role="user", parts=[types.Part(text="Add and multiply the number 2 and 3")])
    ]
    answer = _ask(gem, name, history, False, tools=_TOOLS, system_instruction=SYSTEM)
    calls = [p.function_call for p in answer.parts or [] if p.function_call is not None]
    stripped = types.Content(
        role="model",
        parts=[types.Part(function_call=types.FunctionCall(name=c.name, args=c.args)) for c in calls],
    )
    # responses in the other order, without ids: each pairs with the call of its name
    reversed_results = _results(list(reversed(calls)), ["6", "5"], with_ids=False)

    _ask(gem, name, [*history, stripped, reversed_results], False, tools=_TOOLS, system_instruction=SYSTEM)

    msgs = upstream.requests()[1].body["messages"]
    assistant = next(m for m in msgs if m["role"] == "assistant")
    by_id = {tc["id"]: tc["function"]["name"] for tc in assistant["tool_calls"]}
    tool_msgs = [m for m in msgs if m["role"] == "tool"]
    assert [by_id[m["tool_call_id"]] for m in tool_msgs] == ["add", "multiply"], "results in call order"
    assert [m["content"] for m in tool_msgs] == ["5", "6"]


def test_orphan_function_response_is_refused_naming_it(upstream: UpstreamStandin, gem: genai.Client) -> None:
    name, _ = MATRIX["openai_chat"]
    contents = [
        types.Content(role="user", parts=[types.Part(text="hi")]),
        types.Content(role="model", parts=[types.Part(text="hello")]),
        types.Content(
            role="user",
            parts=[
                types.Part(function_response=types.FunctionResponse(name="add", response={"output": "5"}))
            ],
        ),
    ]
    with pytest.raises(errors.ClientError) as info:
        gem.models.generate_content(model=name, contents=contents)

    assert info.value.code == 400
    assert info.value.status == "INVALID_ARGUMENT"
    assert "contents[2].parts[0].functionResponse" in str(info.value.message)
    assert "'add'" in str(info.value.message)
    assert upstream.requests() == []


def test_structured_output_with_response_schema_reaches_the_upstream(
    upstream: UpstreamStandin, gem: genai.Client
) -> None:
    api = "openai_chat"
    name, _ = MATRIX[api]
    upstream.script(replay(recordings.common(api, "simple", False)[0], api=api))
    schema = types.Schema(
        type=types.Type.OBJECT,
        properties={
            "greeting": types.Schema(type=types.Type.STRING),
            "n": types.Schema(type=types.Type.INTEGER, nullable=True),
        },
        required=["greeting"],
        property_ordering=["n", "greeting"],
    )

    _ask(gem, name, "Say hi", False, response_mime_type="application/json", response_schema=schema)

    rf = upstream.requests()[0].body["response_format"]
    assert rf["type"] == "json_schema"
    sent = rf["json_schema"]["schema"]
    assert sent["type"] == "object"
    assert list(sent["properties"]) == ["n", "greeting"]
    assert sent["properties"]["greeting"]["type"] == "string"
    assert sent["properties"]["n"]["type"] == ["integer", "null"]


def test_count_tokens_answers_total_tokens(upstream: UpstreamStandin, gem: genai.Client) -> None:
    name, _ = MATRIX["openai_chat"]

    resp = gem.models.count_tokens(model=name, contents="Say hi in Portuguese")

    assert isinstance(resp.total_tokens, int) and resp.total_tokens > 0
    assert upstream.requests() == []


def test_models_list_and_get_in_gemini_shape(gem: genai.Client, gem_v1: genai.Client) -> None:
    name, _ = MATRIX["gemini"]
    for client in (gem, gem_v1):
        listed = {m.name: m for m in client.models.list()}
        assert f"models/{name}" in listed
        assert "generateContent" in (listed[f"models/{name}"].supported_actions or [])
        got = client.models.get(model=name)
        assert got.name == f"models/{name}"


def test_safety_settings_go_to_a_gemini_upstream_and_are_refused_elsewhere(
    upstream: UpstreamStandin, gem: genai.Client
) -> None:
    safety = [
        types.SafetySetting(
            category=types.HarmCategory.HARM_CATEGORY_HARASSMENT,
            threshold=types.HarmBlockThreshold.BLOCK_NONE,
        )
    ]
    name, _ = MATRIX["gemini"]
    upstream.script(replay(recordings.common("gemini", "simple", False)[0], api="gemini"))

    _ask(gem, name, "Say hi", False, safety_settings=safety)

    assert upstream.requests()[0].body["safetySettings"] == [
        {"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}
    ]
    with pytest.raises(errors.ClientError) as info:
        gem.models.generate_content(
            model=MATRIX["openai_chat"][0],
            contents="Say hi",
            config=types.GenerateContentConfig(safety_settings=safety),
        )
    assert info.value.code == 400
    assert "safetySettings" in str(info.value.message)


def test_thought_signature_is_a_base64_envelope_the_sdk_keeps() -> None:
    from gateway.edges.signatures import unwrap_b64_signature, wrap_b64_signature
    from gateway.schema import Provenance

    prov = Provenance(api="gemini", provider="google", model="gemini-3-pro-preview")
    wrapped = wrap_b64_signature("EsIN+/=", prov)
    raw = base64.b64decode(wrapped)  # what the SDK keeps (bytes) and encodes again
    assert base64.b64encode(raw).decode() == wrapped
    assert unwrap_b64_signature(wrapped) == ("EsIN+/=", prov, False)


# ------------------------------------------------------------------------------ guards and faults


def _user(text: str) -> types.Content:
    return types.Content(role="user", parts=[types.Part(text=text)])


def _call(name: str, call_id: str | None = None) -> types.Part:
    return types.Part(function_call=types.FunctionCall(id=call_id, name=name, args={"a": 1}))


def test_a_function_call_without_its_response_is_refused_naming_it(
    upstream: UpstreamStandin, gem: genai.Client
) -> None:
    contents = [_user("add"), types.Content(role="model", parts=[_call("add", "c1")]), _user("and?")]
    with pytest.raises(errors.ClientError) as info:
        gem.models.generate_content(model=MATRIX["openai_chat"][0], contents=contents)

    assert info.value.code == 400
    assert "contents[1].parts[0].functionCall" in str(info.value.message)
    assert "c1" in str(info.value.message)
    assert upstream.requests() == []


def test_one_id_on_two_different_calls_is_refused(upstream: UpstreamStandin, gem: genai.Client) -> None:
    calls = types.Content(
        role="model",
        parts=[
            _call("add", "dup"),
            types.Part(function_call=types.FunctionCall(id="dup", name="mul", args={})),
        ],
    )
    results = types.Content(
        role="user",
        parts=[
            types.Part(
                function_response=types.FunctionResponse(id="dup", name="add", response={"output": "1"})
            )
        ],
    )
    with pytest.raises(errors.ClientError) as info:
        gem.models.generate_content(model=MATRIX["openai_chat"][0], contents=[_user("go"), calls, results])

    assert info.value.code == 400
    assert "dup" in str(info.value.message)
    assert upstream.requests() == []


def test_responses_out_of_call_order_are_put_in_call_order(
    upstream: UpstreamStandin, gem: genai.Client
) -> None:
    api = "anthropic_messages"
    upstream.script(replay(recordings.common(api, "simple", False)[0], api=api))
    calls = types.Content(role="model", parts=[_call("add", "c1"), _call("mul", "c2")])
    results = types.Content(
        role="user",
        parts=[
            types.Part(
                function_response=types.FunctionResponse(id="c2", name="mul", response={"output": "6"})
            ),
            types.Part(
                function_response=types.FunctionResponse(id="c1", name="add", response={"output": "5"})
            ),
        ],
    )

    gem.models.generate_content(model=MATRIX[api][0], contents=[_user("go"), calls, results])

    msgs = upstream.requests()[0].body["messages"]
    assert [b["tool_use_id"] for b in msgs[2]["content"] if b["type"] == "tool_result"] == ["c1", "c2"]


@pytest.mark.parametrize("stream", [False, True], ids=["nonstream", "stream"])
def test_a_call_cut_by_the_output_limit_is_withheld(
    stream: bool, upstream: UpstreamStandin, gem: genai.Client
) -> None:
    ex = recordings.common("gemini", "multi_tool", stream)[0]
    ex = ex.with_body(ex.body.replace(b'"finishReason": "STOP"', b'"finishReason": "MAX_TOKENS"'))
    upstream.script(replay(ex, api="gemini"))

    content = _ask(gem, MATRIX["gemini"][0], "Add and multiply the number 2 and 3", stream, tools=_TOOLS)

    assert not [p for p in content.parts or [] if p.function_call is not None]
    assert _last().candidates[0].finish_reason == types.FinishReason.MAX_TOKENS


def test_an_upstream_rate_limit_reaches_the_client_as_resource_exhausted(
    upstream: UpstreamStandin, gem: genai.Client
) -> None:
    upstream.script(
        http_error(429, recordings.anthropic_rate_limited(), api="anthropic_messages", retry_after="7")
    )
    with pytest.raises(errors.ClientError) as info:
        gem.models.generate_content(model=MATRIX["anthropic_messages"][0], contents="hi")

    assert info.value.code == 429
    assert info.value.status == "RESOURCE_EXHAUSTED"


def test_an_error_after_the_stream_started_is_raised_by_the_sdk(
    upstream: UpstreamStandin, gem: genai.Client
) -> None:
    ex = recordings.common("openai_chat", "simple", True)[0]
    upstream.script(reset_mid_stream(ex, 2, api="openai_chat"))
    seen: list[Any] = []
    with pytest.raises(errors.APIError) as info:
        for chunk in gem.models.generate_content_stream(model=MATRIX["openai_chat"][0], contents="hi"):
            seen.append(chunk)

    assert seen, "the stream had started"
    assert info.value.code == 502


def test_each_gemini_turn_is_one_transcript_row_refused_or_answered(
    upstream: UpstreamStandin, gem: genai.Client, db_path: Path
) -> None:
    api = "openai_chat"
    upstream.script(replay(recordings.common(api, "simple", False)[0], api=api))
    resp = gem.models.generate_content(model=MATRIX[api][0], contents="hi")
    rid = (resp.sdk_http_response.headers or {})["x-turnstile-request-id"]
    row = transcript_row(db_path, rid)
    assert (row["client_dialect"], row["status"]) == ("gemini", 200)

    with pytest.raises(errors.ClientError) as info:
        gem.models.generate_content(model=MATRIX[api][0], contents="hi", config={"candidate_count": 2})
    refused_rid = info.value.response.headers["x-turnstile-request-id"]
    row = transcript_row(db_path, refused_rid)
    assert (row["client_dialect"], row["status"]) == ("gemini", 400)
    assert transcript_count(db_path, refused_rid) == 1


WEATHER = [
    {
        "name": "weather",
        "description": "Get weather information for a location",
        "parameters": {
            "type": "object",
            "required": ["location"],
            "properties": {"location": {"description": "the city", "type": "string"}},
        },
    }
]


@pytest.mark.parametrize("stream", [False, True], ids=["nonstream", "stream"])
def test_anthropic_signed_thinking_round_trips_through_a_gemini_client(
    stream: bool, upstream: UpstreamStandin, gem: genai.Client
) -> None:
    first, second = recordings.anthropic_thinking(stream)[:2]
    upstream.script(replay(first, api="anthropic_messages"), replay(second, api="anthropic_messages"))
    thinking = types.ThinkingConfig(thinking_budget=4000, include_thoughts=True)
    kwargs: dict[str, Any] = {
        "model": MATRIX["anthropic_messages"][0],
        "stream": stream,
        "tools": WEATHER,
        "max_tokens": 4096,
        "system": "You are a helpful assistant",
        "thinking_config": thinking,
    }
    history: list[Any] = [user("gemini", "What's the weather in Florence, Italy?")]
    turn1 = ask("gemini", gem, messages=history, **kwargs)

    assert turn1.error is None, turn1.error
    assert upstream.requests()[0].body["thinking"] == {"type": "enabled", "budget_tokens": 4000}
    assert "".join(t["thinking"] for t in turn1.thinking), "the thought text reaches the client"
    assert turn1.thinking[-1]["signature"], "the thought ends with its signature"
    assert turn1.stop == "tool_use"
    call = turn1.calls[0]
    results = tool_results("gemini", [(call["id"], "40 C", False)], {call["id"]: call["name"]})
    turn2 = ask("gemini", gem, messages=[*history, turn1.echo, *results], **kwargs)

    assert turn2.error is None, turn2.error
    assert turn2.text == recorded_text(second, "anthropic_messages")
    body = upstream.requests()[1].body
    blocks = body["messages"][1]["content"]
    assert blocks[0]["type"] == "thinking", "thinking stays first in the turn"
    assert (blocks[0]["thinking"], blocks[0]["signature"]) == _recorded_thinking(first), (
        "the thinking goes back to its signer whole, its signature byte-identical"
    )


def _recorded_thinking(ex: recordings.Exchange) -> tuple[str, str]:
    """``(thinking text, signature)`` of a recorded Anthropic answer, whole or streamed."""
    if not ex.stream:
        block = next(b for b in ex.json()["content"] if b["type"] == "thinking")
        return block["thinking"], block["signature"]
    text, sig = "", ""
    for ev in ex.sse_data():
        delta = ev.get("delta") or {}
        text += delta.get("thinking", "") if delta.get("type") == "thinking_delta" else ""
        sig += delta.get("signature", "") if delta.get("type") == "signature_delta" else ""
    return text, sig
