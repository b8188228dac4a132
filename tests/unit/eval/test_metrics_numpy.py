"""The numpy and standard-library statistics that replaced scipy and scikit-learn in `eval`: the Clopper-Pearson
bound, the AUCs with tied scores and the vCache logistic fit, against values scipy and scikit-learn give (quoted
here, and recomputed when the training extra puts them in the environment)."""

from __future__ import annotations

import importlib.util
import random

import numpy as np
import pytest

from eval.metrics import beta_quantile, clopper_pearson_upper, pr_auc, regularized_beta, roc_auc
from eval.vcache import PRIOR_OBSERVATIONS, fit_threshold, logistic_fit, sigmoid

HAS_SCIPY = importlib.util.find_spec("scipy") is not None
HAS_SKLEARN = importlib.util.find_spec("sklearn") is not None
TIED_LABELS = [True, False, True, True, False, False, True]
TIED_SCORES = [0.9, 0.9, 0.8, 0.5, 0.5, 0.2, 0.1]


@pytest.mark.parametrize(("wrong", "served", "confidence", "expected"), [
    pytest.param(0, 10, 0.95, 0.2588655508930522, id="none-wrong-of-10"),
    pytest.param(1, 100, 0.95, 0.046559811453538935, id="one-of-100"),
    pytest.param(5, 50, 0.8, 0.15352242757513337, id="five-of-50-at-80"),
    pytest.param(30, 1000, 0.99, 0.04505042919202844, id="thirty-of-1000-at-99"),
])
def test_clopper_pearson_matches_scipy_betaincinv(wrong: int, served: int, confidence: float, expected: float) -> None:
    assert clopper_pearson_upper(wrong, served, confidence) == pytest.approx(expected, rel=1e-12)


def test_clopper_pearson_knows_nothing_without_service_or_with_all_wrong() -> None:
    assert clopper_pearson_upper(0, 0) == 1.0 and clopper_pearson_upper(4, 4) == 1.0


def test_the_beta_quantile_inverts_the_beta_cdf() -> None:
    for a, b, q in [(1.0, 1.0, 0.3), (2.5, 7.0, 0.95), (400.0, 3.0, 0.01), (0.5, 0.5, 0.5)]:
        assert regularized_beta(a, b, beta_quantile(a, b, q)) == pytest.approx(q, abs=1e-12)
    assert beta_quantile(1.0, 1.0, 0.25) == pytest.approx(0.25, abs=1e-15)  # Beta(1, 1) is uniform


@pytest.mark.skipif(not HAS_SCIPY, reason="scipy is in the training extra only")
def test_the_beta_functions_agree_with_scipy_over_a_grid() -> None:
    from scipy.special import betainc, betaincinv

    rng = np.random.default_rng(0)
    for a, b, x in zip(rng.uniform(0.1, 500, 300), rng.uniform(0.1, 500, 300), rng.uniform(0, 1, 300), strict=True):
        assert regularized_beta(a, b, x) == pytest.approx(float(betainc(a, b, x)), abs=1e-12)
    for served in (3, 50, 381, 10_000, 1_000_000):
        for wrong in sorted({0, 1, served // 10, served - 1}):
            assert clopper_pearson_upper(wrong, served, 0.95) == pytest.approx(
                float(betaincinv(wrong + 1, served - wrong, 0.95)), rel=1e-8)


def test_aucs_with_tied_scores_count_a_tie_as_half_as_sklearn_does() -> None:
    assert roc_auc(TIED_LABELS, TIED_SCORES) == pytest.approx(0.5, abs=1e-15)
    assert pr_auc(TIED_LABELS, TIED_SCORES) == pytest.approx(0.5845238095238094, abs=1e-15)


@pytest.mark.skipif(not HAS_SKLEARN, reason="scikit-learn is in the training extra only")
def test_aucs_agree_with_sklearn_on_random_scores_with_ties() -> None:
    from sklearn.metrics import average_precision_score, roc_auc_score

    rng = np.random.default_rng(1)
    for _ in range(200):
        n = int(rng.integers(2, 200))
        labels = rng.random(n) < 0.4
        if labels.all() or not labels.any():
            continue
        scores = np.round(rng.random(n), int(rng.integers(1, 4)))
        assert roc_auc(list(labels), list(scores)) == pytest.approx(float(roc_auc_score(labels, scores)), abs=1e-12)
        assert pr_auc(list(labels), list(scores)) == pytest.approx(
            float(average_precision_score(labels, scores)), abs=1e-12)


def test_sigmoid_is_stable_at_both_ends() -> None:
    values = sigmoid(np.array([-1000.0, -1.0, 0.0, 1.0, 1000.0]))
    assert values.tolist() == pytest.approx([0.0, 1 / (1 + np.e), 0.5, 1 / (1 + np.exp(-1)), 1.0])


def test_the_overlapping_fit_is_the_maximum_likelihood_one() -> None:
    # scikit-learn's LogisticRegression(C=inf, lbfgs, tol=1e-8) on these labels: t_hat 0.767, gamma 15.696.
    sims = [0.0, 1.0, 0.6, 0.7, 0.75, 0.8, 0.82, 0.9, 0.7, 0.85]
    labels = [False, True, False, True, False, True, False, True, False, True]
    fit = fit_threshold(sims, labels)
    assert (fit.t_hat, fit.gamma) == (0.767, 15.696)


def _observations(rng: random.Random, separable: bool) -> tuple[list[float], list[bool]]:
    drawn = [(round(rng.uniform(0.6, 1.0), 3), rng.random() < 0.8) for _ in range(rng.randint(4, 30))]
    if separable:
        cut = rng.uniform(0.7, 0.9)
        drawn = [(s, s > cut) for s, _ in drawn]
    sims, labels = zip(*(list(PRIOR_OBSERVATIONS) + drawn), strict=True)
    return list(sims), list(labels)


@pytest.mark.skipif(not HAS_SKLEARN, reason="scikit-learn is in the training extra only")
def test_the_fit_agrees_with_sklearns_lbfgs() -> None:
    """Overlapping labels: the same maximum-likelihood curve to the rounding fit_threshold keeps. Separable labels
    have no maximum: both optimizers stop at the same gradient tolerance with a steep curve whose threshold lies
    between the classes, the two within a twentieth of the gap between them."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression

    rng = random.Random(0)
    for trial in range(40):
        sims, labels = _observations(rng, separable=trial % 2 == 1)
        x = np.column_stack([np.ones(len(sims)), sims])
        y = np.asarray(labels, dtype=np.int64)
        model = LogisticRegression(C=np.inf, solver="lbfgs", tol=1e-8, max_iter=1000, fit_intercept=False)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model.fit(x, y)
        (a, b), (c, d) = model.coef_[0], logistic_fit(x, y)
        low, high = x[y == 0, 1].max(), x[y == 1, 1].min()
        if high > low:
            assert low < -a / b < high and low < -c / d < high and d > 30
            assert abs(-a / b + c / d) < (high - low) / 20
        else:
            assert (round(-a / b, 3), round(b, 3)) == (round(-c / d, 3), round(d, 3))
