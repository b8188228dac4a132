"""Verification stages by name, built in the gateway's order (cheap rules first, the learned verifier last).
The gateway (from its settings) and `eval` (from `--stages`) both build stages here."""

from __future__ import annotations

from collections.abc import Sequence

from index.stages import Stage

STAGE_ORDER = ("polarity", "values", "verifier")


def build_stages(names: Sequence[str], verifier_min_probability: float | None = None) -> tuple[Stage, ...]:
    """Instantiate the named stages, in `STAGE_ORDER` whatever the order asked."""
    unknown = [name for name in names if name not in STAGE_ORDER]
    if unknown:
        raise ValueError(f"unknown stage {unknown[0]!r}; known: {', '.join(STAGE_ORDER)}")
    wanted = set(names)
    stages: list[Stage] = []
    if wanted & {"polarity", "values"}:
        from index.guards import rule_stages

        stages.extend(rule_stages(polarity="polarity" in wanted, values="values" in wanted))
    if "verifier" in wanted:
        from index.verifier import VerifierStage

        stages.append(VerifierStage(min_probability=verifier_min_probability))
    return tuple(stages)
