"""Budget sweep of the judge over labelled pairs: each pair is one candidate (a cached, b arrives), decided by
the gateway's own judge rule (`index.match.judged.judge`) at each false-hit budget. Points carry the budget
where a threshold sweep carries the threshold, so both print and export alike."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from eval.sweep import ScoredPair, Sweep, SweepPoint, _summarize, _Tally
from index.guards.registry import context_stages
from index.guards.stages import MemoStage, Stage
from index.judge.features import JudgeInput, feature_matrix
from index.judge.model import Judge
from index.match.decide import Deciders, decide
from index.match.judged import PairReader
from index.match.outcome import JUDGE_STAGE, Candidate
from index.match.policy import MatchPolicy


def _comparable(item: ScoredPair, floor: float) -> bool:
    return item.similarity is not None and item.veto is None and item.similarity >= floor


def run_judge_sweep(
    scored: Sequence[ScoredPair], model: Judge, budgets: Sequence[float], policy: MatchPolicy,
    confidence: float = 0.95, stages: Sequence[Stage] = (), pair: PairReader | None = None,
) -> Sweep:
    """One point per budget (ascending), each pair decided by `index.match.decide` as the gateway decides it.
    Pairs below the policy's candidate floor are misses, as in the gateway; conversation pairs go through the
    conversation rule (`MatchPolicy.for_request`) with `stages`."""
    same = sum(1 for item in scored if item.pair.same_answer)
    memo = tuple(MemoStage(s) for s in stages)
    deciders = Deciders(memo, tuple(MemoStage(s) for s in context_stages(memo)), model, pair=pair)
    points = tuple(_point(scored, policy.with_budget(b), confidence, deciders) for b in sorted(set(budgets)))
    return Sweep(stages=(JUDGE_STAGE,), same_pairs=same, must_not_pairs=len(scored) - same,
                 stage_checks=sum(1 for item in scored if _comparable(item, policy.candidate_floor)), points=points)


def _point(scored: Sequence[ScoredPair], policy: MatchPolicy, confidence: float, deciders: Deciders) -> SweepPoint:
    tally = _Tally(Counter(), Counter(), Counter())
    for index, item in enumerate(scored):
        pair = item.pair
        tally.totals[pair.kind, pair.same_answer] += 1
        conversation = item.context_b is not None
        if item.similarity is None or item.veto is not None:
            continue
        if not conversation and item.similarity < policy.candidate_floor:
            continue
        candidate = Candidate(index, pair.a.prompt, item.similarity, item.context_a, item.context_similarity)
        decision = decide(pair.b.prompt, [candidate], policy, deciders, item.context_b)
        if decision.hit:
            tally.served[pair.kind, pair.same_answer] += 1
        elif not conversation:
            tally.vetoed[JUDGE_STAGE, pair.kind, pair.same_answer] += 1
    return _summarize(policy.max_false_hit_rate, tally, [JUDGE_STAGE], confidence)


def pair_inputs(scored: Sequence[ScoredPair]) -> tuple[list[int], list[JudgeInput]]:
    """Indexes and judge inputs of the comparable pairs (single candidates), for AUCs and fitting."""
    keep = [i for i, item in enumerate(scored) if item.similarity is not None and item.veto is None]
    items = [JudgeInput(scored[i].pair.b.prompt, scored[i].pair.a.prompt, scored[i].similarity or 0.0,
                        query_context=scored[i].context_b, cached_context=scored[i].context_a,
                        context_similarity=scored[i].context_similarity) for i in keep]
    return keep, items


def judge_scores(scored: Sequence[ScoredPair], model: Judge) -> list[float]:
    """P(same answer) per pair (-1 for pairs the gateway cannot compare), for ROC-AUC."""
    keep, items = pair_inputs(scored)
    out = [-1.0] * len(scored)
    if not items:
        return out
    for i, p in zip(keep, model.probabilities_of(feature_matrix(items)), strict=True):
        out[i] = float(p)
    return out
