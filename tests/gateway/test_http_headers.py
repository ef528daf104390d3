"""Header values built from data are always printable ASCII, bounded, and read back exactly."""

from __future__ import annotations

from urllib.parse import unquote

from hypothesis import given
from hypothesis import strategies as st

from gateway.config import Deployment
from gateway.http_headers import (
    CUT_MARK,
    MAX_HEADER_VALUE_CHARS,
    MAX_RETRY_AFTER_S,
    header_list,
    header_value,
    retry_after_value,
)
from gateway.pipeline import TurnContext
from gateway.schema import Request, TextPart, UserMessage

TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=60)


def _printable_ascii(value: str) -> bool:
    return all(0x20 <= ord(c) < 0x7F for c in value) and value == value.strip(" ")


@given(TEXT)
def test_a_header_value_is_printable_ascii_and_decodes_to_the_original(text: str) -> None:
    value = header_value(text)
    assert _printable_ascii(value)
    assert unquote(value) == text


@given(st.lists(TEXT, min_size=1, max_size=8))
def test_a_header_list_keeps_each_item_even_with_commas(items: list[str]) -> None:
    value = header_list(items)
    assert _printable_ascii(value)
    assert [unquote(v) for v in value.split(",")] == items


def test_plain_ascii_is_left_as_it_is() -> None:
    assert header_value("call_abc-123; only deployment") == "call_abc-123; only deployment"
    assert header_list(["call_1", "toolu_2"]) == "call_1,toolu_2"


def test_cr_lf_nul_and_non_latin1_are_escaped() -> None:
    assert header_value("a\r\nb") == "a%0D%0Ab"
    assert header_value("\x00") == "%00"
    assert header_value("调") == "%E8%B0%83"
    assert header_value("100%") == "100%25"
    assert header_list(["a,b", "c"]) == "a%2Cb,c"


@given(st.text(min_size=1, max_size=80), st.integers(min_value=8, max_value=40))
def test_a_value_over_the_bound_is_cut_and_marked_never_inside_an_escape(text: str, limit: int) -> None:
    full = header_value(text, limit=10_000)
    value = header_value(text, limit=limit)
    assert len(value) <= limit
    if len(full) > limit:
        assert value.endswith(CUT_MARK)
        kept = value[: -len(CUT_MARK)]
        assert full.startswith(kept) and "%" not in kept[-2:]
    else:
        assert value == full


def test_a_long_list_is_cut_at_an_item_boundary() -> None:
    items = [f"call_{i:040d}" for i in range(200)]
    value = header_list(items)
    parts = value.split(",")
    assert len(value) <= MAX_HEADER_VALUE_CHARS
    assert parts[-1] == CUT_MARK
    assert parts[:-1] == items[: len(parts) - 1]


def test_retry_after_is_bounded_delta_seconds() -> None:
    assert retry_after_value(7.4) == "7"
    assert retry_after_value(0.0) == "1"
    assert retry_after_value(float("inf")) == str(MAX_RETRY_AFTER_S)
    assert retry_after_value(1e300) == str(MAX_RETRY_AFTER_S)
    assert retry_after_value(float("nan")) == "1"


def test_a_deployment_name_outside_latin1_becomes_a_safe_header() -> None:
    request = Request(model="m", messages=[UserMessage(content=[TextPart(text="hi")])])
    ctx = TurnContext(request_id="r", dialect="openai", request=request)
    ctx.deployment = Deployment(name="部署\r\nx: 1", api="demo", model="demo")
    ctx.route = {"header": "部署\r\nx: 1; only deployment"}
    headers = ctx.headers()
    assert all(_printable_ascii(v) for v in headers.values())
    assert unquote(headers["x-turnstile-deployment"]) == "部署\r\nx: 1"
