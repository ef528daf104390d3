"""The Anthropic edge's ``thread`` field: parsed by name, continued with the thread's system
prompt, tools and history, a changed create-only field refused, the answer id the thread's, and
the thread errors carrying ``error.details.error_code`` where the SDK reads it."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from gateway.edges import anthropic_messages as edge
from gateway.edges.anthropic_messages_thread import Thread, ThreadedRequest
from gateway.errors import InvalidRequest, ThreadFingerprintMismatch, ThreadNotFound, ThreadUnsupported
from gateway.schema import (
    AssistantMessage,
    Response,
    SystemMessage,
    TextPart,
    ToolDefinition,
    Usage,
    UserMessage,
)

TOOL = {"name": "get_weather", "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}


def _parse(**fields: Any) -> Any:
    body = {"model": "an", "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}], **fields}
    return edge.parse_request(orjson.dumps(body))


def test_a_request_without_thread_is_a_plain_request() -> None:
    assert type(_parse()) is not ThreadedRequest
    assert edge.thread_of(_parse(thread=None)) is None


def test_create_and_continue_are_parsed() -> None:
    assert edge.thread_of(_parse(thread={"type": "create"})) == Thread(kind="create")
    cont = edge.thread_of(_parse(thread={"type": "continue", "previous_message_id": "msg_x"}))
    assert cont == Thread(kind="continue", previous_message_id="msg_x")


@pytest.mark.parametrize(
    ("thread", "param"),
    [
        ("create", "thread"),
        ({"type": "fork"}, "thread.type"),
        ({"type": "continue"}, "thread.previous_message_id"),
        ({"type": "continue", "previous_message_id": ""}, "thread.previous_message_id"),
        ({"type": "create", "previous_message_id": "msg_x"}, "thread.previous_message_id"),
        ({"type": "create", "ttl": 5}, "thread.ttl"),
    ],
)
def test_a_malformed_thread_is_refused_naming_the_field(thread: object, param: str) -> None:
    with pytest.raises(InvalidRequest) as err:
        _parse(thread=thread)
    assert err.value.param == param


def test_count_tokens_refuses_a_thread_by_name() -> None:
    body = {"model": "an", "messages": [{"role": "user", "content": "hi"}], "thread": {"type": "create"}}
    with pytest.raises(InvalidRequest) as err:
        edge.parse_count_tokens(orjson.dumps(body))
    assert err.value.param == "thread"


SYSTEM = [SystemMessage(content=[TextPart(text="Be brief.")])]
TOOLS = [ToolDefinition(name="get_weather", parameters=TOOL["input_schema"])]
HISTORY = [UserMessage(content=[TextPart(text="Q1")]), AssistantMessage(content=[TextPart(text="A1")])]


def _continued(request: Any) -> Any:
    return edge.continued(request, "msg_new", system=SYSTEM, tools=TOOLS, mcp_servers=[], history=HISTORY)


def test_a_continue_gets_the_threads_system_tools_and_history_before_its_new_messages() -> None:
    got = _continued(_parse(thread={"type": "continue", "previous_message_id": "msg_old"}))
    assert [m.role for m in got.messages] == ["system", "user", "assistant", "user"]
    assert got.messages[0].src == "system"
    assert got.tools == TOOLS
    assert edge.thread_of(got).message_id == "msg_new"


def test_a_continue_may_repeat_system_and_tools_unchanged_but_not_change_them() -> None:
    cont = {"type": "continue", "previous_message_id": "msg_old"}
    same = _continued(_parse(thread=cont, system="Be brief.", tools=[TOOL]))
    assert [m.role for m in same.messages] == ["system", "user", "assistant", "user"]
    with pytest.raises(ThreadFingerprintMismatch) as err:
        _continued(_parse(thread=cont, system="Be verbose."))
    assert (err.value.param, err.value.error_code) == ("system", "thread_fingerprint_mismatch")
    with pytest.raises(ThreadFingerprintMismatch) as err:
        _continued(_parse(thread=cont, tools=[{**TOOL, "name": "other"}]))
    assert err.value.param == "tools"


def test_the_answer_carries_the_threads_message_id_whole_and_streamed() -> None:
    request = edge.created(_parse(thread={"type": "create"}), "msg_thread")
    resp = Response(
        id="upstream-id",
        model="m",
        message=AssistantMessage(content=[TextPart(text="ok")]),
        stop_reason="stop",
        usage=Usage(),
    )
    assert edge.render_response(resp, request)["id"] == "msg_thread"
    assert edge.render_response(resp, _parse())["id"] == "msg_upstream-id"
    from gateway.schema import MessageStart

    frames = edge.StreamRenderer(request).render(MessageStart(id="upstream-id", model="m"))
    assert b'"id":"msg_thread"' in b"".join(frames)


@pytest.mark.parametrize(
    ("err", "status", "kind", "code"),
    [
        (ThreadNotFound("no thread"), 404, "not_found_error", "thread_not_found"),
        (ThreadUnsupported("off"), 400, "invalid_request_error", "thread_unsupported_request"),
        (ThreadFingerprintMismatch("changed"), 400, "invalid_request_error", "thread_fingerprint_mismatch"),
    ],
)
def test_thread_errors_carry_the_error_code_in_error_details(
    err: Any, status: int, kind: str, code: str
) -> None:
    got_status, body = edge.render_error(err)
    assert got_status == status
    assert body["error"]["type"] == kind
    assert body["error"]["details"] == {"error_code": code}


def test_other_errors_have_no_details() -> None:
    assert "details" not in edge.render_error(InvalidRequest("bad", param="x"))[1]["error"]


def test_a_system_message_inside_messages_cannot_be_held_in_a_thread() -> None:
    messages = [{"role": "user", "content": "hi"}, {"role": "system", "content": "Now in French."}]
    request = _parse(thread={"type": "create"}, system="Be brief.", messages=messages)
    with pytest.raises(ThreadUnsupported) as err:
        edge.check_threadable(request)
    assert err.value.param == "messages[1]"
    assert err.value.error_code == "thread_unsupported_request"
    edge.check_threadable(_parse(thread={"type": "create"}, system="Be brief."))  # the top-level one is kept
