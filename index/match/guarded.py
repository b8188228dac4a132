"""The default rule (`DEJA_DECISION=guarded`): the embedding's cosine serves, the learned scores only veto.

all-MiniLM-L6-v2 was trained on about a billion real pairs; on real users' questions its cosine, with the rule
vetoes, is far better calibrated than the judge and the pair model, which were fitted on data we wrote and give
P 0.99 to a definition and a task about the same entity ("What is PyTorch?" / "How do I install PyTorch?"). So
a candidate is served only on robust evidence, checked in this order:

1. gates: a candidate whose words are the request's opposites (`index.guards.contrast`), whose values changed
   places across a direction (`index.guards.order`), or that `index.guards.safety` vetoes, is skipped;
2. override: a plain rewording (`index.guards.form.same_content`) is served whatever its cosine;
3. threshold: below `min_similarity` nothing more is served (candidates come most similar first);
4. rules: the guard stages (polarity, values) veto;
5. learned veto (off by default: `veto_below` 0): the judge's P, stacked with the pair model where it can change
   the outcome, below `veto_below` vetoes;
6. exploration (where the learned veto is on): a small share of hits the learned score doubts goes upstream to be
   labelled.

The first candidate that passes is served. A learned score never serves what the cosine does not support; the
deployment's own labels move the threshold per namespace (`index.match.bar`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from index.guards.contrast import opposed_words
from index.guards.form import same_content
from index.guards.order import swapped_words
from index.guards.safety import pair_veto
from index.guards.stages import Stage, StageResult
from index.judge.features import EntryHistory, JudgeInput
from index.match.judged import JudgeModel, PairReader
from index.match.outcome import Candidate, Decision, Reason

# The step names a decision reports (`Decision.vetoed_by`, `Decision.basis`, X-Deja-Veto).
CONTRAST = "contrast"
SWAPPED = "order"
LEARNED_VETO = "judge"
SAME_CONTENT = "same content"
COSINE = "cosine"


@dataclass(frozen=True)
class GuardedSetup:
    """What the guarded rule reads besides the candidates: the cosine threshold (already moved by the
    namespace's live level), the learned veto's bar, the rule stages and the learned scorers."""

    min_similarity: float
    veto_below: float
    stages: tuple[Stage, ...]
    judge: JudgeModel | None
    pair: PairReader | None
    max_decision_chars: int
    max_false_hit_rate: float
    histories: Mapping[int, EntryHistory] | None = None
    # Candidates below the threshold but at or above this go through the remaining steps too: one that passes
    # them is a near miss that would be served at its cosine (`Decision.would_serve`), the evidence that can
    # lower the namespace's threshold (`index.match.live_threshold`).
    learn_floor: float = 1.0


def guarded(query: str, candidates: Sequence[Candidate], setup: GuardedSetup) -> Decision:
    """Serve the first candidate (most similar first) that passes every step; else the decision on the most
    similar one. `Decision.chosen` indexes `candidates`. Below the threshold a less similar candidate can still
    pass on the same-content override (a step before the threshold); none reads a learned score."""
    first: Decision | None = None
    near: Decision | None = None
    for index, candidate in enumerate(candidates):
        decision = _one(query, candidate, index, setup)
        if decision.hit:
            return decision
        if first is None:
            first = decision
        if near is None and decision.would_serve:
            near = decision
    assert first is not None
    return near or first


def _one(query: str, candidate: Candidate, index: int, setup: GuardedSetup) -> Decision:
    sim = candidate.similarity
    opposed = opposed_words(query, candidate.prompt)
    if opposed is not None:
        veto = StageResult(CONTRAST, False, f"opposite words {opposed[0]!r} vs {opposed[1]!r}")
        return Decision(Reason.VETOED, sim, vetoed_by=CONTRAST, stages=(veto,), chosen=index)
    swapped = swapped_words(query, candidate.prompt)
    if swapped is not None:
        veto = StageResult(SWAPPED, False, f"{swapped[0]!r} and {swapped[1]!r} change places across a direction")
        return Decision(Reason.VETOED, sim, vetoed_by=SWAPPED, stages=(veto,), chosen=index)
    safety = pair_veto(query, candidate.prompt, None, None, setup.max_decision_chars)
    if safety is not None:
        veto = StageResult(safety.stage, False, safety.reason)
        return Decision(Reason.VETOED, sim, vetoed_by=safety.stage, stages=(veto,), chosen=index)
    if same_content(query, candidate.prompt):
        return _hit(candidate, index, SAME_CONTENT, setup)
    below = sim < setup.min_similarity
    if below and sim < setup.learn_floor:
        return Decision(Reason.BELOW_THRESHOLD, sim, chosen=index)
    results: list[StageResult] = []
    for stage in setup.stages:
        result = stage.check(query, candidate.prompt)
        results.append(result)
        if not result.passed:
            if below:
                return Decision(Reason.BELOW_THRESHOLD, sim, chosen=index)
            return Decision(Reason.VETOED, sim, vetoed_by=stage.name, stages=tuple(results), chosen=index)
    p = learned_probability(query, candidate, setup)
    if p is not None and p < setup.veto_below:
        if below:
            return Decision(Reason.BELOW_THRESHOLD, sim, chosen=index)
        veto = StageResult(LEARNED_VETO, False, f"P(same answer) {p:.3f} < {setup.veto_below:g}", p)
        return Decision(Reason.VETOED, sim, vetoed_by=LEARNED_VETO, stages=(*results, veto), chosen=index,
                        probability=p, bar=setup.veto_below, max_false_hit_rate=setup.max_false_hit_rate,
                        version=_version(setup))
    reason = Reason.BELOW_THRESHOLD if below else Reason.HIT
    return Decision(reason, sim, stages=tuple(results), chosen=index, probability=p, bar=setup.veto_below,
                    version=_version(setup), max_false_hit_rate=setup.max_false_hit_rate, basis=COSINE,
                    would_serve=True)


def learned_probability(query: str, candidate: Candidate, setup: GuardedSetup) -> float | None:
    """The judge's P, stacked with the pair model's where the pair model can move it across the veto's bar;
    None without a judge. The pair model never runs when the judge's P settles the veto either way.

    The judge reads every candidate as a lone one (rank 0, no margin): a candidate's rank and its margin over the
    next move with how full the cache is, and a veto that fires on right answers as a cache fills does not carry
    from one deployment to another (measured in docs/judge.md)."""
    if setup.judge is None or setup.veto_below <= 0.0:  # no veto: no learned score is read (nor paid for)
        return None
    history = (setup.histories or {}).get(candidate.entry_id, EntryHistory())
    item = JudgeInput(query, candidate.prompt, candidate.similarity, history=history)
    judge_p = float(setup.judge.probabilities([item])[0])
    if setup.pair is None:
        return judge_p
    low, high = setup.pair.bounds(judge_p, candidate.similarity)
    if low >= setup.veto_below:
        return low
    if high < setup.veto_below:
        return high
    return float(setup.pair.probabilities([(query, candidate.prompt)], [judge_p], [candidate.similarity])[0])


def _hit(candidate: Candidate, index: int, basis: str, setup: GuardedSetup) -> Decision:
    return Decision(Reason.HIT, candidate.similarity, chosen=index, basis=basis, bar=setup.veto_below,
                    version=_version(setup), max_false_hit_rate=setup.max_false_hit_rate)


def _version(setup: GuardedSetup) -> str:
    judge = "cosine" if setup.judge is None else setup.judge.version
    return judge if setup.pair is None else f"{judge}+{setup.pair.version}"
