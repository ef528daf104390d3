"""Lexical features of a prompt for the learned router: word unigrams and bigrams plus a few
shape features, computed the same way at training and serving time."""

from __future__ import annotations

import itertools
import math
import re

_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_NUM = re.compile(r"\d+(?:\.\d+)?")
_CODEISH = re.compile(r"```|def |class |function|\{|\};|=>|#include")

#: The dense shape features, in the order the embedding network reads them.
DENSE_FEATURES = (
    "d:log_chars",
    "d:log_words",
    "d:digit_frac",
    "d:numbers",
    "d:code",
    "d:questions",
    "d:lines",
)


def featurize(text: str) -> dict[str, float]:
    """Sparse features of ``text``: ``w:<word>``, ``b:<word> <word>`` (1/sqrt(n) each, n the
    number of distinct terms) and the dense shape features :data:`DENSE_FEATURES` (length,
    digits, numbers, code, question marks, lines; each in [0, 1] or close). Reads at most the
    first 8000 characters."""
    head = text[:8000]
    low = head.lower()
    words = _WORD.findall(low)
    terms = {f"w:{w}" for w in words}
    terms.update(f"b:{a} {b}" for a, b in itertools.pairwise(words))
    scale = 1.0 / math.sqrt(len(terms)) if terms else 0.0
    feats = dict.fromkeys(terms, scale)
    n = len(text) or 1
    feats["d:log_chars"] = math.log1p(len(text)) / 10.0
    feats["d:log_words"] = math.log1p(len(words)) / 10.0
    feats["d:digit_frac"] = sum(ch.isdigit() for ch in head) / min(n, 8000)
    feats["d:numbers"] = min(len(_NUM.findall(head)), 50) / 50.0
    feats["d:code"] = 1.0 if _CODEISH.search(head) else 0.0
    feats["d:questions"] = min(text.count("?"), 10) / 10.0
    feats["d:lines"] = min(text.count("\n"), 100) / 100.0
    return feats
