"""Answer comparison against the truth of real answers (`eval.answer_labels`: the SGD dev dialogues' system turns,
read where they lie, `DEJA_SHARED_DATASETS`, default `../shared/datasets`): the contrast check takes most of the
contrasting answers it labelled same away, and same answers are still labelled same."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from eval.answer_labels import CONTRASTING, SAME, AnswerPair, errors, measure, pairs
from eval.sgd import SGD_DEV
from index.embedding.embedder import HashEmbedder

ROOT = Path(__file__).resolve().parents[3]
SHARED = Path(os.environ.get("DEJA_SHARED_DATASETS", ROOT.parent / "shared" / "datasets"))


@pytest.fixture(scope="module")
def items() -> list[AnswerPair]:
    if not (SHARED / SGD_DEV).is_dir():
        pytest.skip(f"the SGD dialogues are not at {SHARED / SGD_DEV}")
    return pairs(SHARED, seed=0, limit=200)


def test_the_pairs_hold_both_kinds_in_both_splits(items: list[AnswerPair]) -> None:
    kinds = {(p.kind, p.split) for p in items}
    assert kinds == {(k, s) for k in (SAME, CONTRASTING) for s in ("dev", "test")}
    assert all(p.same is (p.kind == SAME) for p in items)


def test_the_contrast_check_takes_most_false_same_labels_away_and_same_answers_stay_same(
        items: list[AnswerPair]) -> None:
    embedder = HashEmbedder(dim=256)
    checked, unchecked = (errors(measure(items, embedder, 0.95, contrast=on)) for on in (True, False))
    assert unchecked["false_same"] is not None and checked["false_same"] is not None
    assert checked["false_same"] <= unchecked["false_same"] / 2
    tallies = measure(items, embedder, 0.95)
    assert sum(t.same for (kind, _), t in tallies.items() if kind == SAME) >= 30
