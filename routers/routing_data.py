"""Routing evaluation data: rows of per-prompt quality for several models, and the split.

Format (``../shared/corpus/routing``, see its README): one JSON object per line with ``id``,
``prompt``, ``scores`` (model -> quality in [0, 1]) and optionally ``source``
(``mmlu/<subject>``, ``gsm8k``, ``mt_bench/<category>``), ``history``, ``split``
(``train``/``test``) and ``contaminated``. A ``prices.json`` next to a file gives USD per
million tokens per model (``input_usd_per_mtok``, ``output_usd_per_mtok``).

Held-out rule (the same for training and evaluation, so evaluation never sees trained rows):
a row is held out when ``split == "test"``, when it is an MT-Bench row (all 80 questions
are kept for evaluation; too few to train on), when ``sha256(id)`` falls in bucket 0 of 5, or
when it is an MMLU row whose whole subject falls in bucket 0 of 5 by ``sha256(subject)``.
Rows with ``contaminated: true`` are used for neither.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

#: Blended USD per million tokens used by RouteLLM (arXiv 2406.18665) for its two models.
KNOWN_PRICES = {"gpt-4-1106-preview": 24.7, "mistralai/Mixtral-8x7B-Instruct-v0.1": 0.24}
BUCKETS = 5


@dataclass
class Row:
    """One evaluation prompt."""

    id: str
    prompt: str
    scores: dict[str, float]
    source: str = ""
    history: list[str] = field(default_factory=list)
    split: str | None = None
    contaminated: bool = False

    @property
    def group(self) -> str:
        """Benchmark name: the part of ``source`` before ``/`` (``mmlu``, ``gsm8k``,
        ``mt_bench``), else ``all``."""
        return self.source.split("/", 1)[0] if self.source else "all"

    @property
    def subject(self) -> str | None:
        """The MMLU subject, or None."""
        return self.source.split("/", 1)[1] if self.source.startswith("mmlu/") else None

    def text(self) -> str:
        """The text a router sees: earlier user turns then the prompt."""
        return "\n".join([*self.history, self.prompt])


def _bucket(key: str) -> int:
    return int(hashlib.sha256(key.encode()).hexdigest()[:8], 16) % BUCKETS


def subject_bucket_of(subject: str) -> int:
    """The hash bucket (0..BUCKETS-1) of an MMLU subject; bucket 0's subjects are held out."""
    return _bucket("subject:" + subject)


def held_out(row: Row) -> bool:
    """True when ``row`` is kept out of training (see module docstring)."""
    if row.split == "test" or row.group == "mt_bench":
        return True
    if row.subject is not None and _bucket("subject:" + row.subject) == 0:
        return True
    return _bucket(row.id) == 0


def unseen_subject(row: Row) -> bool:
    """True for MMLU rows whose whole subject was held out."""
    return row.subject is not None and _bucket("subject:" + row.subject) == 0


def read_rows(path: Path) -> Iterator[Row]:
    """Rows of one JSONL file. Raises ``ValueError`` naming the line when a row lacks ``id``,
    ``prompt`` or ``scores``."""
    with path.open("rb") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                d: dict[str, Any] = orjson.loads(line)
            except orjson.JSONDecodeError as err:
                raise ValueError(f"{path}:{n}: not JSON ({err})") from err
            if not isinstance(d, dict):
                raise ValueError(f"{path}:{n}: not a routing row (expected a JSON object)")
            try:
                yield Row(
                    id=str(d["id"]),
                    prompt=str(d["prompt"]),
                    scores={k: float(v) for k, v in d["scores"].items()},
                    source=str(d.get("source") or ""),
                    history=[str(h) for h in d.get("history") or []],
                    split=d.get("split"),
                    contaminated=bool(d.get("contaminated", False)),
                )
            except (KeyError, AttributeError, TypeError, ValueError) as err:
                raise ValueError(f"{path}:{n}: not a routing row ({err})") from err


def data_files(path: Path) -> list[Path]:
    """``path`` itself, or every ``*.jsonl`` under it (sorted)."""
    if path.is_dir():
        return sorted(path.rglob("*.jsonl"))
    return [path]


def prices_for(path: Path) -> dict[str, float]:
    """Blended USD per million tokens per model: :data:`KNOWN_PRICES`, overridden by a
    ``prices.json`` next to ``path`` (mean of input and output price)."""
    out = dict(KNOWN_PRICES)
    pj = path.parent / "prices.json"
    if pj.exists():
        for name, p in orjson.loads(pj.read_bytes()).items():
            out[name] = (float(p["input_usd_per_mtok"]) + float(p["output_usd_per_mtok"])) / 2
    return out


def pick_pair(rows: list[Row], prices: dict[str, float]) -> tuple[str, str]:
    """``(strong, cheap)``: RouteLLM's pair when present; else the cheapest priced model (best
    mean quality among equally cheap ones) and, as strong, the best mean quality among the
    models that cost more. Without prices: best and worst mean quality."""
    models = sorted({m for r in rows for m in r.scores})
    if len(models) < 2:
        raise ValueError(f"need outcomes of at least two models to compare, found {models or 'none'}")
    if {"gpt-4-1106-preview", "mistralai/Mixtral-8x7B-Instruct-v0.1"} <= set(models):
        return "gpt-4-1106-preview", "mistralai/Mixtral-8x7B-Instruct-v0.1"
    mean = {m: sum(r.scores.get(m, 0.0) for r in rows) / max(1, len(rows)) for m in models}
    priced = [m for m in models if m in prices]
    if len(priced) >= 2:
        cheap = min(priced, key=lambda m: (prices[m], -mean[m]))
        dearer = [m for m in priced if prices[m] > prices[cheap]] or [m for m in priced if m != cheap]
        return max(dearer, key=lambda m: mean[m]), cheap
    return max(models, key=lambda m: mean[m]), min(models, key=lambda m: mean[m])
