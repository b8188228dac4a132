"""The budget's bound against the truth (`eval.calibration`): simulated namespaces with known wrong rates driven
through the product's learner and audit sampler, many seeds, no model. The bound covers the truth at its stated
confidence on stationary traffic; on changing traffic (twins that arrive after the bands opened, a burst of a new
intent, a drift, a prior that is wrong, few and many labels) what is served stays within the budget over the whole
run and its second half, and the coverage is reported against a floor (the known gap: a change is seen only after
the labels that show it, see docs/budget.md)."""

from __future__ import annotations

import pytest

from eval.calibration import BUDGET, SCENARIOS, Scenario, calibrate, misses
from index.match.live_threshold import CONFIDENCE

STATIONARY = {"stationary", "labels wrong one time in ten"}
# The coverage measured on changing traffic at the final code (3 seeds): 0.40-1.00. A floor, so that a regression
# shows; the gap to the confidence is the detection lag after a change (docs/budget.md, "How true the bound is").
CHANGING_COVERAGE_FLOOR = 0.35
# The known gap: a default that turns wrong above the prior (5% from a third of the run) is seen only through audits,
# which the hourly allowance rations: over 8 seeds its second half serves 2.21% wrong (its whole run 1.59%). Judged
# on the 8 seeds the manual's table reports, so that a lucky few seeds do not hide it.
LATE_GAP = "over the budget above the prior"


def _cases() -> list[object]:
    return [pytest.param(s, 8, id=s.name, marks=pytest.mark.xfail(strict=True, reason="the known gap: docs/budget.md"))
            if s.name == LATE_GAP else pytest.param(s, 3, id=s.name) for s in SCENARIOS]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_the_bound_covers_the_truth_and_the_whole_run_holds_the_budget(scenario: Scenario) -> None:
    [summary] = calibrate([scenario], seeds=3)
    assert summary.wrong_per_served <= BUDGET, summary
    floor = CONFIDENCE if scenario.name in STATIONARY else CHANGING_COVERAGE_FLOOR
    assert summary.coverage >= floor, summary
    # The positive side: a cache that serves nothing passes a budget; this one serves.
    assert summary.correct >= 0.5, summary


def test_misses_names_a_bound_that_does_not_cover_and_a_budget_that_breaks() -> None:
    [summary] = calibrate([SCENARIOS[0]], seeds=1, requests=600)
    broken = summary.__class__(**{**summary.__dict__, "coverage": 0.5, "wrong_per_served_late": 0.05})
    found = misses([broken])
    assert len(found) == 2 and "covered" in found[0] and "wrong ÷ served" in found[1]


@pytest.mark.parametrize(("scenario", "seeds"), _cases())
def test_the_second_half_holds_the_budget(scenario: Scenario, seeds: int) -> None:
    [summary] = calibrate([scenario], seeds=seeds)
    assert summary.wrong_per_served_late <= BUDGET, summary
