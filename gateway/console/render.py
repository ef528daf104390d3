"""The console's templates (Jinja2, ``gateway/console/templates``) and the filters they write
values with: times in UTC, costs in USD, durations in ms, token counts, short ids, JSON.

Autoescaping is on for every template; a filter returns :class:`markupsafe.Markup` only for
markup it built from escaped parts. Undefined names raise (``StrictUndefined``): a template
that names a value its page does not pass fails its test instead of rendering a blank.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

import orjson
from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

from gateway.turns_table import compact_count

MAX_JSON_CHARS = 200_000
"""Characters of one JSON value a page shows (the rest is cut, with a note)."""


def when(ts: float | None) -> str:
    """Epoch seconds as ``YYYY-MM-DD HH:MM:SS`` (UTC); empty for None."""
    if ts is None:
        return ""
    return datetime.fromtimestamp(float(ts), UTC).strftime("%Y-%m-%d %H:%M:%S")


def iso(ts: float | None) -> str:
    """Epoch seconds as an ISO 8601 instant (UTC, for ``<time datetime>``); empty for None."""
    if ts is None:
        return ""
    return datetime.fromtimestamp(float(ts), UTC).isoformat(timespec="seconds")


def usd(value: float | None) -> str:
    """A cost in USD: ``$0.000123``, ``$1.2346``, ``$123``; ``–`` when unknown."""
    if value is None:
        return "–"
    v = float(value)
    if v == 0:
        return "$0"
    if abs(v) >= 100:
        return f"${v:,.0f}"
    if abs(v) >= 0.01:
        return f"${v:.4f}".rstrip("0").rstrip(".")
    return f"${v:.6f}".rstrip("0").rstrip(".")


def ms(value: float | None) -> str:
    """A duration in milliseconds: ``950 ms``, ``12.3 s``; ``–`` when unknown."""
    if value is None:
        return "–"
    v = float(value)
    return f"{v:.0f} ms" if v < 10_000 else f"{v / 1000:.1f} s"


def tokens(value: int | None) -> str:
    """A token count in at most 5 characters (``12.3k``); ``0`` for None."""
    return compact_count(int(value or 0))


def rate(value: float | None) -> str:
    """A rate (per second) in plain digits, never in exponent notation: ``12.3``, ``0.25``,
    ``0.000023``; ``–`` when unknown."""
    if value is None:
        return "–"
    v = float(value)
    if v == 0:
        return "0"
    if v >= 10:
        return f"{v:.1f}"
    if v >= 0.1:
        return f"{v:.2f}"
    digits = max(2, 2 - math.floor(math.log10(v)))  # two significant digits
    return f"{v:.{digits}f}".rstrip("0")


def pct(value: float | None) -> str:
    """A fraction as a percentage with one decimal; ``–`` when unknown."""
    return "–" if value is None else f"{100 * float(value):.1f}%"


def short(request_id: str | None, keep: int = 8) -> str:
    """The first ``keep`` characters of an id, and a tool-loop step's ``.stepN`` suffix."""
    rid = request_id or ""
    head, dot, suffix = rid.partition(".")
    return head[:keep] + dot + suffix


def pretty_json(value: Any) -> str:
    """``value`` (a JSON text, or a value) as indented JSON, cut at :data:`MAX_JSON_CHARS`."""
    if value is None:
        return ""
    if isinstance(value, str):
        try:
            value = orjson.loads(value)
        except orjson.JSONDecodeError:
            text = value
        else:
            text = orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()
    else:
        text = orjson.dumps(value, option=orjson.OPT_INDENT_2, default=str).decode()
    if len(text) > MAX_JSON_CHARS:
        text = text[:MAX_JSON_CHARS] + f"\n… ({len(text) - MAX_JSON_CHARS} more characters not shown)"
    return text


def query(base: str, params: dict[str, Any] | None = None, **more: Any) -> str:
    """``base`` with the query string of ``params`` and ``more`` (None values left out)."""
    pairs = {**(params or {}), **more}
    clean = {k: v for k, v in pairs.items() if v is not None and v != ""}
    return base + ("?" + urlencode(clean) if clean else "")


def make_environment() -> Environment:
    """The console's Jinja2 environment (templates from the package, autoescaped, strict)."""
    env = Environment(
        loader=PackageLoader("gateway.console", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        when=when,
        iso=iso,
        usd=usd,
        ms=ms,
        tokens=tokens,
        pct=pct,
        rate=rate,
        short=short,
        pretty_json=pretty_json,
    )
    env.globals["query"] = query
    return env
