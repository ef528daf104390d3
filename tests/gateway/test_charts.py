"""Inline SVG charts (gateway/charts.py): well-formed SVG with a title and a description for
assistive technology, no style attribute (a strict CSP holds), every value drawn to scale, and
colours with enough contrast on white."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from gateway.charts import GRID, INK, PALETTE, Series, bar_list, column_chart, line_chart, nice_ceiling, plain

SVG = "{http://www.w3.org/2000/svg}"


def _contrast(hex_colour: str) -> float:
    """WCAG contrast ratio of ``hex_colour`` against white."""

    def channel(c: int) -> float:
        v = c / 255
        return v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4

    r, g, b = (int(hex_colour[i : i + 2], 16) for i in (1, 3, 5))
    lum = 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b)
    return 1.05 / (lum + 0.05)


def _parse(markup: str) -> ET.Element:
    root = ET.fromstring(markup)
    assert root.tag == f"{SVG}svg" and root.get("role") == "img"
    labelled = root.get("aria-labelledby", "").split()
    ids = {e.get("id"): e for e in root.iter()}
    assert [ids[i].tag for i in labelled] == [f"{SVG}title", f"{SVG}desc"]
    assert all(e.get("style") is None for e in root.iter())
    return root


def test_colours_have_enough_contrast_on_white() -> None:
    assert all(_contrast(c) >= 4.5 for c in (*PALETTE, INK))
    assert _contrast(GRID) >= 2.0  # grid lines are decoration, not information


@pytest.mark.parametrize(
    ("value", "top"),
    [(0, 1), (-3, 1), (0.7, 1), (1, 1), (1.2, 2), (2.2, 2.5), (3, 5), (7, 10), (0.013, 0.02)],
)
def test_an_axis_top_is_a_round_number_at_or_above_the_largest_value(value: float, top: float) -> None:
    assert nice_ceiling(value) == pytest.approx(top)


def test_columns_are_drawn_to_scale_and_described() -> None:
    markup = column_chart(
        "c1", "Spend <per hour>", ["a", "b", "c", "d"], [Series("spend", [1.0, None, 0.5, 2.0])], unit="USD"
    )
    root = _parse(markup)
    heights = [float(r.get("height", 0)) for r in root.iter(f"{SVG}rect")]
    assert len(heights) == 3 and heights[0] == pytest.approx(2 * heights[1])  # None and 0 draw nothing
    assert heights[2] == pytest.approx(heights[0] * 2)
    assert root.find(f"{SVG}title").text == "Spend <per hour>"  # escaped in the markup, read back whole
    assert "largest 2" in (root.find(f"{SVG}desc").text or "")


def test_lines_break_at_a_gap_and_labels_stay_inside_the_chart() -> None:
    root = _parse(
        line_chart("l1", "Rate", ["00:00", "01:00", "02:00", "03:00"], [Series("r", [1, 2, None, 3])])
    )
    assert len(root.findall(f"{SVG}polyline")) == 1  # the run before the gap; one lone point after it
    anchors = [t.get("text-anchor") for t in root.iter(f"{SVG}text") if t.text in ("00:00", "03:00")]
    assert anchors == ["start", "end"]
    two = _parse(line_chart("l2", "Two", ["a", "b"], [Series("x", [1, 2]), Series("y", [2, 1])]))
    assert len(two.findall(f"{SVG}polyline")) == 2 and any(t.text == "y" for t in two.iter(f"{SVG}text"))


def test_a_bar_list_shows_each_label_and_value_and_shortens_long_labels() -> None:
    long = "a_really_long_category_name_that_goes_on_and_on"
    root = _parse(bar_list("b1", "Findings", [("orphan", 16), (long, 1)], label_width=140))
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert "orphan" in texts and "16" in texts and any(t and t.endswith("…") for t in texts)
    assert any(long in (t.text or "") for t in root.iter(f"{SVG}title"))
    assert "orphan: 16" in (root.find(f"{SVG}desc").text or "")
    assert _parse(bar_list("b2", "Nothing", [])).find(f"{SVG}desc").text == "nothing to show"


def test_numbers_are_written_plainly() -> None:
    assert [plain(x) for x in (0, 2.0, 0.5, 1234.5678, 0.000123)] == ["0", "2", "0.5", "1235", "0.000123"]
