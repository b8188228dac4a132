"""The match's outcome records: one for a candidate, one for a decision, one for a whole lookup."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from index.guards.stages import StepResult
from index.match.kinds import Kind as Kind  # re-exported: the kinds are read with the outcomes they name
from index.match.policy import MatchPolicy
from index.records import CachedResponse, QueryVectors, Verdict


@dataclass(frozen=True)
class Candidate:
    """A cached prompt offered to the decision, with its cosine similarity in [-1, 1] (and, for conversations,
    its relevant context and the similarity of the two contexts)."""

    entry_id: int
    prompt: str
    similarity: float
    context: str | None = None
    context_similarity: float | None = None


class Reason(StrEnum):
    """Why `decide` said what it said (`X-Deja-Reason`)."""

    HIT = "hit"
    BELOW_THRESHOLD = "below_threshold"
    CONTEXT_BELOW_THRESHOLD = "context_below_threshold"
    VETOED = "vetoed"
    # No candidate at or above the decision log's floor.
    NO_CANDIDATE = "no_candidate"
    # A prompt (or context) runs past the embedder's window and the two texts differ: their vectors cannot tell
    # what differs, so only an exact repeat may serve it (see `index.match.window`).
    BEYOND_WINDOW = "beyond_window"
    # A long single-turn prompt that is not a plain rewording of the candidate's: one changed word moves the cosine
    # of a long text less than any threshold can tell (see `index.match.window.RESOLUTION_WORDS`).
    BEYOND_RESOLUTION = "beyond_resolution"


@dataclass(frozen=True)
class Decision:
    """Outcome of `index.match.decide`. `chosen` indexes the candidates decided (the served one on a hit, else
    the best one, None without candidates). `vetoed_by` names the vetoing step (`<stage>@context` for a
    context check) and is set only when `reason` is `VETOED`; `stages` holds what the steps found, in the order
    they ran."""

    reason: Reason
    similarity: float
    vetoed_by: str | None = None
    stages: tuple[StepResult, ...] = field(default_factory=tuple)
    chosen: int | None = None
    # What the hit rests on: "cosine", or "same content" (a plain rewording, `index.guards.form`).
    basis: str | None = None
    # The chosen candidate is served, or would be at a threshold at its cosine, on the cosine alone (every other
    # step passed; a plain rewording served on its content is not): the evidence of the threshold it rests on.
    would_serve: bool = False
    # The kind of difference the chosen candidate shows (decided before the steps, `index.match.kinds.kind_of`):
    # whose evidence its label is, whose threshold it was held to.
    kind: Kind = Kind.COSINE
    # The policy the decision ran under: the namespace's thresholds, adjusted for a conversation (set by
    # `index.match.matcher.Matcher`; None from a bare `index.match.decide`).
    policy: MatchPolicy | None = None

    def __post_init__(self) -> None:
        if (self.reason is Reason.VETOED) != (self.vetoed_by is not None):
            raise ValueError("vetoed_by names the stage of a veto, and only of a veto")

    @property
    def hit(self) -> bool:
        return self.reason is Reason.HIT

    @property
    def near_miss(self) -> bool:
        """Not served, but every step passed it save its threshold: a lower threshold would serve it (made in one
        place, `index.match.steps.concluded`); its label is its kind's evidence."""
        return self.reason is Reason.BELOW_THRESHOLD and self.would_serve

    @property
    def threshold(self) -> float | None:
        """The cosine threshold the chosen candidate's kind was held to under `policy` (what the decision log
        records), None without a policy."""
        return None if self.policy is None else self.policy.threshold_for(self.kind)


@dataclass(frozen=True)
class Lookup:
    """Result of `Cache.lookup`. `vector` is the query embedding when one was computed, for reuse on store."""

    verdict: Verdict
    response: CachedResponse | None = None
    similarity: float | None = None
    decision: Decision | None = None
    candidate_prompt: str | None = None
    candidate_id: int | None = None
    # The request's embeddings when computed, for reuse on store.
    vector: QueryVectors | None = None
    timings_ms: dict[str, float] = field(default_factory=dict)
    degraded: tuple[str, ...] = ()
    # The best candidate's stored answer (hit or not), for shadow labels.
    candidate_response: dict[str, Any] | None = None
