"""The server-side tool loop over streams (gateway/tool_loop_stream.py): while the gateway's
tools run, keep-alives (``ToolProgress`` with ``done`` False) go to the client every
``keepalive_s`` seconds with nothing else to send, then the finished calls' progress and the
results; every edge renders the keep-alive (the Responses edge as ``response.in_progress``, the
data event Codex CLI's idle timer counts)."""

from __future__ import annotations

import asyncio

import orjson

from gateway.edges import anthropic_messages, gemini, openai_chat, openai_responses
from gateway.schema import AssistantMessage, Response, TextPart, ToolCallPart, ToolProgress, ToolResultMessage
from gateway.tool_loop import Step, ToolLoop
from gateway.tool_loop_stream import _progress


async def test_keep_alives_flow_while_a_tool_runs_then_its_progress_and_the_results() -> None:
    keepalives = 0
    release = asyncio.Event()

    async def slow_tool(c: ToolCallPart) -> ToolResultMessage:
        await asyncio.wait_for(release.wait(), 5)  # freed once two keep-alives went out
        return ToolResultMessage(tool_call_id=c.id, name=c.name, content=[TextPart(text="done")])

    call = ToolCallPart(id="call_1", name="slow__run", arguments={}, raw_arguments="{}")
    assistant = AssistantMessage(content=[call])
    response = Response(id="r", model="m", message=assistant, stop_reason="tool_use")
    loop = ToolLoop(
        loop_tools=frozenset({"slow__run"}), client_tools=frozenset(), runner=slow_tool, keepalive_s=0.01
    )
    items = []
    async for item in _progress(loop, Step("tools", response, assistant, [call])):
        items.append(item)
        if isinstance(item, ToolProgress) and not item.done:
            keepalives += 1
            if keepalives == 2:
                release.set()
    assert keepalives >= 2
    progress = [i for i in items if isinstance(i, ToolProgress) and i.done]
    assert [(p.id, p.name) for p in progress] == [("call_1", "slow__run")]
    assert isinstance(items[-1], list) and items[-1][0].tool_call_id == "call_1"


def test_every_edge_renders_a_keep_alive() -> None:
    body = orjson.dumps({"model": "m", "input": "hi", "stream": True})
    responses = openai_responses.StreamRenderer(openai_responses.parse_request(body))
    first = responses.ping()  # before anything else: the response starts
    assert b"response.created" in first and b"response.in_progress" in first
    again = responses.ping()
    assert again.startswith(b"event: response.in_progress\n") and b'"sequence_number":2' in again
    chat_body = orjson.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True})
    assert openai_chat.StreamRenderer(openai_chat.parse_request(chat_body)).ping() == b": ping\n\n"
    anthropic_body = orjson.dumps(
        {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}], "stream": True}
    )
    renderer = anthropic_messages.StreamRenderer(anthropic_messages.parse_request(anthropic_body))
    assert renderer.ping() == anthropic_messages.ping_frame()
    gemini_body = orjson.dumps({"contents": [{"role": "user", "parts": [{"text": "hi"}]}]})
    gemini_request = gemini.parse_request(gemini_body, model="m", stream=True)
    assert gemini.StreamRenderer(gemini_request).ping() == gemini.ping_frame()
