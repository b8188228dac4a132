"""The steps of the decision: one ordered list with a name per step, the same for every request."""

from __future__ import annotations

from index.match.decide import steps_of
from index.match.policy import DecisionMode, MatchPolicy
from index.match.steps import STEPS, THRESHOLD_STEPS


def test_every_step_has_its_own_name_and_a_line_for_the_manual() -> None:
    names = [step.name for step in STEPS]
    assert len(set(names)) == len(names)
    assert all(step.summary.strip() for step in STEPS)


def test_the_gates_come_before_the_threshold_and_the_remembered_differences_last() -> None:
    names = [step.name for step in STEPS]
    assert names[0] == "window" and names[-1] == "difference"
    assert names.index("order") < names.index("cosine") < names.index("rules") < names.index("context")
    assert not {"learned", "explore"} & set(names)  # the learned veto and its exploration left the decision


def test_threshold_mode_runs_a_part_of_the_same_list_in_the_same_order() -> None:
    assert steps_of(MatchPolicy(0.9)) == STEPS
    assert steps_of(MatchPolicy(0.9, decision=DecisionMode.THRESHOLD)) == THRESHOLD_STEPS
    assert [s for s in STEPS if s in THRESHOLD_STEPS] == list(THRESHOLD_STEPS)
    assert {s.name for s in THRESHOLD_STEPS}.isdisjoint({"same content", "contrast", "order"})
