"""The cosine rule (threshold mode, and conversations): a threshold on similarity, then the rule stages as vetoes."""

from __future__ import annotations

from collections.abc import Sequence

from index.guards.stages import Stage, StageResult
from index.match.outcome import Candidate, Decision, Reason
from index.match.policy import MatchPolicy


def by_threshold(
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
    the two contexts (reported as `<stage>@context`).
    """
    if candidate.similarity < policy.min_similarity:
        return Decision(Reason.BELOW_THRESHOLD, candidate.similarity)
    conversation = query_context is not None and candidate.context is not None
    if conversation and (candidate.context_similarity or 0.0) < policy.min_context_similarity:
        return Decision(Reason.CONTEXT_BELOW_THRESHOLD, candidate.similarity)
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
