"""What an OpenAI client's end-user id, metadata and reasoning effort become on each target
(issue 14, findings 9, 10, 11, 16), driven by the official SDK and asserted on what reached the
upstream stand-in: carried where the target's wire has a slot (``reasoning.effort`` takes
``none`` and ``xhigh`` exactly), otherwise dropped and named in ``x-turnstile-dropped``."""

from __future__ import annotations

from typing import Any

import openai
import pytest
from standins.tool_answers import text_answer
from standins.upstream import UpstreamStandin, replay

API_OF = {"an": "anthropic_messages", "oa": "openai_chat", "rs": "openai_responses", "ge": "gemini"}
USER = [{"role": "user", "content": "hello"}]
REASONER = "rs-gpt-5"  # a Responses deployment of a reasoning model


def _answer(target: str) -> Any:
    return replay(text_answer(API_OF[target], "ok", stream=False))


def test_a_chat_user_toward_gemini_is_dropped_and_named(
    upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    upstream.script(_answer("ge"))
    raw = oai.chat.completions.with_raw_response.create(model="ge", messages=USER, user="u-42")  # type: ignore[arg-type]
    assert raw.headers["x-turnstile-dropped"] == "user"
    (got,) = upstream.requests()
    assert "u-42" not in str(got.body)


@pytest.mark.parametrize("field", ["user", "safety_identifier"])
def test_a_responses_end_user_id_toward_gemini_is_dropped_and_named(
    field: str, upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    upstream.script(_answer("ge"))
    raw = oai.responses.with_raw_response.create(model="ge", input="hello", **{field: "u-42"})  # type: ignore[call-overload]
    assert raw.headers["x-turnstile-dropped"] == "user"
    (got,) = upstream.requests()
    assert "u-42" not in str(got.body)


@pytest.mark.parametrize("target", ["oa", "an"])
def test_an_end_user_id_reaches_the_apis_that_have_a_slot(
    target: str, upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    upstream.script(_answer(target))
    raw = oai.responses.with_raw_response.create(model=target, input="hello", safety_identifier="u-42")
    assert "x-turnstile-dropped" not in raw.headers
    (got,) = upstream.requests()
    assert "u-42" in str(got.body)


@pytest.mark.parametrize("target", ["oa", "an", "ge"])
def test_responses_metadata_toward_another_api_is_dropped_and_named(
    target: str, upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    upstream.script(_answer(target))
    raw = oai.responses.with_raw_response.create(model=target, input="hello", metadata={"ticket": "T-1"})
    assert raw.headers["x-turnstile-dropped"] == "metadata"
    (got,) = upstream.requests()
    assert "T-1" not in str(got.body)


def test_chat_metadata_reaches_a_responses_upstream_and_is_not_reported_dropped(
    upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    upstream.script(_answer("rs"))
    raw = oai.chat.completions.with_raw_response.create(model="rs", messages=USER, metadata={"ticket": "T-1"})  # type: ignore[arg-type]
    assert "x-turnstile-dropped" not in raw.headers
    (got,) = upstream.requests()
    assert got.body["metadata"] == {"ticket": "T-1"}


@pytest.mark.parametrize("target", ["an", "ge"])
def test_chat_metadata_toward_an_api_without_a_slot_is_dropped_and_named(
    target: str, upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    upstream.script(_answer(target))
    raw = oai.chat.completions.with_raw_response.create(
        model=target, messages=USER, metadata={"ticket": "T-1"}
    )  # type: ignore[arg-type]
    assert raw.headers["x-turnstile-dropped"] == "metadata"
    (got,) = upstream.requests()
    assert "T-1" not in str(got.body)


@pytest.mark.parametrize(
    ("effort", "reasoning"), [("xhigh", {"effort": "xhigh", "summary": "auto"}), ("none", {"effort": "none"})]
)
def test_a_chat_reasoning_effort_of_none_or_xhigh_reaches_responses_exactly(
    effort: str, reasoning: dict[str, Any], upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    upstream.script(_answer("rs"))
    oai.chat.completions.create(model=REASONER, messages=USER, reasoning_effort=effort)  # type: ignore[arg-type]
    (got,) = upstream.requests()
    assert got.body["reasoning"] == reasoning


@pytest.mark.parametrize("effort", ["xhigh", "none"])
def test_a_responses_reasoning_effort_of_none_or_xhigh_reaches_responses_exactly(
    effort: str, upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    upstream.script(_answer("rs"))
    raw = oai.responses.with_raw_response.create(model=REASONER, input="hello", reasoning={"effort": effort})  # type: ignore[typeddict-item]
    assert "x-turnstile-dropped" not in raw.headers
    (got,) = upstream.requests()
    assert got.body["reasoning"]["effort"] == effort
