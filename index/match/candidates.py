"""Which of a request's nearest neighbours the decision reads: how many the index is asked for, which are fetched,
and, most similar first, which become candidates. The rule is the Matcher's (`index.match.matcher.Matcher.plan`);
the cache only fetches the rows and says which it may serve.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from index.match.policy import DEFAULT_CANDIDATES, DEFAULT_LOG_FLOOR, MatchPolicy
from index.records import Neighbor

T = TypeVar("T")


@dataclass(frozen=True)
class Selection:
    """One request's selection: the `search` nearest neighbours are read from the index; those at or above `floor`
    are fetched; most similar first, up to `limit` (None: all) of those the cache may serve become candidates. Under
    the cosine rule (`cut` set: the threshold) the first neighbour below `cut` ends the list once it holds one: the
    decision serves none of them, and the best one is kept for the decision log."""

    search: int
    floor: float
    limit: int | None = None
    cut: float | None = None

    def reachable(self, neighbors: Sequence[Neighbor]) -> list[int]:
        """The entries `select` may reach, read in one query by the caller."""
        return [n.entry_id for n in neighbors if n.similarity >= self.floor]

    def select(self, neighbors: Sequence[Neighbor], offer: Callable[[Neighbor], T | None]) -> list[T]:
        """The candidates, most similar first: `offer` turns a neighbour into one, or None when the cache may not
        serve its entry (gone, expired, another model's parts), and the next is read."""
        out: list[T] = []
        for neighbor in neighbors:
            full = self.limit is not None and len(out) >= self.limit
            below = self.cut is not None and neighbor.similarity < self.cut and bool(out)
            if full or below or neighbor.similarity < self.floor:
                break
            candidate = offer(neighbor)
            if candidate is not None:
                out.append(candidate)
        return out


@dataclass(frozen=True)
class CandidateRule:
    """How many neighbours a lookup reads: `candidates` (`DEJA_CANDIDATES`) under the cosine rule, at least the
    policy's `guarded_candidates` (`DEJA_GUARDED_CANDIDATES`) in guarded mode; none below the decision log's floor
    (`DEJA_DECISION_LOG_FLOOR`) unless the threshold is lower."""

    candidates: int = DEFAULT_CANDIDATES
    log_floor: float = DEFAULT_LOG_FLOOR

    def __post_init__(self) -> None:
        if self.candidates < 1:
            raise ValueError(f"candidates must be >= 1, got {self.candidates}")
        if not -1.0 <= self.log_floor <= 1.0:
            raise ValueError(f"log_floor must be a cosine similarity in [-1, 1], got {self.log_floor}")

    def selection(self, policy: MatchPolicy) -> Selection:
        """The selection under the namespace's `policy` (guarded: the top K at or above the floor, a plain rewording
        below the threshold is still served; the cosine rule: those at or above the threshold, else the top one
        above the floor, for the log)."""
        floor = min(policy.min_similarity, self.log_floor)
        if policy.guarded:
            return Selection(max(self.candidates, policy.guarded_candidates), floor, limit=policy.guarded_candidates)
        return Selection(self.candidates, floor, cut=policy.min_similarity)
