"""The guards layer: a session-bound turn may send a tool result without its call (the session
holds it; the session layer pairs it), every other pairing rule holds as for any turn, and an
unbound turn is refused for it (a fake inner service stands for the layers below)."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.config import Settings, parse_config
from gateway.deployments import DeploymentTable
from gateway.errors import GuardViolation
from gateway.layers.guards import GuardLayer
from gateway.schema import (
    AssistantMessage,
    Message,
    Request,
    Response,
    TextPart,
    ToolCallPart,
    ToolResultMessage,
    UserMessage,
)
from gateway.turn import Batches, Gateway, Turn

CONFIG: dict[str, Any] = {"deployments": [{"name": "m", "api": "openai_chat", "model": "m"}]}
ANSWER = Response(
    id="r", model="m", message=AssistantMessage(content=[TextPart(text="ok")]), stop_reason="stop"
)


class Inner:
    """The layers below: keeps the request handed down."""

    def __init__(self) -> None:
        self.got: list[Request] = []

    async def complete(self, turn: Turn, request: Request) -> Response:
        self.got.append(request)
        return ANSWER

    async def stream(self, turn: Turn, request: Request) -> Batches:
        raise NotImplementedError


def _layer(*, sessions: bool) -> tuple[GuardLayer, Inner]:
    cfg = parse_config(CONFIG)
    gw = Gateway(config=cfg, table=DeploymentTable.build(cfg, Settings(), resolve_prices=False), providers={})
    if sessions:
        gw.sessions = object()  # type: ignore[assignment]  # a store is configured (not read here)
    inner = Inner()
    return GuardLayer(gw, inner), inner


def _turn(*messages: Message, session: str | None) -> Turn:
    request = Request(model="m", messages=list(messages))
    return Turn(request_id="t", dialect="openai_chat", request=request, session_id=session)


def result(call_id: str) -> ToolResultMessage:
    return ToolResultMessage(tool_call_id=call_id, content=[TextPart(text="r")], src="messages[0]")


def call_message(call_id: str) -> AssistantMessage:
    return AssistantMessage(content=[ToolCallPart(id=call_id, name="f", arguments={}, raw_arguments="{}")])


async def test_a_bound_turns_tool_result_without_its_call_goes_down_unchanged() -> None:
    layer, inner = _layer(sessions=True)
    turn = _turn(result("call_1"), UserMessage(content=[TextPart(text="and?")]), session="s")
    await layer.complete(turn, turn.request)
    assert inner.got[0].messages == turn.request.messages


async def test_a_bound_turns_reordered_request_keeps_its_deferred_result_in_place() -> None:
    layer, inner = _layer(sessions=True)
    # the request's own result is moved after its call; the deferred result stays first
    late = ToolResultMessage(tool_call_id="call_new", content=[TextPart(text="r")])
    turn = _turn(
        result("call_old"),
        call_message("call_new"),
        UserMessage(content=[TextPart(text="hm")]),
        late,
        session="s",
    )
    await layer.complete(turn, turn.request)
    got = inner.got[0].messages
    assert [type(m).__name__ for m in got] == [
        "ToolResultMessage",
        "AssistantMessage",
        "ToolResultMessage",
        "UserMessage",
    ]
    assert [m.tool_call_id for m in got if isinstance(m, ToolResultMessage)] == ["call_old", "call_new"]
    assert [r["code"] for r in turn.repairs] == ["result_not_adjacent"]


@pytest.mark.parametrize(
    ("session", "sessions"), [(None, True), ("s", False)], ids=["unbound", "no-session-store"]
)
async def test_a_tool_result_without_its_call_is_refused_unless_a_session_holds_the_history(
    session: str | None, sessions: bool
) -> None:
    layer, inner = _layer(sessions=sessions)
    turn = _turn(result("call_1"), session=session)
    with pytest.raises(GuardViolation) as err:
        await layer.complete(turn, turn.request)
    assert [p.code for p in err.value.problems] == ["orphan_tool_result"]
    assert turn.guard_outcome == "rejected" and inner.got == []


async def test_a_bound_turns_result_before_its_call_and_second_result_are_still_refused() -> None:
    layer, _ = _layer(sessions=True)
    turn = _turn(result("call_1"), call_message("call_1"), result("call_1"), result("call_1"), session="s")
    with pytest.raises(GuardViolation) as err:
        await layer.complete(turn, turn.request)
    assert {p.code for p in err.value.problems} == {"result_before_call", "duplicate_tool_result"}
