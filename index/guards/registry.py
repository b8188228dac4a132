"""The one place that builds guard stages by name (for the gateway from its policy, for `eval` from `--stages`)."""

from __future__ import annotations

from collections.abc import Iterable

from index.guards.alignment import AlignmentStage
from index.guards.polarity import PolarityStage
from index.guards.stages import STAGE_ORDER, Stage
from index.guards.values import ValueStage


def build_stages(names: Iterable[str]) -> tuple[Stage, ...]:
    """The named stages in `STAGE_ORDER`, cheapest first."""
    wanted = set(names)
    unknown = wanted - set(STAGE_ORDER)
    if unknown:
        raise ValueError(f"unknown stage {sorted(unknown)[0]!r}; known: {', '.join(STAGE_ORDER)}")
    stages: list[Stage] = []
    if "polarity" in wanted:
        stages.append(PolarityStage())
    if "values" in wanted:
        stages.append(ValueStage())
    return tuple(stages)


def context_stages(stages: Iterable[Stage]) -> tuple[Stage, ...]:
    """Stages run over the two relevant contexts: the prompt stages plus the alignment check."""
    return (*stages, AlignmentStage())
