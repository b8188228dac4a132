"""The one decision: which cached candidate (if any) may answer a request. The gateway (through `Cache`),
`eval sweep`, `eval replay` and `eval replay --learn` all call `decide`, so a setting means the same in each.

Single-turn requests in guarded mode (the default) go to `index.match.guarded`: the cosine serves, the rule
stages and the learned scores veto, a plain rewording is served on its content. Single-turn requests in judge
mode go to the judge (calibrated P(same answer) against the false-hit budget's
bar, with exploration of uncertain would-be hits; a plain rewording is served on its content, and a candidate
whose words are the request's opposites is vetoed); threshold mode and conversations go to the cosine rule, and
a conversation then to the context rule (`index.match.conversation`: same values, options, content). In
every mode a candidate that differs from the request past the embedder's window is never served.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from index.guards.contrast import opposed_words
from index.guards.registry import context_stages
from index.guards.stages import Stage, StageResult
from index.judge.features import EntryHistory
from index.match.conversation import ContextRule, default_rule
from index.match.explore import Exploration
from index.match.guarded import GuardedSetup, guarded
from index.match.judged import JudgeModel, JudgeSetup, PairReader, judge
from index.match.outcome import Candidate, Decision, Reason
from index.match.policy import MatchPolicy
from index.match.threshold import by_threshold
from index.match.window import differs_past_window

OFF = Exploration(rate=0.0)
# The judge-mode veto of a candidate that asks the opposite (`index.guards.contrast`).
CONTRAST = "contrast"


@dataclass(frozen=True)
class Deciders:
    """What decides besides the policy: the rule stages (vetoes of the cosine rule; `context_stages` run over
    two conversations' contexts), the judge (required in judge mode), exploration and its random draw
    (uniform in [0, 1); tests inject a fixed one)."""

    stages: tuple[Stage, ...] = ()
    # None = the prompt stages plus the alignment check (`index.guards.registry.context_stages`).
    context_stages: tuple[Stage, ...] | None = None
    judge: JudgeModel | None = None
    exploration: Exploration = OFF
    draw: Callable[[], float] = field(default=random.random)
    # The pair model stacked with the judge (`index.judge.pair_model.load_pair_stage`); None = the judge alone.
    pair: PairReader | None = None
    # The context rule a conversation candidate must pass after the cosine rule (`index.match.conversation`).
    conversation: ContextRule = field(default_factory=default_rule)

    @property
    def over_contexts(self) -> tuple[Stage, ...]:
        return context_stages(self.stages) if self.context_stages is None else self.context_stages


def decide(
    query: str,
    candidates: Sequence[Candidate],
    policy: MatchPolicy,
    deciders: Deciders,
    query_context: str | None = None,
    histories: Mapping[int, EntryHistory] | None = None,
) -> Decision:
    """Decide over `candidates` (most similar first). `Decision.chosen` indexes the served candidate on a hit,
    else the best one (None when there was none)."""
    policy = policy.for_request(conversation=query_context is not None)
    if not candidates:
        return Decision(Reason.NO_CANDIDATE, float("nan"))
    readable = [c for c in candidates if not _past_window(query, query_context, c)]
    if not readable:
        return Decision(Reason.BEYOND_WINDOW, candidates[0].similarity, chosen=0)
    if len(readable) < len(candidates):
        decision = decide(query, readable, policy, deciders, query_context, histories)
        return _reindexed(decision, candidates, readable)
    if policy.guarded:
        return _guarded(query, candidates, policy, deciders, histories)
    if not policy.judged:
        return _by_threshold(query, candidates, policy, deciders, query_context)
    if deciders.judge is None:
        raise ValueError("a judge-mode policy needs a judge (index.judge.model.load_judge)")
    opposed = [opposed_words(query, c.prompt) for c in candidates]
    if any(opposed):
        kept = [c for c, pair in zip(candidates, opposed, strict=True) if pair is None]
        if kept:
            return _reindexed(decide(query, kept, policy, deciders, query_context, histories), candidates, kept)
        a, b = opposed[0] or ("", "")
        veto = StageResult(CONTRAST, False, f"opposite words {a!r} vs {b!r}")
        return Decision(Reason.VETOED, candidates[0].similarity, vetoed_by=CONTRAST, stages=(veto,), chosen=0)
    setup = JudgeSetup(deciders.judge, policy.max_false_hit_rate, policy.judge_candidates, histories or {},
                       max_decision_chars=policy.max_decision_chars, bar_level=policy.bar_level, pair=deciders.pair)
    judgement = judge(query, candidates, setup, query_context)
    index = judgement.chosen if judgement.chosen is not None else judgement.best
    assert index is not None and judgement.probability is not None
    p = judgement.probability
    reason = Reason.HIT if judgement.hit else Reason.BELOW_BAR
    explorable = judgement.hit and not judgement.same_content
    if explorable and deciders.exploration.explores(p, judgement.bar, policy.max_false_hit_rate, deciders.draw()):
        reason = Reason.EXPLORED
    return Decision(reason, candidates[index].similarity, chosen=index, probability=p, bar=judgement.bar,
                    version=judgement.version, max_false_hit_rate=policy.max_false_hit_rate,
                    basis="same content" if judgement.same_content else None, pair_read=judgement.pair_read)


def _guarded(query: str, candidates: Sequence[Candidate], policy: MatchPolicy, deciders: Deciders,
             histories: Mapping[int, EntryHistory] | None) -> Decision:
    """The guarded rule, then exploration: a hit the learned score doubts (P within the lower `band` of the
    range above the veto's bar) goes upstream at `DEJA_EXPLORE_RATE`, to be labelled."""
    setup = GuardedSetup(policy.min_similarity, policy.veto_below, deciders.stages, deciders.judge, deciders.pair,
                         policy.max_decision_chars, policy.max_false_hit_rate, histories, policy.learn_floor)
    decision = guarded(query, candidates, setup)
    p = decision.probability
    if decision.hit and p is not None and deciders.exploration.rate > 0.0:
        doubted = p < policy.veto_below + (1.0 - policy.veto_below) * deciders.exploration.band
        if doubted and deciders.draw() < deciders.exploration.rate:
            return dataclasses.replace(decision, reason=Reason.EXPLORED)
    return decision


def _by_threshold(query: str, candidates: Sequence[Candidate], policy: MatchPolicy, deciders: Deciders,
                  query_context: str | None) -> Decision:
    """The first candidate the cosine rule serves, else the rule's decision on the most similar one."""
    first: Decision | None = None
    for index, candidate in enumerate(candidates):
        decision = by_threshold(query, candidate, policy, deciders.stages, query_context,
                                deciders.over_contexts)
        decision = deciders.conversation.ruled(decision, query_context, candidate)
        if decision.hit:
            return _at(decision, index)
        if first is None:
            first = _at(decision, index)
    assert first is not None
    return first


def _past_window(query: str, query_context: str | None, candidate: Candidate) -> bool:
    if differs_past_window(query, candidate.prompt):
        return True
    return (query_context is not None and candidate.context is not None
            and differs_past_window(query_context, candidate.context))


def _reindexed(decision: Decision, candidates: Sequence[Candidate], readable: Sequence[Candidate]) -> Decision:
    """`decision` over `readable`, its `chosen` pointing into `candidates`."""
    if decision.chosen is None:
        return decision
    return dataclasses.replace(decision, chosen=candidates.index(readable[decision.chosen]))


def _at(decision: Decision, index: int) -> Decision:
    return Decision(decision.reason, decision.similarity, decision.vetoed_by, decision.stages, chosen=index)
