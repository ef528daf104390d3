"""The access layer: a turn's virtual key judged before anything below runs, its principal
and MCP visibility put on the turn, the model checked against the allow lists; without a
``tsk-`` key where keys are optional, nothing changes (a fake inner service stands for the
layers below)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from starlette.datastructures import Headers

from gateway.access.identity import Identity
from gateway.access.sqlite import SqliteAccessStore
from gateway.access.visibility import KeyVisibility
from gateway.config import Settings, parse_config
from gateway.deployments import DeploymentTable
from gateway.errors import AuthenticationRequired, PermissionDenied
from gateway.layers.access import AccessLayer
from gateway.schema import AssistantMessage, Request, Response, TextPart, UserMessage
from gateway.turn import Batches, Gateway, Turn
from mcp_servers.clients import EVERYTHING

ANSWER = Response(
    id="r", model="m", message=AssistantMessage(content=[TextPart(text="ok")]), stop_reason="stop"
)


class Inner:
    """The layers below: records the turns that reached it."""

    def __init__(self) -> None:
        self.turns: list[Turn] = []

    async def complete(self, turn: Turn, request: Request) -> Response:
        self.turns.append(turn)
        return ANSWER

    async def stream(self, turn: Turn, request: Request) -> Batches:
        self.turns.append(turn)
        return _none()


async def _none() -> Batches:
    if False:  # pragma: no cover
        yield []


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqliteAccessStore]:
    s = SqliteAccessStore(tmp_path / "t.db")
    await s.open()
    yield s
    await s.close()


def _layer(identity: Identity | None) -> tuple[AccessLayer, Inner]:
    cfg = parse_config({"deployments": [{"name": "m", "api": "demo", "model": "turnstile-demo"}]})
    gw = Gateway(config=cfg, table=DeploymentTable.build(cfg, Settings(), resolve_prices=False), providers={})
    gw.identity = identity
    inner = Inner()
    return AccessLayer(gw, inner), inner


def _turn(model: str = "m", **headers: str) -> Turn:
    request = Request(model=model, messages=[UserMessage(content=[TextPart(text="hi")])])
    return Turn(request_id="t", dialect="openai_chat", request=request, headers_in=Headers(headers=headers))


@pytest.mark.parametrize("streamed", [False, True])
async def test_a_key_puts_its_principal_and_mcp_visibility_on_the_turn(
    store: SqliteAccessStore, streamed: bool
) -> None:
    team = await store.create_team("t", actor="x")
    key, secret = await store.create_key("k", actor="x", team_id=team.id, mcp=["time"])
    layer, inner = _layer(Identity(store, required=False))
    turn = _turn(authorization=f"Bearer {secret}")
    if streamed:
        await layer.stream(turn, turn.request)
    else:
        await layer.complete(turn, turn.request)
    assert inner.turns == [turn]
    assert turn.principal is not None and (turn.principal.key_id, turn.principal.team_id) == (key.id, team.id)
    assert isinstance(turn.mcp_visibility, KeyVisibility) and turn.mcp_visibility.allows("time__x")


async def test_refusals_stop_the_turn_before_the_layers_below(store: SqliteAccessStore) -> None:
    key, secret = await store.create_key("k", actor="x", models=["other"])
    layer, inner = _layer(Identity(store, required=True))
    with pytest.raises(AuthenticationRequired):
        await layer.complete(_turn(), _turn().request)
    denied = _turn(**{"x-api-key": secret})
    with pytest.raises(PermissionDenied, match="'m'"):
        await layer.complete(denied, denied.request)
    assert denied.principal is not None and denied.principal.key_id == key.id  # for the refused row
    assert inner.turns == []


async def test_without_a_virtual_key_where_keys_are_optional_nothing_changes(
    store: SqliteAccessStore,
) -> None:
    for identity in (Identity(store, required=False), None):
        layer, inner = _layer(identity)
        turn = _turn(authorization="Bearer sk-someone-elses-key")
        await layer.complete(turn, turn.request)
        assert inner.turns == [turn] and turn.principal is None and turn.mcp_visibility is EVERYTHING


async def test_a_principal_the_server_judged_is_not_looked_up_again(store: SqliteAccessStore) -> None:
    _, secret = await store.create_key("k", actor="x")
    identity = Identity(store, required=True)
    principal = await identity.principal(secret)
    calls: list[Any] = []
    identity.admit = lambda *a, **kw: calls.append(a)  # type: ignore[method-assign,assignment,return-value]
    layer, inner = _layer(identity)
    turn = _turn()
    turn.principal = principal
    await layer.complete(turn, turn.request)
    assert calls == [] and inner.turns == [turn]
