"""Verification stages: checks that run on a candidate after it passed the similarity threshold.

A stage reads the two prompts (the incoming one and the cached one) and may veto the hit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class StageResult:
    """What one stage said about one (query, cached) pair."""

    stage: str
    passed: bool
    reason: str = ""
    # Optional score, e.g. a calibrated probability of "same answer" for a learned verifier.
    score: float | None = None


class Stage(Protocol):
    """A verification stage. `check` must be pure (same pair, same result) and thread-safe."""

    name: str

    def check(self, query: str, cached: str) -> StageResult: ...
