"""Tool-call arguments an upstream nests deeper than any real tool takes (and deeper than the
gateway could store or render: orjson stops at 254 levels) are judged, not trusted: through the
real gateway, in both client dialects, streamed and whole, from every upstream wire API, the call
is withheld (reported, never executable) and the client gets a well-formed answer, not a 500."""

from __future__ import annotations

import pytest
from standins.tool_answers import Call, tool_call_answer
from standins.topology import MATRIX
from standins.upstream import UpstreamStandin, replay

from gateway.guards.truncation import MAX_ARGUMENT_DEPTH
from wire.test_output_budget import _ask


def _nested(levels: int) -> str:
    return '{"a":' * levels + "1" + "}" * levels


@pytest.mark.parametrize("levels", [MAX_ARGUMENT_DEPTH + 1, 300], ids=["past-the-limit", "past-orjson"])
@pytest.mark.parametrize("dialect", ["openai", "anthropic"])
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize("api", ["openai_chat", "anthropic_messages", "gemini", "openai_responses"])
def test_arguments_nested_past_the_limit_are_withheld_and_the_answer_is_well_formed(
    levels: int, dialect: str, stream: bool, api: str, upstream: UpstreamStandin, gateway_url: str
) -> None:
    call = Call("call_deep", "write", _nested(levels))
    upstream.script(replay(tool_call_answer(api, [call], stream=stream, output_tokens=20), api=api))

    resp, seen = _ask(gateway_url, dialect, MATRIX[api][0], stream)

    assert resp.status_code == 200, resp.text
    assert seen["calls"] == [], "no executable call reaches the client"
    assert seen["withheld"] == ["call_deep"]


@pytest.mark.parametrize("api", ["openai_chat", "anthropic_messages", "gemini", "openai_responses"])
def test_arguments_nested_within_the_limit_are_handed_on(
    api: str, upstream: UpstreamStandin, gateway_url: str
) -> None:
    call = Call("call_ok", "write", _nested(MAX_ARGUMENT_DEPTH - 1))
    upstream.script(replay(tool_call_answer(api, [call], stream=False, output_tokens=20), api=api))

    _, seen = _ask(gateway_url, "anthropic", MATRIX[api][0], False)

    assert seen["calls"] == ["call_ok"]
