"""Rates, the running tally of a trace replay, the Wilson and Clopper-Pearson confidence bounds and the
threshold-free AUCs of raw similarity (standard library and numpy only: no scipy or scikit-learn)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
import numpy.typing as npt

# The regularized incomplete beta's continued fraction: relative precision, iterations (it converges in
# O(sqrt(max(a, b))) terms), and the smallest float it divides by.
_BETA_EPS = 1e-15
_BETA_TERMS = 100_000
_TINY = 1e-300


def rate(count: int, total: int) -> float | None:
    """`count / total`, or None when there is nothing to divide by."""
    return count / total if total else None


@dataclass
class Tally:
    """Running totals of one replay of a trace (mutable, local to one run): hits per tier, served answers that
    were (`correct`) or were not (`wrong`) the upstream's, explorations, and `oracle`: requests whose intent
    was seen before (what a cache that knew the intents would serve)."""

    exact: int = 0
    semantic: int = 0
    explored: int = 0
    correct: int = 0
    wrong: int = 0
    oracle: int = 0

    @property
    def served(self) -> int:
        return self.exact + self.semantic

    def score(self, right: bool) -> None:
        """Count one served answer: right when it is the upstream's."""
        if right:
            self.correct += 1
        else:
            self.wrong += 1


def z_score(confidence: float) -> float:
    """Two-sided normal quantile: 1.96 for 0.95."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    return NormalDist().inv_cdf((1.0 + confidence) / 2.0)


def wilson_upper(successes: int, trials: int, confidence: float = 0.95) -> float:
    """Upper end of the Wilson score interval for a proportion (two-sided `confidence`).

    With zero trials nothing is known, so the bound is 1.0.
    """
    if trials < 0 or not 0 <= successes <= trials:
        raise ValueError(f"need 0 <= successes <= trials, got {successes}/{trials}")
    if trials == 0:
        return 1.0
    z = z_score(confidence)
    p = successes / trials
    z2n = z * z / trials
    centre = p + z2n / 2.0
    spread = z * math.sqrt(p * (1.0 - p) / trials + z2n / (4.0 * trials))
    return min(1.0, (centre + spread) / (1.0 + z2n))


def clopper_pearson_upper(wrong: int, served: int, confidence: float = 0.95) -> float:
    """One-sided Clopper-Pearson upper bound on wrong / served (1.0 with nothing served or all wrong)."""
    if served <= 0 or wrong >= served:
        return 1.0
    return beta_quantile(wrong + 1, served - wrong, confidence)


def beta_quantile(a: float, b: float, q: float) -> float:
    """The `q` quantile of Beta(a, b) (scipy's `betaincinv(a, b, q)`), by bisection on the CDF."""
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"q must be in [0, 1], got {q}")
    low, high = 0.0, 1.0
    while high - low > 2.0 * math.ulp(high):  # to the last bits of the answer, whatever its magnitude
        middle = (low + high) / 2.0
        if regularized_beta(a, b, middle) < q:
            low = middle
        else:
            high = middle
    return (low + high) / 2.0


def regularized_beta(a: float, b: float, x: float) -> float:
    """I_x(a, b), the CDF of Beta(a, b) at `x` (scipy's `betainc`): the continued fraction of Numerical Recipes
    (modified Lentz), on whichever side of the mean it converges fast."""
    if a <= 0.0 or b <= 0.0:
        raise ValueError(f"need a > 0 and b > 0, got a={a}, b={b}")
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = (math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
                 + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _beta_fraction(a, b, x) / a
    return 1.0 - math.exp(log_front) * _beta_fraction(b, a, 1.0 - x) / b


def _beta_fraction(a: float, b: float, x: float) -> float:
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    value = d
    for m in range(1, _BETA_TERMS):
        even = m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m))
        odd = -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))
        for term in (even, odd):
            d = 1.0 + term * d
            d = 1.0 / (d if abs(d) > _TINY else _TINY)
            c = 1.0 + term / c
            c = c if abs(c) > _TINY else _TINY
            value *= c * d
        if abs(c * d - 1.0) < _BETA_EPS:
            return value
    raise ArithmeticError(f"the incomplete beta's continued fraction did not converge (a={a}, b={b}, x={x})")


def trials_needed(target: float, confidence: float = 0.95) -> int:
    """Fewest trials whose Wilson upper bound is <= `target` even with zero successes."""
    if not 0.0 < target < 1.0:
        raise ValueError(f"target must be in (0, 1), got {target}")
    z2 = z_score(confidence) ** 2
    return math.ceil(z2 * (1.0 - target) / target - 1e-9)


def f1(precision: float | None, recall: float | None) -> float | None:
    if precision is None or recall is None:
        return None
    if precision + recall == 0.0:
        return 0.0
    return 2.0 * precision * recall / (precision + recall)


def roc_auc(labels: Sequence[bool], scores: Sequence[float]) -> float | None:
    """Area under the ROC curve of `scores` for `labels`; None unless both classes occur."""
    if len(set(labels)) < 2:
        return None
    positive = np.asarray(labels, dtype=bool)
    # Mann-Whitney U: tied scores share their average rank, i.e. count one half (as sklearn's roc_auc_score).
    ranks = _average_ranks(np.asarray(scores, dtype=np.float64))
    n_pos = int(positive.sum())
    n_neg = len(positive) - n_pos
    return float((ranks[positive].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))


def pr_auc(labels: Sequence[bool], scores: Sequence[float]) -> float | None:
    """Average precision (area under the precision-recall curve), positives = `True` labels."""
    if len(set(labels)) < 2:
        return None
    order = np.argsort(-np.asarray(scores, dtype=np.float64), kind="mergesort")
    ranked = np.asarray(scores, dtype=np.float64)[order]
    positive = np.asarray(labels, dtype=bool)[order]
    # One point per distinct score (ties enter together), as sklearn's average_precision_score:
    # AP = sum over those points of (recall step) x precision.
    last_of_tie = np.r_[np.flatnonzero(np.diff(ranked)), len(ranked) - 1]
    true_pos = np.cumsum(positive)[last_of_tie]
    precision = true_pos / (last_of_tie + 1)
    recall_step = np.diff(np.r_[0, true_pos]) / true_pos[-1]
    return float(np.sum(recall_step * precision))


def _average_ranks(values: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """1-based ranks of `values`, ties sharing their average rank (scipy's rankdata, method "average")."""
    order = np.argsort(values, kind="mergesort")
    ordered = values[order]
    starts = np.r_[0, np.flatnonzero(np.diff(ordered)) + 1]
    ends = np.r_[starts[1:], len(values)]
    ranks = np.empty(len(values), dtype=np.float64)
    ranks[order] = np.repeat((starts + ends + 1) / 2.0, ends - starts)
    return ranks
