"""An OpenAI Chat client's history reaches every upstream without losing what it holds (issue 14,
break-test bt14 findings 7, 8, 19): an assistant ``refusal``, tool-call arguments that are not a
JSON object, a user message without content."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from standins.tool_answers import text_answer
from standins.topology import MATRIX
from standins.upstream import UpstreamStandin, replay

USER: Any = {"role": "user", "content": "q"}
MORE: Any = {"role": "user", "content": "more"}


def _post(gateway_url: str, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(gateway_url + "/v1/chat/completions", json=body, timeout=10)


def _sent(upstream: UpstreamStandin) -> dict[str, Any]:
    (got,) = upstream.requests()
    return got.body  # type: ignore[no-any-return]


@pytest.mark.parametrize("content", ["C1", None])
def test_an_assistant_refusal_reaches_openai_chat_as_its_own_key(
    content: str | None, upstream: UpstreamStandin, gateway_url: str
) -> None:
    upstream.script(replay(text_answer("openai_chat", "ok", stream=False)))
    assistant = {"role": "assistant", "content": content, "refusal": "R1"}
    r = _post(gateway_url, {"model": MATRIX["openai_chat"][0], "messages": [USER, assistant, MORE]})
    assert r.status_code == 200, r.text
    sent = _sent(upstream)["messages"][1]
    assert sent["refusal"] == "R1" and sent.get("content") == content


def test_an_assistant_refusal_beside_content_reaches_another_wire_api_as_text(
    upstream: UpstreamStandin, gateway_url: str
) -> None:
    upstream.script(replay(text_answer("anthropic_messages", "ok", stream=False)))
    assistant = {"role": "assistant", "content": "C1", "refusal": "R1"}
    r = _post(gateway_url, {"model": MATRIX["anthropic_messages"][0], "messages": [USER, assistant, MORE]})
    assert r.status_code == 200, r.text
    blocks = _sent(upstream)["messages"][1]["content"]
    texts = [blocks] if isinstance(blocks, str) else [b["text"] for b in blocks]
    assert "".join(texts).count("C1") == 1 and "".join(texts).count("R1") == 1
