"""Rates, the running tally of a trace replay, the Wilson and Clopper-Pearson confidence bounds and the
threshold-free AUCs of raw similarity."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

from scipy.special import betaincinv  # beta.ppf without importing scipy.stats (1.3 s of start-up)


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
    return float(betaincinv(wrong + 1, served - wrong, confidence))  # = scipy.stats.beta.ppf


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
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(list(labels), list(scores)))


def pr_auc(labels: Sequence[bool], scores: Sequence[float]) -> float | None:
    """Average precision (area under the precision-recall curve), positives = `True` labels."""
    if len(set(labels)) < 2:
        return None
    from sklearn.metrics import average_precision_score

    return float(average_precision_score(list(labels), list(scores)))
