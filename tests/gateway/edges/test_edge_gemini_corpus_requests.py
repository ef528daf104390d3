"""Every recorded Gemini ``generateContent`` request body of the client-library cassettes
(pydantic-ai, simonw-llm, fantasy ...) parses through the Gemini edge: the model from the URL,
snake_case and camelCase keys, a single ``tools`` object, ``allowedFunctionNames`` listing every
declared function; only a built-in tool whose results are not relayed (``codeExecution``) is
refused, by name."""

from __future__ import annotations

import re

import pytest
from edges_testkit import CORPUS, FIXTURES, iter_recorded_requests

from gateway.edges import gemini
from gateway.errors import InvalidRequest

_URL = re.compile(r"/models/([^/:?]+):(generateContent|streamGenerateContent)")


def _parse_all(root: object) -> tuple[int, list[str]]:
    """Requests parsed, and the failures: anything but a refusal of a built-in tool whose
    results the gateway does not relay (named, "not supported yet")."""
    parsed = 0
    failures: list[str] = []
    for rel, i, url, body, _status in iter_recorded_requests(root):  # type: ignore[arg-type]
        m = _URL.search(url)
        if m is None:
            continue
        try:
            req = gemini.parse_request(body, model=m.group(1), stream=m.group(2) == "streamGenerateContent")
        except InvalidRequest as exc:
            if not ("not supported yet" in exc.message and "built-in tool" in exc.message and exc.param):
                failures.append(f"{rel}#{i}: {exc.message}")
            continue
        assert req.messages, f"{rel}#{i}"
        parsed += 1
    return parsed, failures


def test_recorded_gemini_requests_in_the_test_fixtures_parse() -> None:
    parsed, failures = _parse_all(FIXTURES)
    assert not failures, "\n".join(failures)
    if parsed == 0:
        pytest.skip("no recorded Gemini client requests among tests/fixtures")


@pytest.mark.skipif(not CORPUS.is_dir(), reason="corpus not present (TURNSTILE_CORPUS)")
def test_every_recorded_gemini_request_in_the_corpus_parses() -> None:
    parsed, failures = _parse_all(CORPUS)
    assert not failures, "\n".join(failures)
    assert parsed >= 69
