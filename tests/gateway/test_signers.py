"""Settling who signed thinking that arrives without its model (handed case C16, raw form)."""

from __future__ import annotations

from gateway.config import Deployment
from gateway.schema import (
    AssistantMessage,
    Provenance,
    Request,
    Response,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    UserMessage,
)
from gateway.signers import UNKNOWN_MODEL, SignerMemory, resolve

A = Deployment(name="a", api="anthropic_messages", model="model-a")
B = Deployment(name="b", api="anthropic_messages", model="model-b")
RAW = Provenance(api="anthropic_messages", provider="anthropic", model="")


def _request(sig: str = "SIG_A_opaque") -> Request:
    thinking = ThinkingPart(text="Need the price tool.", signature=sig, provenance=RAW)
    call = ToolCallPart(id="toolu_k1", name="get_price", raw_arguments="{}")
    return Request(
        model="auto",
        messages=[UserMessage(content=[TextPart(text="Price?")]), AssistantMessage(content=[thinking, call])],
    )


def _signer_of(req: Request) -> str:
    part = req.messages[1].content[0]
    assert isinstance(part, ThinkingPart) and part.provenance is not None
    return part.provenance.model


def test_a_signature_the_gateway_returned_is_tied_to_the_model_that_signed_it() -> None:
    memory = SignerMemory()
    signed = ThinkingPart(
        text="x",
        signature="SIG_A_opaque",
        provenance=Provenance(api="anthropic_messages", provider="anthropic", model="model-a"),
    )
    memory.remember(
        Response(id="r", model="model-a", message=AssistantMessage(content=[signed]), stop_reason="tool_use")
    )
    assert _signer_of(resolve(_request(), [B, A], memory)) == "model-a"


def test_an_unknown_raw_signature_with_two_candidate_models_matches_neither() -> None:
    assert _signer_of(resolve(_request(), [B, A], SignerMemory())) == UNKNOWN_MODEL


def test_an_unknown_raw_signature_with_one_candidate_model_is_that_models() -> None:
    assert _signer_of(resolve(_request(), [A], SignerMemory())) == "model-a"


def test_memory_is_bounded() -> None:
    memory = SignerMemory(capacity=2)
    for i in range(3):
        part = ThinkingPart(
            text="x",
            signature=f"s{i}",
            provenance=Provenance(api="anthropic_messages", provider="anthropic", model="m"),
        )
        memory.remember(
            Response(id="r", model="m", message=AssistantMessage(content=[part]), stop_reason="stop")
        )
    assert memory.lookup("s0") is None and memory.lookup("s2") is not None


def test_request_without_raw_signatures_is_returned_unchanged() -> None:
    req = Request(model="m", messages=[UserMessage(content=[TextPart(text="hi")])])
    assert resolve(req, [A, B], SignerMemory()) is req
