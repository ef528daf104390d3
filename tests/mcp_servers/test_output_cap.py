"""Tool-result size cap (handed case C28)."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from mcp_servers.output_cap import DEFAULT_CAP_BYTES, cap_text


def test_C28_six_megabyte_result_is_cut_to_the_cap_with_head_tail_and_marker() -> None:
    lines = [f"line {i}: compiling module ...\n" for i in range(200_000)]
    text = "".join(lines)
    assert len(text.encode()) > 6_000_000
    out = cap_text(text)
    assert out.truncated and len(out.text.encode()) <= DEFAULT_CAP_BYTES
    assert out.text.startswith("line 0: compiling module")
    assert out.text.endswith("line 199999: compiling module ...\n")
    m = re.search(r"\[turnstile: tool result truncated: (\d+) bytes in all, (\d+) bytes omitted\]", out.text)
    assert m and int(m.group(1)) == len(text.encode()) and int(m.group(2)) == out.omitted_bytes


def test_C28_error_mode_returns_an_error_result_saying_too_large() -> None:
    out = cap_text("x" * 1000, 256, mode="error")
    assert out.is_error and "result too large" in out.text and "1000 bytes" in out.text


def test_small_results_pass_untouched() -> None:
    out = cap_text("hello")
    assert out.text == "hello" and not out.truncated


_CHARS = st.characters(min_codepoint=0x20, max_codepoint=0x1F9FF, exclude_categories=["Cs"])


@given(st.text(alphabet=_CHARS, min_size=0, max_size=3000), st.integers(min_value=256, max_value=2000))
def test_cap_never_splits_a_character_and_never_exceeds_the_cap(text: str, cap: int) -> None:
    out = cap_text(text, cap)
    assert len(out.text.encode("utf-8")) <= max(cap, len(text.encode()) if not out.truncated else cap)
    out.text.encode("utf-8")  # would raise on a lone surrogate


def test_lone_surrogates_from_json_do_not_break_the_cap() -> None:
    out = cap_text("\ud800" + "é" * 1000, 256)
    assert out.truncated and len(out.text.encode("utf-8")) <= 256
