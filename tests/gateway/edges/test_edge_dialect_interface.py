"""Every dialect module exposes the verbs the server and pipeline call, and real recorded
client requests shipped as test fixtures parse (runs without the corpus)."""

from __future__ import annotations

import pytest
from edges_testkit import FIXTURES, dialect_of, iter_recorded_requests

from gateway.edges import DIALECTS, anthropic_messages, get_dialect, openai_chat

VERBS = (
    "DIALECT",
    "parse_request",
    "render_response",
    "StreamRenderer",
    "render_error",
    "render_models",
    "ping_frame",
)


@pytest.mark.parametrize("name", ["openai_chat", "anthropic_messages", "openai_responses", "gemini"])
def test_each_dialect_module_exposes_the_same_verbs(name: str) -> None:
    module = get_dialect(name)
    assert name == module.DIALECT
    for verb in VERBS:
        assert callable(getattr(module, verb)) or verb == "DIALECT", verb
    assert set(DIALECTS) == {"openai_chat", "anthropic_messages", "openai_responses", "gemini"}


def test_anthropic_has_count_tokens_verbs() -> None:
    assert callable(anthropic_messages.parse_count_tokens)
    assert callable(anthropic_messages.render_count_tokens)
    assert not hasattr(openai_chat, "parse_count_tokens")


def test_recorded_requests_in_test_fixtures_parse() -> None:
    seen = 0
    for _rel, _i, url, body, _status in iter_recorded_requests(FIXTURES):
        dialect = dialect_of(url)
        if dialect is None:
            continue
        req = get_dialect(dialect).parse_request(body)
        assert req.messages
        seen += 1
    if seen == 0:
        pytest.skip("no recorded client requests among tests/fixtures")
