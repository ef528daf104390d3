"""gateway/anthropic_headers.py: which client anthropic-beta / anthropic-version values reach
the deployment tried, and what is dropped for it."""

from __future__ import annotations

import pytest
from pydantic import ValidationError
from starlette.datastructures import Headers

from gateway.anthropic_headers import admit, client_betas, forwarded
from gateway.config import AnthropicHeaders, BetaList, Deployment

AN = Deployment(name="an", api="anthropic_messages", model="claude-sonnet-4-5")
OA = Deployment(name="oa", api="openai_chat", model="gpt-4o")


def test_betas_are_split_on_commas_across_repeated_headers_each_once() -> None:
    h = Headers(
        raw=[
            (b"anthropic-beta", b"a-1, b-2"),
            (b"anthropic-beta", b"a-1,c-3"),
            (b"anthropic-version", b"2023-06-01"),
        ]
    )
    assert client_betas(h, True) == (["a-1", "b-2", "c-3"], "2023-06-01")
    assert client_betas(h, False) == (["a-1", "b-2", "c-3"], None)
    assert client_betas(Headers(raw=[]), True) == ([], None)


def test_an_anthropic_target_gets_every_beta_by_default_but_the_translated_ones() -> None:
    got = admit(
        ["context-1m-2025-08-07", "structured-outputs-2025-11-13"], "2023-06-01", AN, AnthropicHeaders()
    )
    assert got.betas == ("context-1m-2025-08-07",)
    assert got.version == "2023-06-01"
    assert got.dropped == ()


def test_the_allow_and_deny_lists_filter_and_what_they_refuse_is_dropped() -> None:
    policy = AnthropicHeaders(betas=BetaList(allow=["a", "b"], deny=["b"]))
    got = admit(["a", "b", "c"], None, AN, policy)
    assert got.betas == ("a",)
    assert [(d.field, d.values) for d in got.dropped] == [("anthropic-beta", ("b", "c"))]


def test_a_version_not_allowed_is_replaced_by_the_deployments_own() -> None:
    got = admit([], "2026-10-21", AN, AnthropicHeaders())
    assert (got.version, got.dropped) == (None, ())
    assert admit([], "2026-10-21", AN, AnthropicHeaders(versions=["2026-10-21"])).version == "2026-10-21"


def test_a_non_anthropic_target_gets_no_beta_and_each_is_dropped() -> None:
    got = admit(["context-1m-2025-08-07", "structured-outputs-2025-11-13"], None, OA, AnthropicHeaders())
    assert got.betas == ()
    assert [(d.field, d.values, d.deployment) for d in got.dropped] == [
        ("anthropic-beta", ("context-1m-2025-08-07",), "oa")
    ]
    assert admit(["structured-outputs-2025-11-13"], None, OA, AnthropicHeaders()).dropped == ()


def test_a_turn_keeps_each_dropped_note_once_and_names_it_for_the_answering_deployment() -> None:
    from gateway.schema import Request, TextPart, UserMessage
    from gateway.turn import Turn

    turn = Turn(
        request_id="r",
        dialect="anthropic",
        request=Request(model="m", messages=[UserMessage(content=[TextPart(text="x")])]),
    )
    note = admit(["b-1"], None, OA, AnthropicHeaders()).dropped[0].note()
    turn.note_dropped(note)
    turn.note_dropped(dict(note))  # a second tool-loop step
    assert turn.dropped == (note,)
    turn.deployment = AN
    assert "x-turnstile-dropped" not in turn.headers()
    turn.deployment = OA
    assert turn.headers()["x-turnstile-dropped"] == "anthropic-beta"


def test_the_forwarded_headers_are_claude_codes_by_default_and_read_case_insensitively() -> None:
    names = AnthropicHeaders().forward
    assert names == ["x-claude-code-session-id", "x-app"]
    h = Headers(raw=[(b"x-claude-code-session-id", b"s-1"), (b"user-agent", b"claude-cli/2.1.332")])
    assert forwarded(h, names) == {"x-claude-code-session-id": "s-1"}
    assert forwarded(None, names) == {} and forwarded(h, []) == {}
    assert AnthropicHeaders(forward=["X-App", " x-app "]).forward == ["x-app"]


@pytest.mark.parametrize("name", ["x-api-key", "Authorization", "anthropic-beta"])
def test_forward_may_not_name_credentials_or_the_headers_the_gateway_sets(name: str) -> None:
    with pytest.raises(ValidationError, match=name.lower()):
        AnthropicHeaders(forward=[name])


@pytest.mark.parametrize("dep", [AN, OA], ids=["anthropic", "other"])
def test_a_version_the_edge_does_not_speak_is_dropped_and_named_toward_any_target(dep: Deployment) -> None:
    got = admit([], "2099-01-01", dep, AnthropicHeaders())
    assert got.version is None
    assert [(d.field, d.values) for d in got.dropped] == [("anthropic-version", ("2099-01-01",))]
    assert admit([], "2099-01-01", dep, AnthropicHeaders(versions=["2099-01-01"])).dropped == ()
