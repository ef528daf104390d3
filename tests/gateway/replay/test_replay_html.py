"""``turnstile replay --html``: one self-contained page of the report (gateway/replay/html.py):
what was caught, what a conversion would lose and the cost as recorded against routed, with its
charts inline; nothing in it asks for anything from anywhere."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from gateway.cli import app
from gateway.replay.html import CSP, render
from gateway.replay.runner import run

ROOT = Path(__file__).resolve().parents[3]
FILES = [
    ROOT / "tests" / "fixtures" / "pi-mono" / "large-session-head.jsonl",
    ROOT / "tests" / "fixtures" / "tau-bench" / "gpt-4o-airline-first2.json",
]


class Tags(HTMLParser):
    """Every start tag with its attributes, and the text of ``<svg>`` elements as written."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _report() -> dict[str, Any]:
    data = run(FILES, jobs=1).as_dict()
    data["routing"]["config"] = "gateway/replay/routing.yaml"
    return data


def test_the_page_shows_what_was_caught_lost_and_what_routing_would_cost() -> None:
    data = _report()
    page = render(data, seconds=1.5, inputs=[str(f) for f in FILES])
    parsed = Tags()
    parsed.feed(page)
    text = " ".join(parsed.text)
    for kind, count in data["findings_by_kind"].items():
        assert kind in text and str(count) in text
    assert "What was caught" in text and "What a conversion would lose" in text
    assert "Cost: as recorded and as routed" in text and "Routing saves" in text
    totals = data["routing"]["totals"]
    assert f"{100 * totals['saving_vs_recorded']:.1f}%" in text
    assert f"${totals['routed_usd']:.4f}" in text and f"${totals['strong_usd']:.4f}" in text
    assert "TOTAL" not in text and f"Total: {totals['conversations']} conversations" in text
    svgs = page.count("<svg")
    assert svgs >= 5  # guard outcomes, findings, per-model cost, routing cost, tiers
    for chunk in page.split("<svg")[1:]:
        ET.fromstring("<svg" + chunk.split("</svg>")[0] + "</svg>")  # each chart is well-formed


def test_the_page_fetches_nothing_and_runs_no_script() -> None:
    page = render(_report(), seconds=0.1, inputs=["x"])
    parsed = Tags()
    parsed.feed(page)
    names = {t for t, _ in parsed.tags}
    assert not names & {
        "script",
        "link",
        "img",
        "iframe",
        "object",
        "embed",
        "form",
        "base",
        "audio",
        "video",
    }
    for tag, attrs in parsed.tags:
        for name in ("src", "href", "action", "srcset", "poster"):
            assert name not in attrs or (tag == "a" and str(attrs[name]).startswith("#")), (tag, attrs)
        assert not any(a.startswith("on") for a in attrs), (tag, attrs)
    meta = [a for t, a in parsed.tags if t == "meta" and a.get("http-equiv") == "Content-Security-Policy"]
    assert meta and meta[0]["content"] == CSP and "default-src 'none'" in CSP
    assert "url(" not in page and "@import" not in page


def test_the_cli_writes_the_page_next_to_its_usual_output(tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    result = CliRunner().invoke(app, ["replay", str(FILES[0]), "--jobs", "1", "--json", "--html", str(out)])
    assert result.exit_code == 0, result.output
    assert '"totals"' in result.stdout and out.read_text().startswith("<!doctype html>")
    missing = CliRunner().invoke(app, ["replay", str(FILES[0]), "--html", str(tmp_path / "no" / "r.html")])
    assert missing.exit_code == 2 and "does not exist" in missing.output
