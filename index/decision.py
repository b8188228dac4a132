"""The one hit/miss rule, shared by the gateway and `eval sweep` so a threshold means the same in both."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from index.stages import Stage, StageResult

DEFAULT_MIN_CONTEXT_SIMILARITY = 0.70


@dataclass(frozen=True)
class MatchPolicy:
    """How strict a semantic match must be. Similarities are cosine similarities in [-1, 1].

    `min_similarity` applies to the last user messages; `min_context_similarity` to the relevant earlier
    context of multi-turn requests.
    """

    min_similarity: float
    min_context_similarity: float = DEFAULT_MIN_CONTEXT_SIMILARITY

    def __post_init__(self) -> None:
        for name in ("min_similarity", "min_context_similarity"):
            value = getattr(self, name)
            if not -1.0 <= value <= 1.0:
                raise ValueError(f"{name} must be a cosine similarity in [-1, 1], got {value}")


@dataclass(frozen=True)
class Candidate:
    """The nearest cached prompt found for a query, with its cosine similarity (and, for conversations,
    its relevant context and the similarity of the two contexts)."""

    entry_id: int
    prompt: str
    similarity: float
    context: str | None = None
    context_similarity: float | None = None


@dataclass(frozen=True)
class Decision:
    """Outcome of `decide`: a hit, or a miss with the reason (`below_threshold` or the vetoing stage)."""

    hit: bool
    similarity: float
    vetoed_by: str | None = None
    stages: tuple[StageResult, ...] = field(default_factory=tuple)

    @property
    def reason(self) -> str:
        if self.hit:
            return "hit"
        return self.vetoed_by or BELOW_THRESHOLD


BELOW_THRESHOLD = "below_threshold"
CONTEXT_BELOW_THRESHOLD = "context_below_threshold"


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
    the two contexts (reported as `<stage>@context`).
    """
    if candidate.similarity < policy.min_similarity:
        return Decision(hit=False, similarity=candidate.similarity, vetoed_by=BELOW_THRESHOLD)
    conversation = query_context is not None and candidate.context is not None
    if conversation and (candidate.context_similarity or 0.0) < policy.min_context_similarity:
        return Decision(hit=False, similarity=candidate.similarity, vetoed_by=CONTEXT_BELOW_THRESHOLD)
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
            return Decision(False, candidate.similarity, vetoed_by=name, stages=tuple(results))
    return Decision(hit=True, similarity=candidate.similarity, stages=tuple(results))
