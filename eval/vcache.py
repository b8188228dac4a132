"""The vCache baseline (arXiv 2502.03771, "vCache: verified semantic prompt caching"), for `eval replay`.

Each cached entry learns its own threshold: a logistic curve P(correct | cosine s) = sigmoid(gamma (s - t)) fitted
on the (similarity, same answer?) labels gathered when requests near it were sent upstream anyway. A request
whose nearest entry has fewer than six labels is explored (answered upstream and labelled by comparing the
answers); otherwise it is explored with probability tau, the smallest over a grid of epsilon of
1 - delta / (1 - (1 - epsilon) sigmoid(gamma (s - t'))), where t' is the (1 - epsilon) upper confidence quantile
of the fitted threshold. tau <= 0 means serving keeps the error rate under delta. This follows the maths of
vCache's open-source `VerifiedDecisionPolicy`; written here from its description, eval-only.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from statistics import NormalDist

import numpy as np
import numpy.typing as npt

from eval.datasets import StreamRequest
from eval.metrics import Tally, rate
from eval.replay import Upstream, stub_upstream
from index.embedding.embedder import Embedder
from index.records import answer_text

# Every entry starts with two pseudo-labels (cosine 0 wrong, cosine 1 right) and is explored until it holds
# MIN_OBSERVATIONS, as vCache does.
PRIOR_OBSERVATIONS: tuple[tuple[float, bool], ...] = ((0.0, False), (1.0, True))
MIN_OBSERVATIONS = 6
EPSILON_GRID = np.linspace(1e-6, 1 - 1e-6, 50)
# Variance of the threshold estimate when the labels are perfectly separated (the delta method does not
# apply), by number of observations: the empirical table published with vCache's implementation.
SEPARABLE_VARIANCE = {
    6: 0.035445, 7: 0.028285, 8: 0.026436, 9: 0.021349, 10: 0.019371, 11: 0.012615, 12: 0.011433,
    13: 0.010228, 14: 0.009963, 15: 0.009253, 16: 0.011674, 17: 0.013015, 18: 0.010897, 19: 0.011841,
    20: 0.013081, 21: 0.010585, 22: 0.014255, 23: 0.012058, 24: 0.013002, 25: 0.011715, 26: 0.00839,
    27: 0.008839, 28: 0.010628, 29: 0.009899, 30: 0.008033, 31: 0.00457, 32: 0.007335, 33: 0.008932,
    34: 0.00729, 35: 0.007445, 36: 0.00761, 37: 0.011423, 38: 0.011233, 39: 0.006783, 40: 0.005233,
    41: 0.00872, 42: 0.010005, 43: 0.01199, 44: 0.00977, 45: 0.01891, 46: 0.01513, 47: 0.02109, 48: 0.01531,
}
Floats = npt.NDArray[np.float64]
# The fit stops as scikit-learn's lbfgs with tol=1e-8 does (no gradient entry of the mean log-loss above
# FIT_TOLERANCE) or after FIT_ITERATIONS Newton steps; separable labels reach the tolerance as the weights grow.
FIT_TOLERANCE = 1e-8
FIT_ITERATIONS = 1000
# The normal quantiles at 1 - epsilon over the grid (scipy's norm.ppf), fixed for the module's life.
UPPER_QUANTILES = np.array([NormalDist().inv_cdf(1.0 - e) for e in EPSILON_GRID])


@dataclass(frozen=True)
class ThresholdFit:
    """One entry's fitted curve: threshold `t_hat`, steepness `gamma` and the variance of `t_hat`."""

    t_hat: float
    gamma: float
    variance: float


def fit_threshold(similarities: Sequence[float], labels: Sequence[bool]) -> ThresholdFit:
    """Unpenalised logistic regression of the label on the similarity; t_hat = -intercept / gamma."""
    x = np.column_stack([np.ones(len(similarities)), np.asarray(similarities, dtype=np.float64)])
    y = np.asarray(labels, dtype=np.int64)
    weights = logistic_fit(x, y)  # no penalty, the intercept a column of x: as vCache fits it
    intercept, gamma = (float(v) for v in weights)
    gamma = max(gamma, 1e-6)
    t_hat = float(np.clip(-intercept / gamma, 0.0, 1.0))
    separable = bool(x[y == 1, 1].min() > x[y == 0, 1].max())
    if separable:
        variance = SEPARABLE_VARIANCE.get(len(y), SEPARABLE_VARIANCE[max(SEPARABLE_VARIANCE)])
    else:
        variance = _delta_method_variance(sigmoid(x @ weights), x, intercept, gamma)
    return ThresholdFit(round(t_hat, 3), round(gamma, 3), variance)


def logistic_fit(x: Floats, y: npt.NDArray[np.int64]) -> Floats:
    """Weights of an unpenalised logistic regression of `y` on the columns of `x` (maximum likelihood by Newton's
    method with a halving line search), as scikit-learn's LogisticRegression(C=inf, fit_intercept=False)."""
    weights = np.zeros(x.shape[1])
    loss = _log_loss(x, y, weights)
    for _ in range(FIT_ITERATIONS):
        p = sigmoid(x @ weights)
        gradient = x.T @ (p - y) / len(y)
        if float(np.max(np.abs(gradient))) <= FIT_TOLERANCE:
            break
        hessian = x.T @ ((p * (1.0 - p))[:, None] * x) / len(y)
        step = np.linalg.lstsq(hessian, gradient, rcond=None)[0]
        for _ in range(60):  # the full Newton step, else halved until the loss falls
            candidate = weights - step
            candidate_loss = _log_loss(x, y, candidate)
            if candidate_loss <= loss:
                break
            step = step / 2.0
        else:
            break  # no step lowers the loss: the weights are as good as floats make them
        weights, loss = candidate, candidate_loss
    return weights


def _log_loss(x: Floats, y: npt.NDArray[np.int64], weights: Floats) -> float:
    z = x @ weights
    # log(1 + e^z) - y z, without overflow: logaddexp(0, z).
    return float(np.mean(np.logaddexp(0.0, z) - y * z))


def sigmoid(z: Floats) -> Floats:
    """1 / (1 + e^-z) elementwise, without overflow (scipy's expit)."""
    e = np.exp(-np.abs(z))
    return np.where(z >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def _delta_method_variance(p: Floats, x: Floats, intercept: float, gamma: float) -> float:
    weights = p * (1 - p)
    hessian = x.T @ (weights[:, None] * x)
    try:
        covariance = np.linalg.inv(hessian)
    except np.linalg.LinAlgError:
        return SEPARABLE_VARIANCE[max(SEPARABLE_VARIANCE)]
    grad = np.array([-1.0 / gamma, intercept / gamma**2])
    return max(0.0, float(grad @ covariance @ grad))


def explore_probability(similarity: float, fit: ThresholdFit, delta: float) -> float:
    """tau: the probability of sending the request upstream instead of serving the entry (<= 0: serve)."""
    t_primes = np.clip(fit.t_hat + UPPER_QUANTILES * np.sqrt(fit.variance), 0.0, 1.0)
    correct_lower = (1 - EPSILON_GRID) * sigmoid(fit.gamma * (round(similarity, 3) - t_primes))
    taus = 1 - delta / (1 - correct_lower)
    return round(float(np.min(taus)), 5)


@dataclass
class Entry:
    """A cached answer with its vector and the labels gathered around it (mutable, local to one replay)."""

    answer: str
    vector: Floats
    observations: list[tuple[float, bool]] = field(default_factory=lambda: list(PRIOR_OBSERVATIONS))

    def should_explore(self, similarity: float, delta: float, rng: random.Random) -> bool:
        if len(self.observations) < MIN_OBSERVATIONS:
            return True
        sims, labels = zip(*self.observations, strict=True)
        tau = explore_probability(similarity, fit_threshold(sims, labels), delta)
        return rng.uniform(0, 1) <= tau


@dataclass(frozen=True)
class VCacheRow:
    """One vCache replay at one delta. Rates are fractions of all requests, except `wrong_per_served`."""

    delta: float
    requests: int
    exact_hits: int
    semantic_hits: int
    explored: int
    correct: int
    wrong: int
    oracle: int
    served_rate: float | None
    correct_rate: float | None
    wrong_per_served: float | None
    explored_rate: float | None
    oracle_rate: float | None


@dataclass(frozen=True)
class VCacheReport:
    """Every row of `eval replay --decision vcache`, with what was replayed."""

    stream: str
    embedder: str
    seed: int
    requests: int
    intents: int
    rows: tuple[VCacheRow, ...]
    decision: str = "vcache"


def run_vcache(
    stream: str, requests: Sequence[StreamRequest], embedder: Embedder, deltas: Sequence[float], seed: int = 0,
) -> VCacheReport:
    """Replay the whole trace once per delta (each with a fresh cache and the same seed)."""
    rows = tuple(replay_vcache(requests, embedder, delta, seed) for delta in deltas)
    return VCacheReport(stream, embedder.model_id, seed, len(requests), len({r.intent for r in requests}), rows)


def replay_vcache(
    requests: Sequence[StreamRequest], embedder: Embedder, delta: float, seed: int = 0,
    upstream: Upstream = stub_upstream,
) -> VCacheRow:
    """Replay the trace through an exact tier (byte-identical prompts, as any deployment has) and vCache's
    per-entry decision on the single nearest entry. Labels compare the upstream's answers, like vCache's
    answer-similarity check; the trace's intents stand in for the answers."""
    if not 0.0 < delta < 1.0:
        raise ValueError(f"delta must be in (0, 1), got {delta}")
    rng = random.Random(seed)
    entries: list[Entry] = []
    exact: dict[str, str] = {}
    seen: set[str] = set()
    counts = Tally()
    for request in requests:
        counts.oracle += request.intent in seen
        seen.add(request.intent)
        expected = answer_text(upstream(request))
        served = exact.get(request.prompt)
        if served is not None:
            counts.exact += 1
            counts.score(served == expected)
            continue
        vector = np.asarray(embedder.embed([request.prompt])[0], dtype=np.float64)
        if entries:
            matrix = np.stack([e.vector for e in entries])
            best = int(np.argmax(matrix @ vector))
            similarity, nearest = float(matrix[best] @ vector), entries[best]
            if not nearest.should_explore(similarity, delta, rng):
                counts.semantic += 1
                counts.score(nearest.answer == expected)
                continue
            counts.explored += 1
            same = nearest.answer == expected
            nearest.observations.append((round(similarity, 3), same))
            exact[request.prompt] = expected
            if same:
                continue  # vCache keeps the entry that was right and does not add the new prompt
        entries.append(Entry(expected, vector))
        exact[request.prompt] = expected
    return _row(delta, len(requests), counts)


def _row(delta: float, requests: int, counts: Tally) -> VCacheRow:
    served = counts.served
    return VCacheRow(
        delta=delta, requests=requests, exact_hits=counts.exact, semantic_hits=counts.semantic,
        explored=counts.explored, correct=counts.correct, wrong=counts.wrong, oracle=counts.oracle,
        served_rate=rate(served, requests), correct_rate=rate(counts.correct, requests),
        wrong_per_served=rate(counts.wrong, served), explored_rate=rate(counts.explored, requests),
        oracle_rate=rate(counts.oracle, requests),
    )
