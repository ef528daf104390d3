"""Session stickiness: cache-aware switching, and never leaving an open signed tool loop (C16)."""

from __future__ import annotations

from helpers_routing import CHEAP_PRICE, STRONG_PRICE, cand

from gateway.config import Price
from gateway.schema import (
    AssistantMessage,
    Provenance,
    Request,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolDefinition,
    ToolResultMessage,
    UserMessage,
)
from routers.base import Decision
from routers.features import extract
from routers.sticky import apply

A = Provenance(api="anthropic_messages", provider="anthropic", model="model-a")


def _session(history_chars: int, *, signed: bool, open_loop: bool) -> Request:
    parts: list = [TextPart(text="x" * history_chars)]
    if signed:
        parts.insert(0, ThinkingPart(text="Need the price tool.", signature="SIG_A_opaque", provenance=A))
    msgs: list = [UserMessage(content=[TextPart(text="Price of SKU X1?")])]
    if open_loop:
        parts.append(
            ToolCallPart(id="toolu_k1", name="get_price", raw_arguments='{"sku":"X1"}', provenance=A)
        )
        msgs += [
            AssistantMessage(content=parts),
            ToolResultMessage(tool_call_id="toolu_k1", content=[TextPart(text="9.99")]),
        ]
    else:
        msgs += [AssistantMessage(content=parts), UserMessage(content=[TextPart(text="and X2?")])]
    return Request(model="auto", messages=msgs, tools=[ToolDefinition(name="get_price")])


def _cands(price_a: Price, price_b: Price) -> list:
    return [
        cand("model-A", "cheap", 0, price_a, model="model-a"),
        cand("model-B", "cheap", 0, price_b, model="model-b"),
    ]


def test_c16_open_signed_tool_loop_is_never_switched_even_when_the_other_model_is_cheaper() -> None:
    cands = _cands(STRONG_PRICE, CHEAP_PRICE)
    f = extract(_session(100, signed=True, open_loop=True))
    proposal = Decision(deployment="model-B", fallbacks=("model-A",), reason="rules: x")
    d = apply(proposal, f, cands, horizon=100)
    assert d.deployment == "model-A" and d.fallbacks == ("model-B",)
    assert "open tool loop with signed thinking" in d.reason


def test_c16_stronger_tier_does_not_break_an_open_signed_loop_either() -> None:
    cands = [
        cand("model-A", "cheap", 0, CHEAP_PRICE, model="model-a"),
        cand("model-B", "strong", 1, STRONG_PRICE, model="model-b"),
    ]
    f = extract(_session(100, signed=True, open_loop=True))
    d = apply(Decision(deployment="model-B", fallbacks=("model-A",)), f, cands, horizon=3)
    assert d.deployment == "model-A"


def test_a_long_warm_history_stays_when_the_saving_does_not_cover_the_cold_cache() -> None:
    # same tier; B is a little cheaper, but 400k chars of warm history would be re-read uncached
    cheaper = Price(input=2.5, output=12.0, cache_read=0.25)
    f = extract(_session(400_000, signed=False, open_loop=False), current=A)
    d = apply(
        Decision(deployment="model-B", fallbacks=("model-A",), reason="r"),
        f,
        _cands(STRONG_PRICE, cheaper),
        horizon=3,
    )
    assert d.deployment == "model-A" and "sticky on model-A" in d.reason


def test_a_short_history_switches_when_the_saving_pays_for_it() -> None:
    f = extract(_session(200, signed=False, open_loop=False), current=A)
    d = apply(
        Decision(deployment="model-B", fallbacks=("model-A",), reason="r"),
        f,
        _cands(STRONG_PRICE, CHEAP_PRICE),
        horizon=3,
    )
    assert d.deployment == "model-B" and "switch pays" in d.reason


def test_escalating_to_a_stronger_tier_is_not_blocked_by_cache_warmth() -> None:
    cands = [
        cand("model-A", "cheap", 0, CHEAP_PRICE, model="model-a"),
        cand("model-B", "strong", 1, STRONG_PRICE, model="model-b"),
    ]
    f = extract(_session(400_000, signed=False, open_loop=False), current=A)
    d = apply(Decision(deployment="model-B", fallbacks=("model-A",), reason="r"), f, cands, horizon=3)
    assert d.deployment == "model-B" and "escalates" in d.reason


def test_no_current_model_means_nothing_to_stick_to() -> None:
    f = extract(Request(model="auto", messages=[UserMessage(content=[TextPart(text="hi")])]))
    proposal = Decision(deployment="model-B", fallbacks=("model-A",))
    assert apply(proposal, f, _cands(STRONG_PRICE, CHEAP_PRICE), horizon=3) is proposal


def test_a_decision_kept_on_the_current_model_reports_that_models_tier() -> None:
    cands = [
        cand("model-A", "strong", 1, STRONG_PRICE, model="model-a"),
        cand("model-B", "cheap", 0, Price(input=2.5, output=12.0, cache_read=0.25), model="model-b"),
    ]
    f = extract(_session(400_000, signed=False, open_loop=False), current=A)
    d = apply(Decision(deployment="model-B", fallbacks=("model-A",), tier="cheap"), f, cands, horizon=3)
    assert (d.deployment, d.tier) == ("model-A", "strong")
    f = extract(_session(100, signed=True, open_loop=True))
    d = apply(Decision(deployment="model-B", fallbacks=("model-A",), tier="cheap"), f, cands, horizon=3)
    assert (d.deployment, d.tier) == ("model-A", "strong")
