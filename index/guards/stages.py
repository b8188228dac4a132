"""The guard stage interface: a pure check of a (query, cached) prompt pair. In the step `rules` of the decision
(`index.match.steps`) a failed check vetoes the hit. Stages are built by name in `index.guards.registry`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

# Every stage by name, in the order they run.
STAGE_ORDER = ("polarity", "values")


@dataclass(frozen=True)
class StepResult:
    """What one step of the decision (`index.match.steps`), or one rule stage within it, found about one (query,
    cached) pair. `stage` is the name `X-Deja-Veto` and the decision log show (a rule stage's own name, e.g.
    `polarity`, or `polarity@context` over two contexts; a step's, e.g. `order`, `learned`, `difference`)."""

    stage: str
    passed: bool
    reason: str = ""
    # Optional score, e.g. the learned P(same answer) in a logged decision.
    score: float | None = None


class Stage(Protocol):
    """A verification stage. `check` must be pure (same pair, same result) and thread-safe."""

    name: str

    def check(self, query: str, cached: str) -> StepResult: ...


def parse_stage_names(text: str) -> tuple[str, ...]:
    """`none` or empty -> no stages; `polarity,values` -> those. Raises `ValueError` on an unknown name."""
    names = tuple(name.strip() for name in text.split(",") if name.strip())
    if names in ((), ("none",)):
        return ()
    unknown = [name for name in names if name not in STAGE_ORDER]
    if unknown:
        raise ValueError(f"unknown stage {unknown[0]!r}; known: none, {', '.join(STAGE_ORDER)}")
    return names


class MemoStage:
    """Wraps a pure stage so each distinct (query, cached) pair is checked once; counts the real checks."""

    def __init__(self, inner: Stage) -> None:
        self.inner = inner
        self.name = inner.name
        self.calls = 0
        self._memo: dict[tuple[str, str], StepResult] = {}

    def check(self, query: str, cached: str) -> StepResult:
        key = (query, cached)
        found = self._memo.get(key)
        if found is None:
            self.calls += 1
            found = self.inner.check(query, cached)
            self._memo[key] = found
        return found
