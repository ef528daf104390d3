"""Leave-one-domain-out: which rows form a domain, and the figures on the fixture slices."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from routers.dataset import load
from routers.eval_domains import domain_masks, subject_bucket
from routers.routing_data import subject_bucket_of

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "routing"


def test_domains_are_families_and_subject_buckets_never_the_held_out_bucket() -> None:
    data = load(FIXTURES)
    masks = domain_masks(data)
    assert {"family mmlu", "family gsm8k", "family mt_bench", "family llmrouter-dcrouter"} <= set(masks)
    subject_domains = [k for k in masks if k.startswith("mmlu subjects #")]
    assert subject_domains and "mmlu subjects #0" not in masks
    for name in subject_domains:
        k = int(name.rsplit("#", 1)[1])
        rows = np.nonzero(masks[name])[0]
        assert all(subject_bucket(str(data.domain[i])) == k for i in rows)
    assert subject_bucket("gsm8k") is None
    assert subject_bucket("mmlu/virology") == subject_bucket_of("virology") == 0  # held out whole


def test_family_domains_partition_the_rows() -> None:
    data = load(FIXTURES)
    fam = [m for k, m in domain_masks(data).items() if k.startswith("family ")]
    assert np.array_equal(np.sum(fam, axis=0), np.ones(len(data)))
