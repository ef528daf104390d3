"""Candidate filtering by window, capabilities and health."""

from __future__ import annotations

from helpers_routing import CHEAP_PRICE, STRONG_PRICE, cand

from gateway.schema import ImagePart, Request, ResponseFormat, TextPart, UserMessage
from routers.features import extract
from routers.fit import filter_candidates, misfit


def _req(chars: int, **kw: object) -> Request:
    return Request(model="auto", messages=[UserMessage(content=[TextPart(text="x" * chars)])], **kw)  # type: ignore[arg-type]


def test_window_counts_the_reserved_output() -> None:
    small = cand("small", "cheap", 0, CHEAP_PRICE, window=10_000)
    assert misfit(extract(_req(36_000)), small) is None  # 9000 tokens
    why = misfit(extract(_req(36_000, max_output_tokens=2000)), small)
    assert why == "context 9000+2000 > window 10000"


def test_capabilities_exclude_and_nothing_fitting_keeps_everyone_for_the_precise_error() -> None:
    blind = cand("blind", "cheap", 0, CHEAP_PRICE, supports_images=False, supports_json_mode=False)
    big = cand("big", "strong", 1, STRONG_PRICE)
    img = Request(model="auto", messages=[UserMessage(content=[ImagePart(url="https://e.invalid/a.png")])])
    usable, excluded = filter_candidates(extract(img), [blind, big], lambda n: None)
    assert [c.name for c in usable] == ["big"] and excluded == {"blind": "no image input"}
    js = extract(_req(10, response_format=ResponseFormat(type="json_object")))
    assert misfit(js, blind) == "no JSON mode"
    usable, _ = filter_candidates(extract(img), [blind], lambda n: None)
    assert [c.name for c in usable] == ["blind"]


def test_unhealthy_deployments_are_skipped_unless_nothing_else_is_left() -> None:
    a, b = cand("a", "cheap", 0, CHEAP_PRICE), cand("b", "cheap", 0, CHEAP_PRICE)
    usable, excluded = filter_candidates(
        extract(_req(10)), [a, b], lambda n: "circuit open" if n == "a" else None
    )
    assert [c.name for c in usable] == ["b"] and excluded == {"a": "circuit open"}
    usable, _ = filter_candidates(extract(_req(10)), [a, b], lambda n: "cooldown")
    assert [c.name for c in usable] == ["a", "b"]
