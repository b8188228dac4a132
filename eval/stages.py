"""Verification stages by name (`none`, `polarity`, `values`, ...), and a memo so each runs once per pair.

The rule stages come from `index.guards`, imported lazily: without it there are simply no rule stages.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence

from index.stages import Stage, StageResult

# Names served by `index.guards.rule_stages`; the gateway orders them, so we ask for them in one call.
RULE_STAGES = ("polarity", "values")
# A learned verifier will register here as another name.
KNOWN_STAGES = RULE_STAGES


class StageUnavailable(Exception):
    """A known stage whose implementation is not installed."""


def _rule_stages(polarity: bool, values: bool) -> tuple[Stage, ...] | None:
    """`index.guards.rule_stages(...)`, or None while that module (or the function) does not exist."""
    try:
        guards = importlib.import_module("index.guards")
    except ModuleNotFoundError as exc:
        if exc.name != "index.guards":
            raise  # a dependency of the guards is missing: a real error, not "no guards"
        return None
    factory = getattr(guards, "rule_stages", None)
    if factory is None:
        return None
    stages: tuple[Stage, ...] = tuple(factory(polarity=polarity, values=values))
    return stages


def default_stage_names() -> tuple[str, ...]:
    """What the gateway runs by default: every rule stage that is available."""
    stages = _rule_stages(polarity=True, values=True)
    return tuple(stage.name for stage in stages or ())


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
    """Instantiate the named stages (rule stages in the gateway's order). Raises `StageUnavailable`."""
    unknown = [name for name in names if name not in KNOWN_STAGES]
    if unknown:
        raise ValueError(f"unknown stage {unknown[0]!r}; known: {', '.join(KNOWN_STAGES)}")
    wanted = set(names)
    if not wanted & set(RULE_STAGES):
        return ()
    stages = _rule_stages(polarity="polarity" in wanted, values="values" in wanted)
    if stages is None:
        names = ", ".join(sorted(wanted))
        raise StageUnavailable(f"stages {names} need index.guards, which is not installed")
    found = {stage.name for stage in stages}
    missing = sorted(wanted - found)
    if missing:
        raise StageUnavailable(f"index.guards does not provide stage {missing[0]!r}")
    return stages


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
