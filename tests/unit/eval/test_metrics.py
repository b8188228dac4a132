"""Rates, the Wilson bound, sample sizes and AUCs on hand-computed cases."""

from __future__ import annotations

import pytest

from eval.metrics import f1, pr_auc, rate, roc_auc, trials_needed, wilson_upper, z_score


def test_z_score_for_95_percent_is_1_96() -> None:
    assert z_score(0.95) == pytest.approx(1.959964, abs=1e-6)


@pytest.mark.parametrize(
    ("successes", "trials", "expected"),
    [
        pytest.param(0, 10, 0.277532, id="zero-of-10"),  # z^2 / (n + z^2)
        pytest.param(5, 10, 0.763407, id="half-of-10"),
        pytest.param(1, 100, 0.054486, id="one-of-100"),
        pytest.param(10, 10, 1.0, id="all-of-10"),
        pytest.param(0, 0, 1.0, id="no-trials-knows-nothing"),
    ],
)
def test_wilson_upper_matches_hand_computed_values(successes: int, trials: int, expected: float) -> None:
    assert wilson_upper(successes, trials) == pytest.approx(expected, abs=1e-5)


def test_wilson_upper_shrinks_with_sample_size_at_the_same_rate() -> None:
    assert wilson_upper(1, 100) > wilson_upper(10, 1000) > wilson_upper(100, 10000) > 0.01


def test_wilson_upper_rejects_impossible_counts() -> None:
    with pytest.raises(ValueError):
        wilson_upper(3, 2)


def test_trials_needed_is_the_smallest_sample_that_can_prove_the_target() -> None:
    needed = trials_needed(0.01)
    assert needed == 381
    assert wilson_upper(0, needed) <= 0.01 < wilson_upper(0, needed - 1)


def test_rate_and_f1_handle_empty_denominators() -> None:
    assert rate(1, 4) == 0.25
    assert rate(0, 0) is None
    assert f1(0.5, 1.0) == pytest.approx(2 / 3)
    assert f1(None, 1.0) is None
    assert f1(0.0, 0.0) == 0.0


def test_aucs_of_perfectly_separated_scores_are_one() -> None:
    labels = [True, True, False, False]
    scores = [0.9, 0.8, 0.3, 0.1]
    assert roc_auc(labels, scores) == pytest.approx(1.0)
    assert pr_auc(labels, scores) == pytest.approx(1.0)


def test_auc_of_one_swapped_pair_is_three_quarters() -> None:
    assert roc_auc([True, True, False, False], [0.9, 0.2, 0.3, 0.1]) == pytest.approx(0.75)


def test_aucs_need_both_classes() -> None:
    assert roc_auc([True, True], [0.1, 0.2]) is None
    assert pr_auc([False], [0.1]) is None
