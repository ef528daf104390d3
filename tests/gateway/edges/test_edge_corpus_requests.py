"""Every recorded client request body of the two dialects in the corpus parses.

Bodies the real upstream answered with a 4xx may be refused too. Bodies that use features
Turnstile does not support yet (server tools such as web_search, documents, tool-search
references) must be refused with an InvalidRequest that says so and
names the field; nothing else may fail.
"""

from __future__ import annotations

import pytest
from edges_testkit import CORPUS, dialect_of, iter_recorded_requests

from gateway.edges import get_dialect
from gateway.errors import InvalidRequest

pytestmark = pytest.mark.skipif(not CORPUS.is_dir(), reason="corpus not present (TURNSTILE_CORPUS)")


def test_every_recorded_client_request_parses_or_is_refused_as_unsupported() -> None:
    parsed = {"openai_chat": 0, "anthropic_messages": 0}
    unsupported: list[str] = []
    failures: list[str] = []
    refused_upstream = 0
    for rel, i, url, body, status in iter_recorded_requests():
        dialect = dialect_of(url)
        if dialect is None:
            continue
        edge = get_dialect(dialect)
        try:
            req = edge.parse_request(body)
        except InvalidRequest as exc:
            if 400 <= status < 500 and exc.status == 400:
                refused_upstream += 1  # the real upstream refused this body too (recorded 4xx)
            elif "not supported yet" in exc.message and exc.param:
                unsupported.append(f"{rel}#{i}: {exc.message}")
            else:
                failures.append(f"{rel}#{i} ({dialect}): {exc.message}")
            continue
        assert req.messages, f"{rel}#{i}"
        parsed[dialect] += 1
    assert not failures, "\n".join(failures)
    assert parsed["openai_chat"] >= 300
    assert parsed["anthropic_messages"] >= 120
    # the refused ones are Anthropic server tools (computer use, web search, code execution,
    # advisor) and tool-search blocks, nothing else
    allowed = (
        "server tool type",
        "'tool_reference'",
        "'server_tool_use'",
        "'tool_addition'",
        "tool type 'openrouter:",
    )
    odd = [u for u in unsupported if not any(a in u for a in allowed)]
    assert not odd, "\n".join(odd)
    assert len(unsupported) <= 40
