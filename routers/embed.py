"""Prompt embeddings for routing: WordLlama's static token embeddings, read from its wheel.

WordLlama (PyPI ``wordllama``, MIT) ships a 32,000-token Llama-2 tokenizer and a 256-dimension
static embedding per token (``l2_supercat_256``, float16, 16 MB) inside the package, so nothing
is downloaded at run time. A text's embedding is the mean of its tokens' embeddings — what
``WordLlama.embed`` computes — but this module reads the two files itself, with ``tokenizers``
and ``safetensors``, instead of importing ``wordllama``:

* importing ``wordllama`` runs ``logging.basicConfig(level=INFO)`` (``wordllama/inference.py``,
  0.4.0.post1), which would reconfigure the gateway's root logger;
* ``WordLlama.load()`` looks for the tokenizer under ``wordllama/tokenizer/`` while the wheel
  ships it under ``wordllama/tokenizers/``, so it tries to download it (and fails offline).

Speed: the Llama tokenizer costs about 0.3 µs per character, too slow for a 4000-character
message inside a 1 ms routing decision. No token of this vocabulary holds ``▁`` (the space
marker) other than at its start, so a text's tokens are the concatenation of the tokens of its
space-separated segments (runs of spaces aside, which the tokenizer may merge); segments are
tokenized once and remembered (a bounded map), and only
the first :data:`HEAD_CHARS` and last :data:`TAIL_CHARS` characters are embedded. Training and
serving call the same :meth:`Embedder.embed`, so their vectors agree exactly.
"""

from __future__ import annotations

import importlib.util
import threading
from functools import lru_cache
from pathlib import Path

import numpy as np

#: WordLlama configuration read from its wheel.
CONFIG = "l2_supercat"
#: Characters embedded from the start and from the end of a longer text.
HEAD_CHARS = 1000
TAIL_CHARS = 300
#: Space-separated segments whose tokens are remembered (the map is cleared when full).
SEGMENT_CACHE = 200_000
_SPACE = "\u2581"


class EmbedderUnavailable(RuntimeError):
    """The ``wordllama`` package (or one of its files) is not installed."""


def package_dir() -> Path:
    """Directory of the installed ``wordllama`` package, found without importing it. Raises
    :class:`EmbedderUnavailable` when it is not installed."""
    spec = importlib.util.find_spec("wordllama")
    if spec is None or not spec.submodule_search_locations:
        raise EmbedderUnavailable(
            "the wordllama package is not installed (a dependency of turnstile-gateway)"
        )
    return Path(next(iter(spec.submodule_search_locations)))


def clip(text: str) -> str:
    """The part of ``text`` that is embedded: all of it up to ``HEAD_CHARS + TAIL_CHARS``
    characters, else its head and tail joined by a space."""
    if len(text) <= HEAD_CHARS + TAIL_CHARS:
        return text
    return text[:HEAD_CHARS] + " " + text[-TAIL_CHARS:]


class Embedder:
    """Mean-pooled static token embeddings of a text (float32 vector of :attr:`dim` values)."""

    def __init__(self, root: Path | None = None) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        base = root or package_dir()
        tok_path = base / "tokenizers" / f"{CONFIG}_tokenizer_config.json"
        weights_path = base / "weights" / f"{CONFIG}_256.safetensors"
        try:
            self.tokenizer = Tokenizer.from_file(str(tok_path))
            table = load_file(str(weights_path))["embedding.weight"]
        except Exception as err:  # tokenizers raises its own Exception type; re-raised with the path
            raise EmbedderUnavailable(f"cannot read WordLlama files under {base}: {err}") from err
        self.tokenizer.no_padding()
        self.tokenizer.no_truncation()
        # float32: a mean over float16 rows costs 5x more (the table is 32 MB in memory)
        self.table = np.ascontiguousarray(table, dtype=np.float32)
        self.dim = int(self.table.shape[1])
        vocab = self.tokenizer.get_vocab()
        starts = np.zeros(len(vocab), dtype=bool)
        for piece, i in vocab.items():
            if i < len(starts) and piece.startswith(_SPACE):
                starts[i] = True
        self._starts = starts
        self._space_id = int(vocab[_SPACE])
        self._segments: dict[str, tuple[int, ...]] = {}
        self._lock = threading.Lock()

    def _alone(self, segment: str) -> list[int]:
        """Ids of one segment tokenized on its own: what it contributes inside a text (an empty
        segment, between two spaces, is the lone space marker)."""
        if not segment:
            return [self._space_id]
        return self.tokenizer.encode(segment, add_special_tokens=False).ids

    def _tokenize_missing(self, missing: list[str]) -> None:
        """Tokenize ``missing`` segments in one tokenizer call and remember each one's ids."""
        ids = self.tokenizer.encode(" ".join(missing), add_special_tokens=False).ids
        groups: list[list[int]] = []
        for i in ids:
            if self._starts[i] or not groups:
                groups.append([i])
            else:
                groups[-1].append(i)
        if len(groups) != len(missing):  # not separable as expected: one call per segment
            groups = [self._alone(s) for s in missing]
        with self._lock:
            if len(self._segments) + len(missing) > SEGMENT_CACHE:
                self._segments.clear()
            for seg, g in zip(missing, groups, strict=True):
                self._segments[seg] = tuple(g)

    def token_ids(self, text: str) -> list[int]:
        """Token ids of ``clip(text)``: the tokenizer's, segment by segment (equal to the
        tokenizer's on the whole text except for runs of spaces, which it may merge into one
        token; here each extra space is its own marker). Never depends on which segments were
        seen before."""
        if not text:
            return []
        segments = clip(text).split(" ")
        known = self._segments
        missing = [s for s in dict.fromkeys(segments) if s not in known]
        if missing:
            self._tokenize_missing(missing)
            known = self._segments
        out: list[int] = []
        for s in segments:
            got = known.get(s)
            if got is None:  # cleared by another thread meanwhile
                got = tuple(self._alone(s))
            out.extend(got)
        return out

    def embed(self, text: str) -> np.ndarray:
        """Embedding of ``text``: mean of its tokens' vectors (zeros for an empty text),
        shape ``(dim,)``, float32."""
        ids = self.token_ids(text)
        if not ids:
            return np.zeros(self.dim, dtype=np.float32)
        return self.table.take(ids, axis=0).sum(axis=0) / np.float32(len(ids))

    def embed_many(self, texts: list[str]) -> np.ndarray:
        """Embeddings of ``texts`` as rows, shape ``(len(texts), dim)`` — each row equal to
        :meth:`embed` of that text."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            out[i] = self.embed(t)
        return out


@lru_cache(maxsize=1)
def shared_embedder() -> Embedder:
    """The process's embedder, loaded on first use (about 0.1 s, 33 MB)."""
    return Embedder()
