"""The one hit/miss rule, shared by the gateway and `eval sweep` so a threshold means the same in both."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from index.policy import MatchPolicy
from index.safety import pair_veto
from index.stages import Stage, StageResult


@dataclass(frozen=True)
class Candidate:
    """The nearest cached prompt found for a query, with its cosine similarity (and, for conversations,
    its relevant context and the similarity of the two contexts)."""

    entry_id: int
    prompt: str
    similarity: float
    context: str | None = None
    context_similarity: float | None = None


class Reason(StrEnum):
    """Why `decide` said what it said."""

    HIT = "hit"
    BELOW_THRESHOLD = "below_threshold"
    CONTEXT_BELOW_THRESHOLD = "context_below_threshold"
    VETOED = "vetoed"
    # Judge mode: no candidate's P(same answer) cleared the bar of the false-hit budget.
    BELOW_BAR = "judge_below_bar"
    # Judge mode: a would-be hit the judge was unsure of went upstream instead, to be labelled (exploration).
    EXPLORED = "explored"


@dataclass(frozen=True)
class Decision:
    """Outcome of `decide`. `vetoed_by` names the vetoing stage (`<stage>@context` for a context check) and is
    set only when `reason` is `VETOED`; `stages` holds every stage result in the order they ran."""

    reason: Reason
    similarity: float
    vetoed_by: str | None = None
    stages: tuple[StageResult, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        if (self.reason is Reason.VETOED) != (self.vetoed_by is not None):
            raise ValueError("vetoed_by names the stage of a veto, and only of a veto")

    @property
    def hit(self) -> bool:
        return self.reason is Reason.HIT


def decide(
    query: str,
    candidate: Candidate,
    policy: MatchPolicy,
    stages: Sequence[Stage] = (),
    query_context: str | None = None,
    context_stages: Sequence[Stage] = (),
) -> Decision:
    """Serve `candidate` for `query` only if it clears the thresholds and no stage vetoes it.

    Stages run in order and only on candidates above the thresholds, so costly stages see few pairs; the
    first veto stops the chain. For conversations whose contexts differ, `context_stages` also run over
    the two contexts (reported as `<stage>@context`). The vetoes of `index.safety` (a text past the
    decision's cap, an accent that changes a word) run first, whatever the stages.
    """
    if candidate.similarity < policy.min_similarity:
        return Decision(Reason.BELOW_THRESHOLD, candidate.similarity)
    conversation = query_context is not None and candidate.context is not None
    if conversation and (candidate.context_similarity or 0.0) < policy.min_context_similarity:
        return Decision(Reason.CONTEXT_BELOW_THRESHOLD, candidate.similarity)
    safety = pair_veto(query, candidate.prompt, query_context if conversation else None,
                       candidate.context if conversation else None, policy.max_decision_chars)
    if safety is not None:
        result = StageResult(safety.stage, passed=False, reason=safety.reason)
        return Decision(Reason.VETOED, candidate.similarity, vetoed_by=safety.stage, stages=(result,))
    results: list[StageResult] = []
    checks: list[tuple[Stage, str, str, str]] = [(s, s.name, query, candidate.prompt) for s in stages]
    if conversation and query_context != candidate.context:
        assert query_context is not None and candidate.context is not None
        checks += [(s, f"{s.name}@context", query_context, candidate.context) for s in context_stages]
    for stage, name, left, right in checks:
        result = stage.check(left, right)
        if name != stage.name:
            result = StageResult(name, result.passed, result.reason, result.score)
        results.append(result)
        if not result.passed:
            return Decision(Reason.VETOED, candidate.similarity, vetoed_by=name, stages=tuple(results))
    return Decision(Reason.HIT, candidate.similarity, stages=tuple(results))
