"""The pair model's fitted records: `PairCalibration` (its mean logit to P(same answer)) and `Combination` (the
logistic stack of the judge's P, the pair model's P and the cosine, with its bar per false-hit budget)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

_EPS = 1e-4


@dataclass(frozen=True)
class PairCalibration:
    """Monotone map from the mean logit to P(same answer): linear between fitted knots, clipped outside."""

    xs: tuple[float, ...]
    ys: tuple[float, ...]

    def __post_init__(self) -> None:
        if len(self.xs) != len(self.ys) or not self.xs:
            raise ValueError("calibration needs as many ys as xs, and at least one knot")
        if any(b < a for a, b in zip(self.xs, self.xs[1:], strict=False)):
            raise ValueError("calibration xs must be sorted")
        if not all(0.0 <= y <= 1.0 for y in self.ys):
            raise ValueError("calibration ys must be probabilities")

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> PairCalibration:
        return cls(tuple(map(float, raw["xs"])), tuple(map(float, raw["ys"])))

    def probabilities(self, raw: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        return np.interp(raw, self.xs, self.ys)


def _logit(p: float) -> float:
    p = min(max(p, _EPS), 1.0 - _EPS)
    return math.log(p / (1.0 - p))


@dataclass(frozen=True)
class Combination:
    """Logistic stack: P = sigmoid(w_judge * logit(judge P) + w_pair * logit(pair P) + w_cos * cosine + bias).

    `min_probability` is the bar fitted with it: the smallest P whose false-hit rate stays within the budget
    on each realistic calibration source. Every input is about the one pair (no rank or margin), so a lone
    candidate scores as it would among many.
    """

    w_judge: float
    w_pair: float
    w_cosine: float
    bias: float
    min_probability: float
    # (budget, bar) pairs, budgets ascending: the lowest P whose wrong / served stays within that budget on each
    # realistic calibration source. Empty = only `min_probability`, at the budget it was fitted for.
    bars: tuple[tuple[float, float], ...] = ()
    budget: float = 0.02

    def __post_init__(self) -> None:
        if not 0.0 <= self.min_probability <= 1.0:
            raise ValueError(f"min_probability must be a probability, got {self.min_probability}")
        if any(b[0] >= a[0] for a, b in zip(self.bars[1:], self.bars, strict=False)):
            raise ValueError("combination bars must be sorted by budget")

    def cut(self, max_false_hit_rate: float) -> float:
        """The bar for a budget: that of the largest fitted budget not above it (never a looser one); a budget
        below every fitted one serves nothing."""
        table = self.bars or ((self.budget, self.min_probability),)
        fitted = [bar for budget, bar in table if budget <= max_false_hit_rate + 1e-12]
        return fitted[-1] if fitted else math.inf

    def bounds(self, judge_p: float, cosine: float, pair_range: tuple[float, float]) -> tuple[float, float]:
        """The lowest and highest P the stack can give this judge P and cosine, over the pair model's range: when
        a bar lies outside them, the pair model cannot change the decision and need not run."""
        low, high = (self.probability(judge_p, p, cosine) for p in pair_range)
        return (low, high) if low <= high else (high, low)

    def probability(self, judge_p: float, pair_p: float, cosine: float) -> float:
        for name, value in (("judge_p", judge_p), ("pair_p", pair_p)):
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be a probability in [0, 1], got {value}")
        if not -1.0 - 1e-6 <= cosine <= 1.0 + 1e-6:
            raise ValueError(f"cosine must be a similarity in [-1, 1], got {cosine}")
        z = self.w_judge * _logit(judge_p) + self.w_pair * _logit(pair_p) + self.w_cosine * cosine + self.bias
        return 1.0 / (1.0 + math.exp(-max(min(z, 60.0), -60.0)))

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Combination:
        w = raw["weights"]
        bars = tuple((float(b), float(v)) for b, v in raw.get("bars", ()))
        return cls(float(w["judge"]), float(w["pair"]), float(w["cosine"]), float(raw["bias"]),
                   float(raw["min_probability"]), bars, float(raw.get("budget", 0.02)))
