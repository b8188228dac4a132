"""Verification stages: checks that run on a candidate after it passed the similarity threshold, and the one
place that builds them by name (for the gateway from its policy, for `eval` from `--stages`).

A stage reads the two prompts (the incoming one and the cached one) and may veto the hit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from index.errors import StageUnavailable

if TYPE_CHECKING:
    from index.policy import MatchPolicy

# Every stage by name, in the order they run: cheap rules first, the learned verifier last.
STAGE_ORDER = ("polarity", "values", "verifier")


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


def parse_stage_names(text: str) -> tuple[str, ...]:
    """`none` or empty -> no stages; `polarity,values` -> those. Raises `ValueError` on an unknown name."""
    names = tuple(name.strip() for name in text.split(",") if name.strip())
    if names in ((), ("none",)):
        return ()
    unknown = [name for name in names if name not in STAGE_ORDER]
    if unknown:
        raise ValueError(f"unknown stage {unknown[0]!r}; known: none, {', '.join(STAGE_ORDER)}")
    return names


def build_stages(policy: MatchPolicy) -> tuple[Stage, ...]:
    """Instantiate the policy's stages in `STAGE_ORDER`. Raises `StageUnavailable` if one cannot load."""
    wanted = set(policy.stages)
    try:
        return _build(wanted, policy.verifier_min_probability)
    except (ImportError, OSError, StageUnavailable) as exc:
        raise StageUnavailable(f"stages {', '.join(policy.stages)} could not be loaded: {exc}") from exc


def _build(wanted: set[str], verifier_min_probability: float | None) -> tuple[Stage, ...]:
    stages: list[Stage] = []
    if wanted & {"polarity", "values"}:
        from index.guards import rule_stages

        stages.extend(rule_stages(polarity="polarity" in wanted, values="values" in wanted))
    if "verifier" in wanted:
        from index.verifier import VerifierStage

        stages.append(VerifierStage(min_probability=verifier_min_probability))
    return tuple(stages)


class MemoStage:
    """Wraps a pure stage so each distinct (query, cached) pair is checked once; counts the real checks."""

    def __init__(self, inner: Stage) -> None:
        self.inner = inner
        self.name = inner.name
        self.calls = 0
        self._memo: dict[tuple[str, str], StageResult] = {}

    def check(self, query: str, cached: str) -> StageResult:
        key = (query, cached)
        found = self._memo.get(key)
        if found is None:
            self.calls += 1
            found = self.inner.check(query, cached)
            self._memo[key] = found
        return found
