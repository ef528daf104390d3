"""Fields the two OpenAI wire APIs share are translated between them, not dropped or refused
(``gateway/providers/passthrough.py`` ``SIBLINGS``, ``docs/fidelity.md``): an OpenAI Chat
client's serving and passed-through fields reach a Responses upstream, a Responses client's
reach a Chat upstream, asserted on what the upstream stand-in received; a value the other API
has no place for is still dropped and named."""

from __future__ import annotations

from typing import Any

import openai
from standins.tool_answers import text_answer
from standins.topology import MATRIX
from standins.upstream import UpstreamStandin, replay

RS = MATRIX["openai_responses"][0]
OA = MATRIX["openai_chat"][0]
USER = [{"role": "user", "content": "hello"}]

CHAT_SHARED: dict[str, Any] = {
    "prompt_cache_key": "pk-1",
    "prompt_cache_retention": "24h",
    "safety_identifier": "sid-1",
    "service_tier": "flex",
    "store": True,
}


def test_chat_clients_shared_fields_reach_a_responses_upstream_translated(
    upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    upstream.script(replay(text_answer("openai_responses", "hi", stream=False)))
    raw = oai.chat.completions.with_raw_response.create(
        model=RS,
        messages=USER,
        user="u-1",
        metadata={"team": "docs"},
        max_completion_tokens=50,
        **CHAT_SHARED,
        extra_body={"verbosity": "low", "moderation": {"model": "omni-moderation-latest"}},
    )
    assert raw.http_response.status_code == 200
    assert "x-turnstile-dropped" not in raw.headers
    (got,) = upstream.requests()
    assert {k: got.body.get(k) for k in CHAT_SHARED} == CHAT_SHARED
    assert got.body["text"] == {"verbosity": "low"}
    assert got.body["moderation"] == {"model": "omni-moderation-latest"}
    assert got.body["user"] == "u-1"
    assert got.body["metadata"] == {"team": "docs"}
    assert got.body["max_output_tokens"] == 50


def test_responses_clients_shared_fields_reach_a_chat_upstream_translated(
    upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    upstream.script(replay(text_answer("openai_chat", "hi", stream=False)))
    raw = oai.responses.with_raw_response.create(
        model=OA,
        input="hi",
        store=False,
        user="u-1",
        safety_identifier="sid-1",
        prompt_cache_key="pk-1",
        prompt_cache_retention="24h",
        service_tier="priority",
        max_output_tokens=50,
        parallel_tool_calls=False,
        text={"verbosity": "high"},
        extra_body={"moderation": {"model": "omni-moderation-latest"}},
    )
    assert raw.http_response.status_code == 200
    assert "x-turnstile-dropped" not in raw.headers
    (got,) = upstream.requests()
    expected = {
        "user": "u-1",
        "safety_identifier": "sid-1",
        "prompt_cache_key": "pk-1",
        "prompt_cache_retention": "24h",
        "service_tier": "priority",
        "verbosity": "high",
        "moderation": {"model": "omni-moderation-latest"},
    }
    assert {k: got.body.get(k) for k in expected} == expected
    assert "store" not in got.body  # a Responses client's store is the gateway's session log


def test_a_responses_value_chat_has_no_place_for_is_still_dropped_and_named(
    upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    upstream.script(replay(text_answer("openai_chat", "hi", stream=False)))
    raw = oai.responses.with_raw_response.create(
        model=OA,
        input="hi",
        store=False,
        extra_body={"service_tier": "ultrafast", "prompt_cache_options": {"ttl": "12h"}},
    )
    assert raw.headers["x-turnstile-dropped"] == "prompt_cache_options,service_tier"
    (got,) = upstream.requests()
    assert "service_tier" not in got.body
    assert "prompt_cache_options" not in got.body
