"""The end-to-end harness itself, through an edge every branch has (OpenAI Chat Completions,
the official ``openai`` SDK): the scripted model answers a request offering an agent's tool
with a call of it, the follow-up carrying the tool result with a final answer quoting it, and
the transcript check finds that round trip. So the harness is known to work before the
Responses and Gemini edges land, and a failure in the agent tests is about the edge or agent.
"""

from __future__ import annotations

import json

import openai
from standins.agent_upstream import MARKER, NOTE_TEXT

from .harness import CLIENT_KEY, E2E
from .model_names import REQUESTED

READ_NOTE = {
    "type": "function",
    "function": {"name": "read_note", "description": "Read the note", "parameters": {"type": "object"}},
}


def test_scripted_model_completes_a_tool_loop_through_the_chat_edge(e2e: E2E) -> None:
    client = openai.OpenAI(base_url=f"{e2e.gateway.url}/v1", api_key=CLIENT_KEY, max_retries=0, timeout=30)
    model = REQUESTED["openai-agents"][0]
    messages: list[dict[str, object]] = [{"role": "user", "content": "Read the note."}]
    first = client.chat.completions.create(model=model, messages=messages, tools=[READ_NOTE])  # type: ignore[arg-type]
    calls = first.choices[0].message.tool_calls or []
    assert [c.function.name for c in calls] == ["read_note"]  # type: ignore[union-attr]
    messages.append(first.choices[0].message.model_dump(exclude_none=True))
    messages.append({"role": "tool", "tool_call_id": calls[0].id, "content": NOTE_TEXT})
    with client.chat.completions.stream(model=model, messages=messages, tools=[READ_NOTE]) as stream:  # type: ignore[arg-type]
        final = stream.get_final_completion()

    assert MARKER in (final.choices[0].message.content or "")
    call_row, result_row = e2e.assert_tool_round_trip("read_note")
    assert call_row["client_dialect"] == "openai_chat"
    assert json.loads(result_row["request"])["messages"][-1]["role"] == "tool"
    assert [rule for rule, _ in e2e.upstream.answered] == ["tool_call", "final"]
    assert e2e.upstream.completed_loops() == [("read_note", f"The note says: {NOTE_TEXT.strip()}")]


def test_scripted_model_answers_a_structured_side_request_with_the_smallest_instance(e2e: E2E) -> None:
    client = openai.OpenAI(base_url=f"{e2e.gateway.url}/v1", api_key=CLIENT_KEY, max_retries=0, timeout=30)
    schema = {
        "type": "object",
        "properties": {"complexity_reasoning": {"type": "string"}, "complexity_score": {"type": "integer"}},
        "required": ["complexity_reasoning", "complexity_score"],
    }
    answer = client.chat.completions.create(
        model=REQUESTED["gemini-cli"][0],
        messages=[{"role": "user", "content": "Score this."}],
        response_format={"type": "json_schema", "json_schema": {"name": "score", "schema": schema}},
    )
    assert json.loads(answer.choices[0].message.content or "") == {
        "complexity_reasoning": "simple",
        "complexity_score": 1,
    }
