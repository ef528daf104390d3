"""A Responses upstream's message ``phase`` (gpt-5.x ``commentary`` / ``final_answer``, which
Codex sends back on every assistant message) reaches a Responses client on its output items,
whole and streamed, and goes back upstream when the answer is continued from the gateway's
stored chain (``previous_response_id``); asserted on the client's answer and on what reached the
upstream stand-in."""

from __future__ import annotations

from typing import Any

import openai
import pytest
from standins.responses_answers import answer
from standins.upstream import UpstreamStandin, replay

RS = "rs-gpt-5"


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_the_upstreams_message_phase_reaches_the_responses_client(
    stream: bool, upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    upstream.script(replay(answer([], stream=stream, text="Done.", phase="final_answer", model="gpt-5")))
    if stream:
        with oai.responses.stream(model=RS, input="go", store=False) as s:
            events = list(s)
            final = s.get_final_response()
        added = [e.item for e in events if e.type == "response.output_item.added"]
        assert [getattr(i, "phase", None) for i in added] == ["final_answer"]
    else:
        final = oai.responses.create(model=RS, input="go", store=False)
    (msg,) = [i for i in final.output if i.type == "message"]
    assert msg.phase == "final_answer"


def test_a_stored_answers_phase_goes_back_upstream_with_the_chain(
    upstream: UpstreamStandin, oai: openai.OpenAI
) -> None:
    upstream.script(
        replay(answer([], stream=False, text="Looking.", phase="commentary", model="gpt-5")),
        replay(answer([], stream=False, text="Done.", model="gpt-5")),
    )
    first = oai.responses.create(model=RS, input="go")
    oai.responses.create(model=RS, input="and then?", previous_response_id=first.id)
    sent: list[dict[str, Any]] = upstream.requests()[1].body["input"]
    (item,) = [i for i in sent if i.get("role") == "assistant"]
    assert item["phase"] == "commentary"
