"""The match policy: everything that decides whether a cached answer may serve a request. `build_policy` makes
it from `Settings` in one place, for the gateway and for `eval`, so a policy means the same in both."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

from index.keys import ContextMatch
from index.stages import STAGE_ORDER

if TYPE_CHECKING:
    from index.settings import Settings

# Chosen from `eval sweep` on datasets/pairs-dev.jsonl and `eval replay` on datasets/stream.jsonl; see README
# "How the default threshold was chosen".
DEFAULT_MIN_SIMILARITY = 0.90
DEFAULT_MIN_CONTEXT_SIMILARITY = 0.70


@dataclass(frozen=True)
class MatchPolicy:
    """How strict a semantic match must be. Similarities are cosine similarities in [-1, 1].

    `min_similarity` applies to the last user messages; `min_context_similarity` to the relevant earlier
    context of multi-turn requests. `stages` names the verification stages (built by `index.stages`), run in
    `STAGE_ORDER`; `verifier_min_probability` None means the verifier's calibrated default.
    """

    min_similarity: float
    min_context_similarity: float = DEFAULT_MIN_CONTEXT_SIMILARITY
    stages: tuple[str, ...] = ()
    verifier_min_probability: float | None = None
    context_match: ContextMatch = ContextMatch.SEMANTIC

    def __post_init__(self) -> None:
        for name in ("min_similarity", "min_context_similarity"):
            value = getattr(self, name)
            if not -1.0 <= value <= 1.0:
                raise ValueError(f"{name} must be a cosine similarity in [-1, 1], got {value}")
        unknown = [name for name in self.stages if name not in STAGE_ORDER]
        if unknown:
            raise ValueError(f"unknown stage {unknown[0]!r}; known: {', '.join(STAGE_ORDER)}")
        p = self.verifier_min_probability
        if p is not None and not 0.0 <= p <= 1.0:
            raise ValueError(f"verifier_min_probability must be a probability, got {p}")

    def at(self, min_similarity: float) -> MatchPolicy:
        """The same policy at another threshold (what a sweep varies, and per-namespace thresholds set)."""
        return dataclasses.replace(self, min_similarity=min_similarity)


# The policy with every default, for callers that vary one part of it (a sweep varies the threshold).
DEFAULT_POLICY = MatchPolicy(DEFAULT_MIN_SIMILARITY)


def build_policy(settings: Settings) -> MatchPolicy:
    """The deployment's policy, as the gateway runs it and `eval` measures it."""
    flags = {"polarity": settings.guard_polarity, "values": settings.guard_values, "verifier": settings.verifier}
    return MatchPolicy(
        min_similarity=settings.min_similarity,
        min_context_similarity=settings.min_context_similarity,
        stages=tuple(name for name in STAGE_ORDER if flags[name]),
        verifier_min_probability=settings.verifier_min_probability,
        context_match=settings.context_match,
    )
