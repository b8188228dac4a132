"""Does the budget's bound tell the truth? Simulated namespaces whose wrong rates are known, driven through the
product's own learner (`index.match.evidence.Totals`, `index.match.live_threshold.choose`) and audit sampler
(`index.match.audit_sampler.AuditSampler`), with no model: seconds per seed.

Each request of a namespace's stream is a would-serve candidate at a cosine `s` (or, a share of them, a hit served
whatever the threshold: an exact hit or a plain rewording, never wrong). It is wrong with probability
`truth(s, progress)`, a function the scenario changes over the run (twins arriving after their paraphrases opened a
band, a burst of a new intent, a drift). A candidate at or above the threshold in force is served, and audited as
the product's sampler decides (its hourly allowance on a simulated clock); one below it is a near miss, labelled
(a shadow) at the scenario's shadow rate. Labels are wrong at the scenario's labeller error. Every `pass_every`
requests the stream publishes and the learner chooses again, as the gateway's upkeep pass does.

At every pass the **truth** is the expected wrong ÷ served of what the threshold in force serves under the traffic
of that moment (the scenario's density, integrated on a fine grid); the bound **covers** when the reported upper
bound is at least that. Per scenario the suite reports the coverage (share of passes covered), the realised wrong ÷
served over the whole run and its second half, and the share of requests served right.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from index.match.audit_sampler import AuditSampler, HitFacts
from index.match.evidence import Aging, Totals
from index.match.live_threshold import CONFIDENCE, LearnerConfig, choose

# (similarity, progress in [0, 1]) -> wrong rate, and -> traffic density (unnormalised).
Rate = Callable[[float, float], float]
FLOOR = 0.80
PRIOR = 0.92
BUDGET = 0.02
GRID = np.linspace(FLOOR, 0.999, 200)


def _logistic(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


def _paraphrase_rate(s: float) -> float:
    """A namespace whose twins sit low: 20% wrong at 0.80, 2% near 0.88, almost none above 0.92."""
    return _logistic(math.log(0.02 / 0.98) - (s - 0.88) / 0.025)


def _flat_density(s: float, progress: float) -> float:
    return 1.0


@dataclass(frozen=True)
class Scenario:
    """One namespace's traffic: its wrong rate and density over cosine and time, how its labels arrive and err."""

    name: str
    truth: Rate
    density: Rate = _flat_density
    requests: int = 6000
    fixed_share: float = 0.3
    shadow_rate: float = 1.0
    label_error: float = 0.0
    audit_rate: float = 0.01
    calls_per_hour: int = 120
    requests_per_hour: float = 2000.0
    pass_every: int = 200


def _twins_arrive(s: float, progress: float) -> float:
    """Clean near misses open the bands, then (from 40% of the run) the cache holds the twins of what is asked:
    15% wrong from 0.80 to 0.90, 6% up to 0.92."""
    if progress < 0.4:
        return 0.003
    return 0.15 if s < 0.90 else 0.06 if s < 0.92 else 0.003


def _burst_density(s: float, progress: float) -> float:
    return 12.0 if 0.5 <= progress < 0.7 and 0.85 <= s < 0.88 else 1.0


def _burst_truth(s: float, progress: float) -> float:
    """A new intent arrives in a burst (half to 70% of the run), its near twin cached at 0.85-0.88: 12% wrong."""
    return 0.12 if 0.5 <= progress < 0.7 and 0.85 <= s < 0.88 else _paraphrase_rate(s)


def _drift(s: float, progress: float) -> float:
    """The cache grows: every band's wrong rate climbs through the run (x1 to x4)."""
    return min(1.0, _paraphrase_rate(s) * (1.0 + 3.0 * progress))


def _clean_then_dirty_top(s: float, progress: float) -> float:
    """Audits above the prior find it wrong 5% of the time from a third of the run: the threshold must rise."""
    return 0.05 if progress >= 1 / 3 and s >= 0.90 else _paraphrase_rate(s)


SCENARIOS: tuple[Scenario, ...] = (
    Scenario("stationary", lambda s, p: _paraphrase_rate(s)),
    Scenario("twins arrive after the bands opened", _twins_arrive),
    Scenario("burst of a new intent", _burst_truth, _burst_density),
    Scenario("drift: the cache grows", _drift),
    Scenario("over the budget above the prior", _clean_then_dirty_top),
    Scenario("labels wrong one time in ten", lambda s, p: _paraphrase_rate(s), label_error=0.1),
    Scenario("few labels (shadows 20%, audits 0.5%)", _twins_arrive, shadow_rate=0.2, audit_rate=0.005,
             calls_per_hour=30),
    Scenario("many labels (audits 5%)", _twins_arrive, audit_rate=0.05, calls_per_hour=600),
)


@dataclass(frozen=True)
class Run:
    """One seed of one scenario: per pass, the reported bound and the truth; and what was served."""

    scenario: str
    seed: int
    uppers: tuple[float, ...]
    truths: tuple[float, ...]
    served: int
    wrong: int
    served_late: int
    wrong_late: int
    right: int
    requests: int

    @property
    def covered(self) -> int:
        return sum(1 for u, t in zip(self.uppers, self.truths, strict=True) if u + 1e-12 >= t)


@dataclass(frozen=True)
class Summary:
    """One scenario over its seeds."""

    scenario: str
    seeds: int
    passes: int
    coverage: float
    wrong_per_served: float
    wrong_per_served_late: float
    correct: float
    mean_upper: float
    mean_truth: float


def _truth_at(scenario: Scenario, threshold: float, progress: float) -> float:
    """Expected wrong ÷ served at `threshold` under the traffic at `progress` (fixed hits served, never wrong)."""
    density = np.array([scenario.density(float(s), progress) for s in GRID])
    rates = np.array([scenario.truth(float(s), progress) for s in GRID])
    served = threshold - 1e-9 <= GRID
    semantic = float(density[served].sum()) / float(density.sum())
    share = (1.0 - scenario.fixed_share) * semantic
    total = share + scenario.fixed_share
    if total <= 0:
        return 0.0
    wrong = (1.0 - scenario.fixed_share) * float((density * rates)[served].sum()) / float(density.sum())
    return wrong / total


def _draw_similarity(rng: random.Random, scenario: Scenario, progress: float, top: float) -> float:
    """A cosine from the scenario's density at `progress` (rejection sampling on a density bounded by `top`)."""
    while True:
        s = rng.uniform(FLOOR, 0.999)
        if rng.random() * top <= scenario.density(s, progress):
            return s


def simulate(scenario: Scenario, seed: int, config: LearnerConfig | None = None) -> Run:
    """One namespace of `scenario` through the product's learner and audit sampler, from a cold start."""
    rng = random.Random(seed)
    learner = config or LearnerConfig(BUDGET, PRIOR, FLOOR, error_rate=scenario.label_error, seed=seed)
    aging = Aging(FLOOR)
    totals = Totals()
    clock = [0.0]
    sampler = AuditSampler(scenario.audit_rate, scenario.calls_per_hour, lambda: clock[0])
    top = max(scenario.density(float(s), p) for s in GRID for p in np.linspace(0, 0.999, 50))
    threshold, upper_in_force, thin = PRIOR, 0.0, True
    uppers: list[float] = []
    truths: list[float] = []
    served = wrong = served_late = wrong_late = right = 0
    half = scenario.requests // 2
    for i in range(scenario.requests):
        progress = i / scenario.requests
        clock[0] += 3600.0 / scenario.requests_per_hour
        if i and i % scenario.pass_every == 0:
            totals.publish(aging)
            state = choose(totals.published(aging), learner.prior, learner)
            threshold, upper_in_force, thin = state.threshold, state.upper, state.thin
            uppers.append(state.upper)
            truths.append(_truth_at(scenario, threshold, progress))
        if rng.random() < scenario.fixed_share:
            totals.observe(None, aging)
            served += 1
            served_late += i >= half
            right += 1
            continue
        s = _draw_similarity(rng, scenario, progress, top)
        is_wrong = rng.random() < scenario.truth(s, progress)
        low = aging.band(s)
        totals.observe(low, aging)
        label: bool | None = None
        if s >= threshold - 1e-9:
            served += 1
            wrong += is_wrong
            served_late += i >= half
            wrong_late += is_wrong and i >= half
            right += not is_wrong
            facts = HitFacts(upper_in_force > learner.budget, s, threshold, 1e9, PRIOR, thin)
            if sampler.draw(facts, rng.random()) is not None:
                label = not is_wrong
        elif rng.random() < scenario.shadow_rate:
            label = not is_wrong
        if label is not None and low is not None:
            if rng.random() < scenario.label_error:
                label = not label
            totals.label(low, label, aging)
    return Run(scenario.name, seed, tuple(uppers), tuple(truths), served, wrong, served_late, wrong_late, right,
               scenario.requests)


def summarise(runs: Sequence[Run]) -> Summary:
    passes = sum(len(r.uppers) for r in runs)
    served = sum(r.served for r in runs)
    late = sum(r.served_late for r in runs)
    return Summary(
        runs[0].scenario, len(runs), passes, sum(r.covered for r in runs) / passes if passes else 1.0,
        sum(r.wrong for r in runs) / served if served else 0.0,
        sum(r.wrong_late for r in runs) / late if late else 0.0,
        sum(r.right for r in runs) / sum(r.requests for r in runs),
        float(np.mean([u for r in runs for u in r.uppers])), float(np.mean([t for r in runs for t in r.truths])))


def calibrate(scenarios: Sequence[Scenario] = SCENARIOS, seeds: int = 8, requests: int | None = None) -> list[Summary]:
    """Every scenario over `seeds` seeds (`requests` per run, when given)."""
    out = []
    for scenario in scenarios:
        chosen = scenario if requests is None else replace(scenario, requests=requests)
        out.append(summarise([simulate(chosen, seed) for seed in range(seeds)]))
    return out


def misses(summaries: Sequence[Summary], budget: float = BUDGET, confidence: float = CONFIDENCE) -> list[str]:
    """What fails the promise: a scenario whose bound covers the truth less often than its confidence says, or
    whose realised wrong ÷ served (whole or second half) passes the budget."""
    out = []
    for s in summaries:
        if s.coverage < confidence:
            out.append(f"{s.scenario}: the bound covered the truth at {s.coverage:.1%} of passes (< {confidence:.0%})")
        if s.wrong_per_served > budget or s.wrong_per_served_late > budget:
            out.append(f"{s.scenario}: wrong ÷ served {s.wrong_per_served:.2%} whole, "
                       f"{s.wrong_per_served_late:.2%} second half (budget {budget:.0%})")
    return out
