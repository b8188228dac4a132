"""Refitting the judge on a deployment's labels, pooled with the prior's calibration pairs."""

from __future__ import annotations

import pytest

from eval.refit import refit_judge
from index.judge.features import JudgeInput
from index.judge.model import Judge


@pytest.fixture
def prior(small_prior: Judge) -> Judge:
    return small_prior


def _labels() -> tuple[list[JudgeInput], list[bool]]:
    same = [JudgeInput(f"how do i freeze my card {i}", f"freeze my card please {i}", 0.9) for i in range(30)]
    different = [JudgeInput(f"how do i freeze my card {i}", f"how do i unfreeze my card {i}", 0.93) for i in range(30)]
    return same + different, [True] * 30 + [False] * 30


def test_refit_calibrates_on_held_out_prior_pairs_and_traffic(prior: Judge) -> None:
    items, labels = _labels()
    judge = refit_judge(items, labels, prior, seed=1)
    assert judge.prior is prior and judge.version != prior.version
    assert judge.metadata["traffic_held_out"] == 18
    assert len(judge.calibration.labels) == judge.metadata["prior_pairs_held_out"] + 18
    p = judge.probabilities(items)
    assert p[:30].mean() > p[30:].mean()  # it learned the flip the labels teach


def test_one_sided_labels_are_refused(prior: Judge) -> None:
    items, _ = _labels()
    with pytest.raises(ValueError, match="both"):
        refit_judge(items, [True] * len(items), prior, seed=1)
