"""A namespace's cosine threshold from its own evidence (`index.match.evidence`), both ways.

The bands' wrong rates share a curve, logit p(s) = a + b (prior - s) with b >= 0: the cold-start belief is half
the budget at the prior threshold, growing e-fold every 0.03 of cosine below it, and every label moves the curve
(a grid posterior), so labels in one band inform its neighbours. Each band's rate then has a Beta prior around the
curve (strength 10 labels) that its own labels update, so a band that departs from the curve shows it. A label
model that errs at `error_rate` is part of the likelihood. The wrong rate of everything a threshold t would serve
(hits served whatever the threshold included) is the mass-weighted mixture of the bands at or above t; its
posterior is sampled (seeded: the same evidence always gives the same threshold).

- down: the threshold in force is the lowest t whose mixture is within the budget with probability at least
  `confidence` (0.8), with at least 20 labels between t and the prior: a few hundred labels decide, where a 95%
  bound on a 2% budget needs thousands;
- up: when the mixture at the threshold in force, on the evidence at or above it (the curve refitted on those
  labels alone: near misses below the threshold never raise it), is over the budget with probability at least
  `confidence`, the threshold rises to the lowest t that is no longer over it with that probability;
- otherwise it stays: between "within" and "over" the evidence has not decided, and the threshold does not
  chase noise.

The budget has this one statistic: the posterior of wrong ÷ served at a threshold, read at `CONFIDENCE`. Where the
threshold is in force it is reported as `ThresholdState.upper`, the upper bound at that confidence: the budget
holds there when it is at most the budget.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
import numpy.typing as npt

from index.match.evidence import BAND_WIDTH, Evidence
from index.match.policy import MatchPolicy

Floats = npt.NDArray[np.float64]
# Points per axis of the curve's grid, and the prior's spread of the curve's level (logit units at the prior
# threshold) and slope (logit units per unit of cosine).
CURVE_GRID = 60
CURVE_SD_A = 1.5
CURVE_SD_B = 20.0
DRAWS = 2000
# Below the prior threshold the prior's wrong rate grows e-fold every this much cosine.
PRIOR_SCALE = 0.03
PRIOR_STRENGTH = 10.0
CONFIDENCE = 0.8
# Each band holds at least this share of the evidence's mass (and at least one request): a band no request has
# reached yet is not a band without risk. And a threshold below the prior needs this many labels between it and
# the prior: mass-weighting alone would open empty bands on the strength of the bands above them.
PSEUDO_MASS_SHARE = 0.02
MIN_LABELS_BELOW_PRIOR = 20


@dataclass(frozen=True)
class LearnerConfig:
    """What the learner needs besides the evidence: the budget (wrong ÷ served), the cold-start threshold, the
    lowest threshold it may choose, the labeller's error rate and the confidence of a move."""

    budget: float
    prior: float
    floor: float
    error_rate: float = 0.0
    confidence: float = CONFIDENCE
    prior_strength: float = PRIOR_STRENGTH
    seed: int = 0

    @classmethod
    def for_policy(cls, policy: MatchPolicy, error_rate: float = 0.0, seed: int = 0) -> LearnerConfig:
        """The learner of a deployment running `policy`: its budget, its threshold as the prior, its floor."""
        return cls(policy.max_false_hit_rate, policy.min_similarity, min(policy.learn_floor, policy.min_similarity),
                   error_rate=error_rate, seed=seed)

    def __post_init__(self) -> None:
        if not 0.0 < self.budget < 1.0:
            raise ValueError(f"budget must be in (0, 1), got {self.budget}")
        if not self.floor <= self.prior:
            raise ValueError(f"the lowest threshold {self.floor} is above the prior {self.prior}")
        if not 0.0 <= self.error_rate < 0.5:
            raise ValueError(f"error_rate must be in [0, 0.5), got {self.error_rate}")
        if not 0.5 <= self.confidence < 1.0:
            raise ValueError(f"confidence must be in [0.5, 1), got {self.confidence}")


@dataclass(frozen=True)
class BandView:
    """One band as shown: its evidence and the posterior mean of its wrong rate."""

    low: float
    mass: float
    right: float
    wrong: float
    wrong_rate: float


@dataclass(frozen=True)
class ThresholdState:
    """The threshold in force and what it rests on: the estimated wrong ÷ served there (the posterior mean), the
    probability that it is within the budget and, the same posterior read the other way, its upper bound at the
    learner's confidence (`upper` <= budget exactly when `within` >= confidence: the budget holds there), and how
    many more labels (and requests, at the current label rate) would let it move one band down (None when the
    evidence points the other way)."""

    threshold: float
    prior: float
    estimate: float
    within: float
    upper: float
    labels: int
    bands: tuple[BandView, ...]
    next_down: float | None = None
    labels_to_move: int | None = None
    requests_to_move: int | None = None


@dataclass(frozen=True)
class _Curves:
    """The shared curve's grid, logit p(s) = a + b (prior - s) with b >= 0 (a rate that grows as the cosine falls),
    with its log prior and, per grid point and band, the log-likelihood of one wrong label and of one right label
    (the label model's errors included): computed once per choice, whichever labels a fit then reads."""

    a: Floats
    b: Floats
    log_prior: Floats
    log_wrong: Floats
    log_right: Floats

    @classmethod
    def of(cls, evidence: Evidence, config: LearnerConfig) -> _Curves:
        centre = float(np.log(config.budget / 2.0 / (1.0 - config.budget / 2.0)))
        a_axis = np.linspace(centre - 4.0, centre + 4.0, CURVE_GRID)
        b_axis = np.linspace(0.0, 4.0 / PRIOR_SCALE, CURVE_GRID)
        a, b = (axis.ravel() for axis in np.meshgrid(a_axis, b_axis))
        log_prior = -0.5 * ((a - centre) / CURVE_SD_A) ** 2 - 0.5 * ((b - 1.0 / PRIOR_SCALE) / CURVE_SD_B) ** 2
        lows = np.array([band.low + BAND_WIDTH / 2 for band in evidence.bands])
        p = 1.0 / (1.0 + np.exp(-(a[:, None] + b[:, None] * (config.prior - lows[None, :]))))
        says_wrong = np.clip(config.error_rate + p * (1.0 - 2.0 * config.error_rate), 1e-9, 1.0 - 1e-9)
        return cls(a, b, log_prior, np.log(says_wrong), np.log1p(-says_wrong))


def _curve_posterior(evidence: Evidence, curves: _Curves, start: int = 0) -> Floats:
    """The posterior weights of the shared curve's grid (flattened), fitted on the labels of the bands from
    `start` up: every label informs every band through it."""
    wrong = np.array([band.wrong if j >= start else 0.0 for j, band in enumerate(evidence.bands)])
    right = np.array([band.right if j >= start else 0.0 for j, band in enumerate(evidence.bands)])
    log_post = curves.log_prior + (curves.log_wrong * wrong + curves.log_right * right).sum(axis=1)
    weights = np.exp(log_post - log_post.max())
    normalised: Floats = weights / weights.sum()
    return normalised


def _posterior_draws(evidence: Evidence, config: LearnerConfig, curves: _Curves, start: int = 0) -> Floats:
    """Draws of each band's wrong rate (DRAWS x bands): a curve drawn from its posterior (fitted on the labels of
    the bands from `start` up) gives each band's prior mean (strength `prior_strength`), which the band's own
    labels then update (a label model's labels counted at their information, (1 - 2e)^2 of a clean one, after
    removing the wrong labels its errors explain)."""
    rng = np.random.default_rng(config.seed)
    weights = _curve_posterior(evidence, curves, start)
    a, b = curves.a, curves.b
    chosen = rng.choice(len(weights), size=DRAWS, p=weights)
    lows = np.array([band.low + BAND_WIDTH / 2 for band in evidence.bands])
    mean = 1.0 / (1.0 + np.exp(-(a[chosen, None] + b[chosen, None] * (config.prior - lows[None, :]))))
    mean = np.clip(mean, 1e-6, 1.0 - 1e-6)
    e = config.error_rate
    labels = np.array([band.labels for band in evidence.bands])
    wrong = np.clip((np.array([band.wrong for band in evidence.bands]) - e * labels) / (1.0 - 2.0 * e), 0.0, labels)
    shrink = (1.0 - 2.0 * e) ** 2
    kappa = config.prior_strength
    return rng.beta(kappa * mean + shrink * wrong[None, :], kappa * (1.0 - mean) + shrink * (labels - wrong)[None, :])


def _mixtures(evidence: Evidence, draws: Floats, prior: float) -> tuple[Floats, Floats]:
    """Draws of wrong ÷ served at each band's lower edge taken as the threshold (DRAWS x bands), and the mass
    each threshold would serve. A threshold serving nothing has NaN draws."""
    mass = np.array([band.mass for band in evidence.bands])
    # Empty bands below the prior are not bands without risk; above it they would only dilute the mixture.
    below = np.array([band.low for band in evidence.bands]) < prior - 1e-9
    mass = np.where(below, np.maximum(mass, max(1.0, PSEUDO_MASS_SHARE * float(mass.sum()))), mass)
    served = np.cumsum(mass[::-1])[::-1] + evidence.fixed
    wrong = np.cumsum((draws * mass)[:, ::-1], axis=1)[:, ::-1]
    with np.errstate(invalid="ignore", divide="ignore"):
        return wrong / served, served


def choose(evidence: Evidence, current: float, config: LearnerConfig) -> ThresholdState:
    """The threshold in force after `evidence`, from `current` (the threshold in force before)."""
    lows = np.array([band.low for band in evidence.bands])
    curves = _Curves.of(evidence, config)
    draws = _posterior_draws(evidence, config, curves)
    mixtures, served = _mixtures(evidence, draws, config.prior)
    within = np.where(served > 0, np.mean(mixtures <= config.budget, axis=0), np.nan)
    index = _index_of(lows, current)
    labelled = np.cumsum([band.labels for band in evidence.bands][::-1])[::-1]
    prior = _index_of(lows, config.prior)
    enough = [lows[j] >= config.prior or labelled[j] - labelled[min(prior, len(lows) - 1)] >= MIN_LABELS_BELOW_PRIOR
              for j in range(len(lows))]
    certified = [j for j in range(len(lows)) if enough[j] and within[j] >= config.confidence]
    new = index
    if certified and certified[0] < index:
        new = certified[0]
    elif index < len(lows) and served[index] > 0:
        over = _over(evidence, config, curves, draws, served, index)
        if over[index] >= config.confidence:
            rising = [j for j in range(index + 1, len(lows)) if not served[j] > 0 or over[j] < config.confidence]
            new = rising[0] if rising else len(lows) - 1
    # No move keeps `current` itself, not its band's lower edge: a prior of 1.0 (never) stays 1.0, not 0.99.
    threshold = float(lows[new]) if new != index and new < len(lows) else current
    return _state(evidence, config, threshold, new, draws, mixtures, within)


def _over(evidence: Evidence, config: LearnerConfig, curves: _Curves, draws: Floats, served: Floats,
          index: int) -> Floats:
    """Per threshold, the probability that wrong ÷ served is over the budget on the evidence at or above the band
    `index` of the threshold in force (audits of what it serves, and the labels that once lowered it): near misses
    below it must not raise it through the shared curve. Without labels below it, that fit is the full one: the
    same seeded draws."""
    start = min(index, len(evidence.bands) - 1)
    if any(band.labels for band in evidence.bands[:start]):
        draws = _posterior_draws(evidence, config, curves, start)
    above, _ = _mixtures(evidence, draws, config.prior)
    over: Floats = np.where(served > 0, np.mean(above > config.budget, axis=0), np.nan)
    return over


def _index_of(lows: Floats, threshold: float) -> int:
    """The band whose lower edge is `threshold` (rounded to the band below when between edges)."""
    return int(np.clip(np.searchsorted(lows, threshold + 1e-9) - 1, 0, len(lows)))


def _state(evidence: Evidence, config: LearnerConfig, threshold: float, index: int, draws: Floats,
           mixtures: Floats, within: Floats) -> ThresholdState:
    means = draws.mean(axis=0)
    views = tuple(BandView(b.low, b.mass, b.right, b.wrong, float(m))
                  for b, m in zip(evidence.bands, means, strict=True))
    at = index if index < len(evidence.bands) else len(evidence.bands) - 1
    column = mixtures[:, at]
    estimate = float(np.nanmean(column)) if np.isfinite(column).any() else 0.0
    share = float(within[at]) if np.isfinite(within[at]) else 1.0
    upper = upper_bound(column, config.confidence)
    below = [j for j in range(at) if evidence.bands[j].mass > 0]
    state = ThresholdState(threshold, config.prior, estimate, share, upper, evidence.labels, views)
    if not below:
        return state
    nxt = below[-1]
    labels = _labels_to_trust(evidence, mixtures[:, nxt], nxt, config)
    requests = None
    if labels is not None and evidence.label_rate > 0:
        requests = int(np.ceil(labels / evidence.label_rate))
    return ThresholdState(threshold, config.prior, estimate, share, upper, evidence.labels, views,
                          float(evidence.bands[nxt].low), labels, requests)


def upper_bound(draws: Floats, confidence: float) -> float:
    """The posterior's upper bound on wrong ÷ served at `confidence`: the smallest draw that at least `confidence`
    of the draws do not exceed, so that `upper_bound(draws, c) <= budget` exactly when the share of draws within
    the budget is at least c (0.0 for a threshold that serves nothing: NaN draws)."""
    finite = draws[np.isfinite(draws)]
    return float(np.quantile(finite, confidence, method="inverted_cdf")) if finite.size else 0.0


def _labels_to_trust(evidence: Evidence, column: Floats, index: int, config: LearnerConfig) -> int | None:
    """Labels more, at the rate seen so far, before the threshold `index` is within the budget with the
    learner's confidence (the posterior's spread shrinks as 1/sqrt(labels)) and has the labels a move below the
    prior needs. None: the evidence says over."""
    mean, spread = float(np.mean(column)), float(np.std(column))
    if mean >= config.budget:
        return None
    low = evidence.bands[index].low
    between = sum(b.labels for b in evidence.bands if low <= b.low < config.prior)
    missing = max(0, int(np.ceil(MIN_LABELS_BELOW_PRIOR - between))) if low < config.prior else 0
    if np.mean(column <= config.budget) >= config.confidence:
        return missing
    have = sum(b.labels for b in evidence.bands[index:]) + config.prior_strength
    z = NormalDist().inv_cdf(config.confidence)
    need = have * (z * spread / (config.budget - mean)) ** 2
    return max(1, missing, int(np.ceil(need - have)))
