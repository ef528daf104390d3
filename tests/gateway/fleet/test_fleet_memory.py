"""The thinking and signer memories shared between instances (:mod:`gateway.fleet.memory`):
what one instance remembered is restored by another."""

from __future__ import annotations

from collections.abc import Callable

from gateway.fleet.link import RedisLink
from gateway.fleet.memory import SharedMemory
from gateway.schema import (
    AssistantMessage,
    Provenance,
    Request,
    Response,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultMessage,
    UserMessage,
)
from gateway.signers import SignerMemory, resolve
from gateway.thinking_memory import ThinkingMemory

CLAUDE = Provenance(api="anthropic_messages", provider="anthropic", model="claude-sonnet-4")
THOUGHT = ThinkingPart(text="Need the weather tool.", signature="SIG1", provenance=CLAUDE)
CALL = ToolCallPart(id="toolu_1", name="weather", arguments={"location": "Florence"}, raw_arguments="{}")
ANSWER = Response(
    id="m", model="c", message=AssistantMessage(content=[THOUGHT, CALL]), stop_reason="tool_use"
)


def _instance(make: Callable[[], RedisLink]) -> SharedMemory:
    shared = SharedMemory(make(), ThinkingMemory(), SignerMemory())
    shared.start()
    return shared


def _next_request(*assistant: object) -> Request:
    return Request(
        model="an",
        messages=[
            UserMessage(content=[TextPart(text="Weather in Florence?")]),
            AssistantMessage(content=list(assistant)),  # type: ignore[arg-type]
            ToolResultMessage(tool_call_id=CALL.id, content=[TextPart(text="40 C")]),
        ],
    )


async def test_signed_thinking_remembered_on_one_instance_is_restored_on_another(links) -> None:
    one, other = _instance(links), _instance(links)
    one.thinking.remember(ANSWER)
    await one.close()  # the write is out
    request = _next_request(CALL)  # the client dropped the thinking
    assert other.thinking.missing(request) == ["toolu_1"]
    await other.prefetch(request)
    restored, repairs = other.thinking.restore(request)
    assert len(repairs) == 1
    assert restored.messages[1].content == [THOUGHT, CALL]  # type: ignore[union-attr]


async def test_an_id_found_nowhere_is_not_asked_again(links) -> None:
    other = _instance(links)
    request = _next_request(CALL)
    asked: list[object] = []
    real = other.link.client.mget

    async def counting(keys: list[str]) -> object:
        asked.append(keys)
        return await real(keys)

    other.link.client.mget = counting  # type: ignore[method-assign]
    await other.prefetch(request)
    await other.prefetch(request)
    assert len(asked) == 1


async def test_a_signer_seen_on_one_instance_settles_a_raw_signature_on_another(links) -> None:
    one, other = _instance(links), _instance(links)
    one.signers.remember(ANSWER)
    await one.close()
    unknown = Provenance(api="anthropic_messages", provider="anthropic")
    raw = THOUGHT.model_copy(update={"provenance": unknown})
    request = _next_request(raw, CALL)
    await other.prefetch(request)
    settled = resolve(request, [], other.signers)
    assert settled.messages[1].content[0].provenance == CLAUDE  # type: ignore[union-attr]
