"""The routing rows of a data folder as arrays, for training and evaluation.

Each routing JSONL file (:mod:`routers.routing_data`) contributes its rows with the file's
strong/cheap pair (:func:`routers.routing_data.pick_pair`); contaminated rows and rows
without both models' outcomes are left out. Cost of a row on a model = (prompt characters / 4
+ :data:`OUTPUT_TOKENS`) x the model's blended USD per million tokens.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from routers.routing_data import data_files, held_out, pick_pair, prices_for, read_rows, unseen_subject

OUTPUT_TOKENS = 256


@dataclass
class Dataset:
    """Rows as parallel arrays (length n) plus per-row model outcomes.

    ``group``: benchmark (``mmlu``, ``gsm8k``, ``mt_bench``, or the file's folder name);
    ``domain``: the finer domain (``mmlu/<subject>``, ``mt_bench/<category>``, else the group);
    ``held``: held out of training (:func:`routers.routing_data.held_out`); ``unseen``: an MMLU
    row of a subject held out whole; ``qs``/``qc``: quality of the strong/cheap model;
    ``cs``/``cc``: cost on each (USD); ``scores``: every model's outcome on the row (for the
    matrix-factorisation candidate); ``pair``: (strong, cheap) per group."""

    texts: list[str]
    group: np.ndarray
    domain: np.ndarray
    held: np.ndarray
    unseen: np.ndarray
    qs: np.ndarray
    qc: np.ndarray
    cs: np.ndarray
    cc: np.ndarray
    scores: list[dict[str, float]]
    pair: dict[str, tuple[str, str]]

    def __len__(self) -> int:
        return len(self.texts)

    def take(self, idx: np.ndarray) -> Dataset:
        """The rows at ``idx``."""
        return Dataset(
            texts=[self.texts[i] for i in idx],
            group=self.group[idx],
            domain=self.domain[idx],
            held=self.held[idx],
            unseen=self.unseen[idx],
            qs=self.qs[idx],
            qc=self.qc[idx],
            cs=self.cs[idx],
            cc=self.cc[idx],
            scores=[self.scores[i] for i in idx],
            pair=self.pair,
        )

    @property
    def label(self) -> np.ndarray:
        """1 where the strong model did better than the cheap one, else 0."""
        return (self.qs > self.qc).astype(int)

    def group_weights(self) -> np.ndarray:
        """Per-row weights giving each group the same total weight (mean 1)."""
        names, inverse, counts = np.unique(self.group, return_inverse=True, return_counts=True)
        return len(self.group) / (len(names) * counts[inverse])


def load(data: Path) -> Dataset:
    """Every eligible row of the routing JSONL files under ``data``. Raises ``ValueError``
    naming the file and line of a malformed row, or when a file has fewer than two models."""
    texts: list[str] = []
    cols: dict[str, list] = {k: [] for k in ("group", "domain", "held", "unseen", "qs", "qc", "cs", "cc")}
    scores: list[dict[str, float]] = []
    pair: dict[str, tuple[str, str]] = {}
    for path in data_files(data):
        rows = list(read_rows(path))
        prices = prices_for(path)
        strong, cheap = pick_pair(rows, prices)
        ps, pc = prices.get(strong, 1.0), prices.get(cheap, 1.0)
        for r in rows:
            if r.contaminated or strong not in r.scores or cheap not in r.scores:
                continue
            text = r.text()
            group = r.group if r.group != "all" else (path.parent.name or path.stem)
            tokens = len(text) / 4 + OUTPUT_TOKENS
            texts.append(text)
            cols["group"].append(group)
            cols["domain"].append(r.source or group)
            cols["held"].append(held_out(r))
            cols["unseen"].append(unseen_subject(r))
            cols["qs"].append(r.scores[strong])
            cols["qc"].append(r.scores[cheap])
            cols["cs"].append(tokens * ps / 1e6)
            cols["cc"].append(tokens * pc / 1e6)
            scores.append(r.scores)
            pair[group] = (strong, cheap)
    return Dataset(
        texts=texts,
        group=np.array(cols["group"], dtype=object),
        domain=np.array(cols["domain"], dtype=object),
        held=np.array(cols["held"], dtype=bool),
        unseen=np.array(cols["unseen"], dtype=bool),
        qs=np.array(cols["qs"], dtype=float),
        qc=np.array(cols["qc"], dtype=float),
        cs=np.array(cols["cs"], dtype=float),
        cc=np.array(cols["cc"], dtype=float),
        scores=scores,
        pair=pair,
    )
