"""The official ``openai`` SDK (Chat Completions) through the gateway to every upstream API."""

from __future__ import annotations

import openai
import pytest
from standins.upstream import UpstreamStandin

from .conftest import MODEL_FOR
from .scripts import only, say, user_texts

APIS = list(MODEL_FOR)


@pytest.mark.compat(
    client="openai",
    scenario="chat.completions.create",
    checks="the user text reaches the upstream; the answer's text comes back",
)
@pytest.mark.parametrize("api", APIS)
def test_chat_completion_reaches_each_upstream_with_the_user_text(
    api: str, oai: openai.OpenAI, upstream: UpstreamStandin
) -> None:
    say(upstream, api, "hello from upstream")
    got = oai.chat.completions.create(
        model=MODEL_FOR[api], messages=[{"role": "user", "content": "hi there"}]
    )
    assert got.choices[0].message.content == "hello from upstream"
    (rec,) = only(upstream, api)
    assert user_texts(rec) == ["hi there"]
