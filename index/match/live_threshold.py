"""A namespace's cosine threshold from its own evidence (`index.match.evidence`), both ways, by one statistic.

**The statistic.** For every threshold t the learner could choose, the posterior of wrong ÷ served at t: the
mass-weighted mixture of the wrong rates of everything t would serve (hits served whatever the threshold count as
served, with no wrong). It is read at `CONFIDENCE` (95%) as an upper bound, and the budget holds at t when that
bound is at most the budget. Each t is judged on **the evidence of what t serves** only:

- the bands at or above the cold-start threshold (the prior) form one stratum, whose rate starts from the prior's
  own evidence (`PRIOR_LABELS` pseudo-labels at a quarter of the budget: the default was chosen and gated offline on
  every labelled source, and a 95% bound on it is within the budget on a cold cache) and is updated by the labels of
  those bands (audits of served hits); at a t above the prior only the bands from t up count, with the prior's
  pseudo-labels in proportion to the traffic they keep;
- each band below the prior is a stratum of its own: its cold-start belief is half the budget at the prior growing
  e-fold every `PRIOR_SCALE` of cosine below it, worth `PRIOR_STRENGTH` labels, and only its **own** labels (shadows
  of near misses while it was closed, audits once it is open) update it. Labels of one band never open another:
  the shared curve that let them (and let near misses below a threshold paint the bands above it red) is gone.

A label model that errs at `error_rate` is part of the likelihood (its labels counted at their information). Draws
are seeded: the same evidence always gives the same threshold.

**The rule**, the same both ways: the threshold in force is the lowest t whose bound is within the budget, and
which, below the prior, rests on at least `MIN_LABELS_BELOW_PRIOR` labels between t and the prior. When the bound
at the threshold in force goes over the budget (audits of what it serves come back wrong), that t is no longer
eligible and the threshold rises, as far as it must (to 1.0, serving no cosine hit of this kind, when no t holds).
So the report and the learner never disagree: the bound shown at the threshold in force is the one the rule read,
and it is within the budget wherever a cosine hit of the kind is served.

**Coverage.** `eval calibrate` and `tests/unit/index/match/test_calibration.py` simulate namespaces with known
truth (cache growth, twins that arrive after their paraphrases opened a band, bursts of a new intent, label noise,
few and many labels) and measure how often the reported bound covers the true wrong ÷ served of what is served.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
import numpy.typing as npt

from index.match.evidence import BAND_WIDTH, Evidence
from index.match.policy import MatchPolicy

Floats = npt.NDArray[np.float64]
DRAWS = 4000
# Below the prior threshold the cold-start wrong rate grows e-fold every this much cosine; a band's cold-start
# belief weighs this many labels.
PRIOR_SCALE = 0.03
PRIOR_STRENGTH = 10.0
# What the cold-start threshold's offline evidence is worth, in labels, and the wrong rate it says (a share of the
# budget): Beta(0.18, 59.8) for a 2% budget, whose 95% bound (1.7%) holds on a cold cache, and which a few wrong
# audits among tens overturn (two wrong in 30 say over).
PRIOR_LABELS = 60.0
PRIOR_RATE_SHARE = 0.15
# The vague belief the prior's evidence is mixed with (Beta(0.5, 20): a mean of 2.4%) and its weight: small
# enough that the bound holds on a cold cache, large enough that labels contradicting the prior take over.
VAGUE = (0.5, 20.0)
VAGUE_WEIGHT = 0.03
CONFIDENCE = 0.95
# Each band below the prior holds at least this share of the evidence's mass (and at least one request): a band no
# request has reached yet is not a band without risk. And a threshold below the prior needs this many labels
# between it and the prior.
PSEUDO_MASS_SHARE = 0.02
MIN_LABELS_BELOW_PRIOR = 40
# The threshold of a kind that serves no cosine hit at all.
NEVER = 1.0
# Below this many labels (aged) of the hits served at or above the prior (where the bound rests on the prior's
# evidence), the namespace's hits are audited densely (`index.match.audit_sampler`, within the allowance).
TARGET_SUPPORT = 100.0


@dataclass(frozen=True)
class LearnerConfig:
    """What the learner needs besides the evidence: the budget (wrong ÷ served), the cold-start threshold, the
    lowest threshold it may choose, the labeller's error rate and the confidence of the bound."""

    budget: float
    prior: float
    floor: float
    error_rate: float = 0.0
    # Beyond `error_rate`, how often a label calls a wrong answer right (answer comparison's blind spot).
    false_same: float = 0.0
    confidence: float = CONFIDENCE
    prior_strength: float = PRIOR_STRENGTH
    seed: int = 0

    @classmethod
    def for_policy(cls, policy: MatchPolicy, error_rate: float = 0.0, seed: int = 0,
                   false_same: float = 0.0) -> LearnerConfig:
        """The learner of a deployment running `policy`: its budget, its threshold as the prior, its floor."""
        return cls(policy.max_false_hit_rate, policy.min_similarity, min(policy.learn_floor, policy.min_similarity),
                   error_rate=error_rate, false_same=false_same, seed=seed)

    def __post_init__(self) -> None:
        if not 0.0 < self.budget < 1.0:
            raise ValueError(f"budget must be in (0, 1), got {self.budget}")
        if not self.floor <= self.prior:
            raise ValueError(f"the lowest threshold {self.floor} is above the prior {self.prior}")
        if not 0.0 <= self.error_rate < 0.5:
            raise ValueError(f"error_rate must be in [0, 0.5), got {self.error_rate}")
        if not 0.0 <= self.false_same < 0.5 - self.error_rate:
            raise ValueError(f"false_same must be in [0, 0.5 - error_rate), got {self.false_same}")
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
    """The threshold in force and what it rests on: the estimated wrong ÷ served there (the posterior mean, never
    above the bound), the probability that it is within the budget and, the same posterior read the other way, its
    upper bound at the learner's confidence (`upper` <= budget exactly when `within` >= confidence: the budget
    holds there), and how many more labels (and requests, at the current label rate) would let it move one band
    down (None when the evidence points the other way)."""

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
    # Labels (aged) of the served bands at or above the prior: what their stratum rests on besides the prior.
    support: float = 0.0

    @property
    def thin(self) -> bool:
        """The bound rests mostly on the prior: fewer than `TARGET_SUPPORT` labels of the hits served at or above
        it."""
        return self.support < TARGET_SUPPORT


@dataclass(frozen=True)
class _Posterior:
    """Per threshold (a band's lower edge, and NEVER after the last), draws of wrong ÷ served (DRAWS x thresholds;
    NaN where it serves nothing), the mass each would serve, and each band's posterior mean wrong rate."""

    mixtures: Floats
    served: Floats
    band_means: Floats


def _clean(evidence: Evidence, config: LearnerConfig) -> tuple[Floats, Floats, float]:
    """Per band, the labels and the wrong labels the labeller's errors do not explain, and the weight of one label
    (its information: (1 - a - b)^2 of a clean one). A wrong answer is labelled right at a = error_rate +
    false_same, a right one wrong at b = error_rate: the wrong labels seen are (1 - a - b) x the wrong answers +
    b x the labels."""
    b = config.error_rate
    a = b + config.false_same
    labels = np.array([band.labels for band in evidence.bands], dtype=np.float64)
    wrong = np.array([band.wrong for band in evidence.bands], dtype=np.float64)
    wrong = np.clip((wrong - b * labels) / (1.0 - a - b), 0.0, labels)
    return labels, wrong, (1.0 - a - b) ** 2


def _posterior(evidence: Evidence, config: LearnerConfig) -> _Posterior:
    rng = np.random.default_rng(config.seed)
    bands = evidence.bands
    count = len(bands)
    lows = np.array([band.low for band in bands], dtype=np.float64)
    centres = lows + BAND_WIDTH / 2
    labels, wrong, shrink = _clean(evidence, config)
    above = lows >= config.prior - 1e-9
    top = int(np.argmax(above)) if above.any() else count
    mass = np.array([band.mass for band in bands], dtype=np.float64)
    # Empty bands below the prior are not bands without risk; above it they would only dilute the mixture.
    mass = np.where(~above, np.maximum(mass, max(1.0, PSEUDO_MASS_SHARE * float(mass.sum()))), mass)
    # Below the prior: each band on its own labels, from its cold-start belief.
    q0 = config.budget / 2.0
    logit = np.log(q0 / (1.0 - q0)) + (config.prior - centres) / PRIOR_SCALE
    mean = np.clip(1.0 / (1.0 + np.exp(-logit)), 1e-6, 1.0 - 1e-6)
    kappa = config.prior_strength
    alpha = kappa * mean + shrink * wrong
    beta = kappa * (1.0 - mean) + shrink * (labels - wrong)
    rates = np.zeros((DRAWS, count))
    if top:
        rates[:, :top] = rng.beta(alpha[:top], beta[:top], size=(DRAWS, top))
    band_means = np.where(~above, alpha / (alpha + beta), 0.0)
    # At and above the prior: one stratum per threshold, the bands it serves pooled with the prior's evidence.
    q = PRIOR_RATE_SHARE * config.budget
    above_mass = float(mass[top:].sum())
    mixtures = np.full((DRAWS, count + 1), np.nan)
    served = np.zeros(count + 1)
    below_wrong = np.cumsum((rates[:, :top] * mass[:top])[:, ::-1], axis=1)[:, ::-1]
    below_mass = np.cumsum(mass[:top][::-1])[::-1]
    kept_mass = np.append(np.cumsum(mass[::-1])[::-1], 0.0)
    kept_wrong = np.append(np.cumsum(wrong[::-1])[::-1], 0.0)
    kept_labels = np.append(np.cumsum(labels[::-1])[::-1], 0.0)
    strata: dict[int, Floats] = {}
    for j in range(count + 1):
        start = max(j, top)
        kept = float(kept_mass[start])
        if start not in strata:
            share = kept / above_mass if above_mass > 0 else 1.0
            w = shrink * float(kept_wrong[start])
            r = shrink * float(kept_labels[start] - kept_wrong[start])
            strata[start], mean_rate = _robust_draws(rng, PRIOR_LABELS * q * share, PRIOR_LABELS * (1.0 - q) * share,
                                                     w, r)
            if start == top < count:
                band_means[top:] = mean_rate
        total = kept + evidence.fixed + (float(below_mass[j]) if j < top else 0.0)
        served[j] = total
        if total <= 0:
            continue
        bad = strata[start] * kept + (below_wrong[:, j] if j < top else 0.0)
        mixtures[:, j] = bad / total
    return _Posterior(mixtures, served, band_means)


def _log_beta(a: float, b: float) -> float:
    return math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)


def _robust_draws(rng: np.random.Generator, a: float, b: float, wrong: float, right: float) -> tuple[Floats, float]:
    """Draws of the rate above the prior, and their mean: the prior's evidence Beta(a, b) mixed with a vague belief
    (`VAGUE`, weight `VAGUE_WEIGHT`), each updated by the labels and weighed by how well it predicted them. Labels
    that agree with the prior leave it in charge; labels that contradict it (a deployment where the default serves
    too many wrong answers) hand the bound to the vague belief within tens of labels, instead of the hundreds the
    prior's pseudo-labels alone would need."""
    if a <= 0 or b <= 0:
        return np.zeros(DRAWS), 0.0
    va, vb = VAGUE
    tight = math.log1p(-VAGUE_WEIGHT) + _log_beta(a + wrong, b + right) - _log_beta(a, b)
    vague = math.log(VAGUE_WEIGHT) + _log_beta(va + wrong, vb + right) - _log_beta(va, vb)
    p_vague = 1.0 / (1.0 + math.exp(min(700.0, tight - vague)))
    pick = rng.random(DRAWS) < p_vague
    draws = np.where(pick, rng.beta(va + wrong, vb + right, size=DRAWS), rng.beta(a + wrong, b + right, size=DRAWS))
    mean = (1.0 - p_vague) * (a + wrong) / (a + b + wrong + right) + p_vague * (va + wrong) / (va + vb + wrong + right)
    return draws, mean


def _thresholds(evidence: Evidence) -> Floats:
    return np.array([*(band.low for band in evidence.bands), NEVER], dtype=np.float64)


def choose(evidence: Evidence, current: float, config: LearnerConfig) -> ThresholdState:
    """The threshold in force after `evidence`: the lowest threshold whose bound holds (see the module docstring).
    `current` (the threshold in force before) is kept exactly when the choice falls in its band."""
    posterior = _posterior(evidence, config)
    thresholds = _thresholds(evidence)
    count = len(evidence.bands)
    within = _within(posterior, config)
    labelled = np.cumsum([band.labels for band in evidence.bands][::-1])[::-1]
    top = next((j for j in range(count) if thresholds[j] >= config.prior - 1e-9), count)
    at_prior = float(labelled[top]) if top < count else 0.0
    enough = [j >= top or float(labelled[j]) - at_prior >= MIN_LABELS_BELOW_PRIOR for j in range(count + 1)]
    new = next(j for j in range(count + 1) if (enough[j] and within[j] >= config.confidence) or j == count)
    if new == top:
        threshold = config.prior
    elif new == _index_of(thresholds[:count], current) and new < count:
        threshold = current
    else:
        threshold = float(thresholds[new])
    return _state(evidence, config, threshold, new, posterior, within)


def _within(posterior: _Posterior, config: LearnerConfig) -> Floats:
    """Per threshold, the posterior probability that wrong ÷ served is within the budget (1.0 where it serves
    nothing)."""
    finite = np.isfinite(posterior.mixtures)
    inside = np.where(finite, posterior.mixtures <= config.budget, True)
    result: Floats = inside.mean(axis=0)
    return result


def _index_of(lows: Floats, threshold: float) -> int:
    """The band whose lower edge is `threshold` (rounded to the band below when between edges)."""
    return int(np.clip(np.searchsorted(lows, threshold + 1e-9) - 1, 0, len(lows)))


def _state(evidence: Evidence, config: LearnerConfig, threshold: float, index: int, posterior: _Posterior,
           within: Floats) -> ThresholdState:
    views = tuple(BandView(b.low, b.mass, b.right, b.wrong, float(m))
                  for b, m in zip(evidence.bands, posterior.band_means, strict=True))
    column = posterior.mixtures[:, index]
    upper = upper_bound(column, config.confidence)
    estimate = min(float(np.nanmean(column)), upper) if np.isfinite(column).any() else 0.0
    share = float(within[index])
    support = float(sum(b.labels for b in evidence.bands[index:] if b.low >= config.prior - 1e-9))
    state = ThresholdState(threshold, config.prior, estimate, share, upper, evidence.labels, views, support=support)
    below = [j for j in range(min(index, len(evidence.bands))) if evidence.bands[j].mass > 0]
    if not below:
        return state
    nxt = below[-1]
    labels = _labels_to_trust(evidence, posterior.mixtures[:, nxt], nxt, config)
    requests = None
    if labels is not None and evidence.label_rate > 0:
        requests = int(np.ceil(labels / evidence.label_rate))
    return ThresholdState(threshold, config.prior, estimate, share, upper, evidence.labels, views,
                          float(evidence.bands[nxt].low), labels, requests, support)


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
