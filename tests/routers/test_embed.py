"""The WordLlama embedder: read from the installed wheel, equal to WordLlama's own mean pooling."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from routers.embed import HEAD_CHARS, TAIL_CHARS, Embedder, clip, package_dir, shared_embedder

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "routing"


def _texts() -> list[str]:
    lines = (FIXTURES / "routellm-slice.jsonl").read_text().splitlines()
    return [json.loads(line)["prompt"] for line in lines]


def test_embeddings_equal_wordllamas_own_on_texts_within_the_clip() -> None:
    from wordllama import WordLlama  # only here: importing it configures logging

    theirs = WordLlama.load(cache_dir=package_dir(), disable_download=True)
    mine = shared_embedder()
    texts = [t for t in _texts() if len(t) <= HEAD_CHARS + TAIL_CHARS][:20]
    assert len(texts) == 20
    ref = theirs.embed(texts)
    got = np.stack([mine.embed(t) for t in texts])
    assert np.allclose(got, ref, atol=1e-3)


def test_segment_memory_gives_the_same_ids_cold_and_warm() -> None:
    texts = _texts()
    cold = Embedder()
    first = [cold.token_ids(t) for t in texts]
    again = [cold.token_ids(t) for t in texts]
    direct = [cold.tokenizer.encode(clip(t), add_special_tokens=False).ids for t in texts]
    assert first == again == direct
    assert np.array_equal(cold.embed_many(texts[:3]), np.stack([cold.embed(t) for t in texts[:3]]))


def test_ids_do_not_depend_on_which_segments_were_tokenized_together() -> None:
    texts = ["a  b", "  lead", "x\ny  z.", "b", "", " "]
    together = Embedder()
    together.token_ids(" ".join(texts))  # every segment first seen in one call
    alone = Embedder()
    for t in texts:
        assert alone.token_ids(t) == together.token_ids(t)
    assert alone.token_ids("x\ny z.") == alone.tokenizer.encode("x\ny z.", add_special_tokens=False).ids


def test_long_texts_are_clipped_to_head_and_tail_and_empty_text_is_zero() -> None:
    text = "a" * 5000 + "tail"
    c = clip(text)
    assert len(c) == HEAD_CHARS + TAIL_CHARS + 1 and c.endswith("tail")
    assert not shared_embedder().embed("").any()
