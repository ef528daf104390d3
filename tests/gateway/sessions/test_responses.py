"""Stored responses as sessions: a response opens its session (a fork of the previous one's at
its leaf), reads back its answer and its own input items, and a delete is a label, never a
removal."""

from __future__ import annotations

import pytest

from gateway.errors import ResponseNotFound
from gateway.schema import AssistantMessage, TextPart, UserMessage
from gateway.sessions import responses
from gateway.sessions.model import MessagePayload
from gateway.sessions.store import SqlSessionStore


def _user(text: str) -> MessagePayload:
    return MessagePayload(message=UserMessage(content=[TextPart(text=text)]))


def _answer(text: str) -> MessagePayload:
    return MessagePayload(message=AssistantMessage(content=[TextPart(text=text)]))


async def _turn(store: SqlSessionStore, previous: str | None, question: str, answer: str) -> str:
    """What a stored turn does: open the response session, append question and answer."""
    rid = responses.new_response_id()
    await responses.open_response(store, rid, "model-x", previous)
    await store.append_many(rid, [("message", _user(question)), ("message", _answer(answer))])
    return rid


async def test_a_response_reads_back_its_answer_and_its_own_inputs(store: SqlSessionStore) -> None:
    rid = await _turn(store, None, "Q1", "A1")
    got = await responses.load(store, rid)
    assert got.model == "model-x"
    assert got.answer.text == "A1"
    assert [m.content[0].text for _, m in got.inputs] == ["Q1"]


async def test_a_continuation_is_a_fork_and_two_continuations_are_branches(store: SqlSessionStore) -> None:
    r1 = await _turn(store, None, "Q1", "A1")
    history = await responses.open_response(store, "resp_" + "b" * 32, "m", r1)
    assert [m.content[0].text for m in history] == ["Q1", "A1"]
    r2 = await _turn(store, r1, "Q2", "A2")
    r3 = await _turn(store, r1, "Q3", "A3")
    two, three = await responses.load(store, r2), await responses.load(store, r3)
    assert [m.content[0].text for m in two.history] == ["Q1", "A1", "Q2", "A2"]
    assert [m.content[0].text for m in three.history] == ["Q1", "A1", "Q3", "A3"]
    assert [m.content[0].text for _, m in three.inputs] == ["Q3"]
    assert (await responses.load(store, r1)).answer.text == "A1", "the previous response is unchanged"


async def test_delete_is_a_label_and_the_id_is_then_unknown(store: SqlSessionStore) -> None:
    rid = await _turn(store, None, "Q", "A")
    await responses.delete(store, rid)
    with pytest.raises(ResponseNotFound):
        await responses.load(store, rid)
    with pytest.raises(ResponseNotFound):
        await responses.open_response(store, responses.new_response_id(), "m", rid)
    assert [e.type for e in await store.entries(rid)] == ["message", "message", "label"], "nothing removed"


@pytest.mark.parametrize("rid", ["resp_missing", "not-a-response", "resp_" + "c" * 32])
async def test_unknown_ids_are_not_found(store: SqlSessionStore, rid: str) -> None:
    with pytest.raises(ResponseNotFound) as err:
        await responses.load(store, rid)
    assert rid in err.value.message and err.value.status == 404


async def test_a_response_whose_turn_stored_no_answer_is_not_found(store: SqlSessionStore) -> None:
    rid = responses.new_response_id()
    await responses.open_response(store, rid, "m", None)
    await store.append(rid, "message", _user("Q"))
    with pytest.raises(ResponseNotFound):
        await responses.load(store, rid)


async def test_a_continuation_whose_turn_stored_nothing_does_not_show_the_previous_answer(
    store: SqlSessionStore,
) -> None:
    r1 = await _turn(store, None, "Q1", "A1")
    refused = responses.new_response_id()
    await responses.open_response(store, refused, "m", r1)  # then the guards refused the turn
    with pytest.raises(ResponseNotFound):
        await responses.load(store, refused)
