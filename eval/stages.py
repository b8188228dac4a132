"""Verification stages by name for `--stages` (built by `index.registry`, as the gateway builds them), and a
memo so each stage runs once per pair."""

from __future__ import annotations

from collections.abc import Sequence

from index.registry import STAGE_ORDER
from index.registry import build_stages as _build
from index.stages import Stage, StageResult
from index.verifier import VerifierModelError

KNOWN_STAGES = STAGE_ORDER
# The gateway's default stages (`DEJA_GUARD_POLARITY`, `DEJA_GUARD_VALUES`, `DEJA_VERIFIER` defaults).
DEFAULT_STAGES: tuple[str, ...] = ("polarity", "values")


class StageUnavailable(Exception):
    """A known stage whose implementation could not be loaded (e.g. the verifier model is missing)."""


def default_stage_names() -> tuple[str, ...]:
    return DEFAULT_STAGES


def parse_stage_names(text: str | None) -> tuple[str, ...]:
    """`None` -> the gateway default; `none` -> no stages; `polarity,values` -> those, in that order."""
    if text is None:
        return default_stage_names()
    names = tuple(name.strip() for name in text.split(",") if name.strip())
    if names in ((), ("none",)):
        return ()
    unknown = [name for name in names if name not in KNOWN_STAGES]
    if unknown:
        raise ValueError(f"unknown stage {unknown[0]!r}; known: none, {', '.join(KNOWN_STAGES)}")
    return names


def build_stages(names: Sequence[str]) -> tuple[Stage, ...]:
    """Instantiate the named stages in the gateway's order. Raises `StageUnavailable` if one cannot load."""
    try:
        return _build(names)
    except (ImportError, OSError, VerifierModelError) as exc:
        raise StageUnavailable(f"stages {', '.join(names)} could not be loaded: {exc}") from exc


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
