"""Rule-based verification stages that veto a semantic hit whose prompt differs in polarity or in a value.

Both are pure functions of the two prompts over word lists loaded once (WordNet-derived antonyms,
hand-written reversals, units and named-thing categories), so one instance can serve every thread.
"""

from __future__ import annotations

from index.guards.polarity import PolarityFindings, PolarityStage
from index.guards.values import ValueFindings, ValueStage
from index.stages import Stage

__all__ = ["PolarityFindings", "PolarityStage", "ValueFindings", "ValueStage", "rule_stages"]


def rule_stages(polarity: bool, values: bool) -> tuple[Stage, ...]:
    """The enabled rule stages, cheapest first."""
    stages: list[Stage] = []
    if polarity:
        stages.append(PolarityStage())
    if values:
        stages.append(ValueStage())
    return tuple(stages)
