"""Anthropic message threads as sessions: a thread's first answer opens a session whose
``thread`` entry keeps the system prompt and tools, a continuation is a fork at the previous
answer, the context is rebuilt from the log (the ``thread`` entry is no message of it), and
every id that is no thread answer is ``thread_not_found``."""

from __future__ import annotations

import pytest

from gateway.config import Deployment
from gateway.errors import ThreadNotFound
from gateway.schema import (
    AssistantMessage,
    Request,
    SystemMessage,
    TextPart,
    ToolCallPart,
    ToolDefinition,
    ToolResultMessage,
    UserMessage,
)
from gateway.sessions import responses, threads
from gateway.sessions.model import MessagePayload, ThreadPayload
from gateway.sessions.store import SqlSessionStore
from gateway.sessions.turns import record_request, view_for

SETTINGS = ThreadPayload(
    system=[SystemMessage(content=[TextPart(text="Be brief.")])],
    tools=[ToolDefinition(name="get_weather", parameters={"type": "object", "properties": {}})],
    mcp_servers=["time"],
)
CALL = ToolCallPart(id="toolu_1", name="get_weather", arguments={"city": "Paris"})


def _user(text: str) -> MessagePayload:
    return MessagePayload(message=UserMessage(content=[TextPart(text=text)]))


def _answer(text: str) -> MessagePayload:
    return MessagePayload(message=AssistantMessage(content=[TextPart(text=text)]))


def _texts(history: list[object]) -> list[str]:
    return [m.content[0].text for m in history if not isinstance(m, ToolResultMessage)]  # type: ignore[attr-defined]


async def _first(store: SqlSessionStore, question: str, answer: str) -> str:
    """What a ``create`` turn does: open the thread's session, then the session layer appends
    the question and the answer."""
    mid = threads.new_message_id()
    await threads.create(store, mid, "model-x", SETTINGS)
    await store.append_many(mid, [("message", _user(question)), ("message", _answer(answer))])
    return mid


async def _next(store: SqlSessionStore, previous: str, question: str, answer: str) -> str:
    """What a ``continue`` turn does: fork the previous answer's session, append the turn."""
    mid = threads.new_message_id()
    await threads.continue_from(store, mid, "model-x", await threads.load(store, previous))
    await store.append_many(mid, [("message", _user(question)), ("message", _answer(answer))])
    return mid


async def test_a_new_thread_keeps_its_system_prompt_and_tools_in_a_thread_entry(
    store: SqlSessionStore,
) -> None:
    mid = await _first(store, "Q1", "A1")
    got = await threads.load(store, mid)
    assert got.settings == SETTINGS
    assert _texts(got.history) == ["Q1", "A1"]
    assert [e.type for e in await store.entries(mid)] == ["thread", "message", "message"]
    assert (await store.get_session(mid)).title == "model-x"


async def test_a_continuation_is_a_fork_and_two_continuations_are_branches(store: SqlSessionStore) -> None:
    m1 = await _first(store, "Q1", "A1")
    m2 = await _next(store, m1, "Q2", "A2")
    m3 = await _next(store, m1, "Q3", "A3")
    two, three = await threads.load(store, m2), await threads.load(store, m3)
    assert _texts(two.history) == ["Q1", "A1", "Q2", "A2"]
    assert _texts(three.history) == ["Q1", "A1", "Q3", "A3"]
    assert two.settings == SETTINGS, "the settings come from the thread entry up the chain"
    assert _texts((await threads.load(store, m1)).history) == ["Q1", "A1"], "the previous turn is unchanged"
    assert [e.type for e in await store.entries(m2)] == ["message", "message"], "nothing copied"


async def test_ids_that_are_no_thread_answer_are_thread_not_found(store: SqlSessionStore) -> None:
    m1 = await _first(store, "Q1", "A1")
    unanswered = threads.new_message_id()
    await threads.continue_from(store, unanswered, "m", await threads.load(store, m1))
    await store.append(unanswered, "message", _user("Q2"))  # its turn failed: no answer of its own
    rid = responses.new_response_id()
    await responses.open_response(store, rid, "m", None)
    await store.append_many(rid, [("message", _user("Q")), ("message", _answer("A"))])
    await store.append_many("msg_plain_session", [("message", _user("Q")), ("message", _answer("A"))])
    for unknown in ("msg_" + "0" * 32, unanswered, rid, "msg_plain_session", "not-a-message-id"):
        with pytest.raises(ThreadNotFound) as err:
            await threads.load(store, unknown)
        assert err.value.error_code == "thread_not_found"
        assert err.value.status == 404
        assert err.value.param == "thread.previous_message_id"
        assert repr(unknown) in err.value.message


async def test_the_context_is_rebuilt_from_the_log_without_the_thread_entry(store: SqlSessionStore) -> None:
    m1 = threads.new_message_id()
    await threads.create(store, m1, "model-x", SETTINGS)
    call = AssistantMessage(content=[CALL])
    await store.append_many(m1, [("message", _user("Weather?")), ("message", MessagePayload(message=call))])
    previous = await threads.load(store, m1)
    m2 = threads.new_message_id()
    await threads.continue_from(store, m2, "model-x", previous)
    result = ToolResultMessage(tool_call_id="toolu_1", content=[TextPart(text="sunny")])
    # the request as the server fills it: the thread's system, its history, the new tool result
    request = Request(model="x", messages=[*SETTINGS.system, *previous.history, result], tools=SETTINGS.tools)
    recorded = await record_request(store, m2, request)
    assert recorded.appended == 1, "only the tool result is new to the log"
    dep = Deployment(name="small", api="demo", model="turnstile-demo", context_window=100_000)
    view = await view_for(store, m2, request, dep, leaf=recorded.leaf)
    assert [type(m).__name__ for m in view.messages] == [
        "SystemMessage",
        "UserMessage",
        "AssistantMessage",
        "ToolResultMessage",
    ]
