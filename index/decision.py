"""The one hit/miss rule, shared by the gateway and `eval sweep` so a threshold means the same in both."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from index.stages import Stage, StageResult


@dataclass(frozen=True)
class MatchPolicy:
    """How strict a semantic match must be. `min_similarity` is cosine similarity in [-1, 1]."""

    min_similarity: float

    def __post_init__(self) -> None:
        if not -1.0 <= self.min_similarity <= 1.0:
            raise ValueError(f"min_similarity must be a cosine similarity in [-1, 1], got {self.min_similarity}")


@dataclass(frozen=True)
class Candidate:
    """The nearest cached prompt found for a query, with its cosine similarity."""

    entry_id: int
    prompt: str
    similarity: float


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
        return self.vetoed_by or "below_threshold"


BELOW_THRESHOLD = "below_threshold"


def decide(query: str, candidate: Candidate, policy: MatchPolicy, stages: Sequence[Stage] = ()) -> Decision:
    """Serve `candidate` for `query` only if it clears the threshold and no stage vetoes it.

    Stages run in order and only on candidates above the threshold, so costly stages (a learned
    verifier) see few pairs; the first veto stops the chain.
    """
    if candidate.similarity < policy.min_similarity:
        return Decision(hit=False, similarity=candidate.similarity, vetoed_by=BELOW_THRESHOLD)
    results: list[StageResult] = []
    for stage in stages:
        result = stage.check(query, candidate.prompt)
        results.append(result)
        if not result.passed:
            return Decision(False, candidate.similarity, vetoed_by=stage.name, stages=tuple(results))
    return Decision(hit=True, similarity=candidate.similarity, stages=tuple(results))
