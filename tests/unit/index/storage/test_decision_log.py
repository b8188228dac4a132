"""The decision log keeps why each decision was taken: reason and, for vetoes only, the stage."""

from __future__ import annotations

from pathlib import Path

import pytest

from index.match.outcome import Reason
from index.storage.decision_log import DecisionLog, DecisionRecord
from index.storage.entries import EntryStore, make_engine


@pytest.mark.parametrize(
    ("reason", "vetoed_by"),
    [
        pytest.param(Reason.HIT, None, id="hit"),
        pytest.param(Reason.BELOW_THRESHOLD, None, id="below-threshold"),
        pytest.param(Reason.CONTEXT_BELOW_THRESHOLD, None, id="context-below-threshold"),
        pytest.param(Reason.BEYOND_WINDOW, None, id="beyond-window"),
        pytest.param(Reason.VETOED, "polarity", id="vetoed"),
        pytest.param(Reason.VETOED, "alignment@context", id="vetoed-on-context"),
    ],
)
def test_reason_and_vetoing_stage_survive_the_round_trip(tmp_path: Path, reason: Reason, vetoed_by: str | None) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'log.db'}")
    EntryStore(engine).create_schema()
    log = DecisionLog(engine)
    record = DecisionRecord("r1", "ns", "m", "is it cold", 1, "is it cold?", 0.91, 0.9, (), "miss", reason,
                            vetoed_by, 1.0)
    log.record([record])
    assert log.get("r1") == record
    engine.dispose()


@pytest.mark.parametrize("column", ["explored", "judge_below_bar"], ids=["exploration", "judge-mode"])
def test_a_miss_of_a_retired_step_reads_back_as_a_miss_below_the_threshold(tmp_path: Path, column: str) -> None:
    from index.storage.decision_log import Label, LabelSource

    engine = make_engine(f"sqlite:///{tmp_path / 'log.db'}")
    EntryStore(engine).create_schema()
    log = DecisionLog(engine)
    # What the retired exploration (and judge mode) wrote in the reason column, as an old row holds it.
    log.record([DecisionRecord("r1", "ns", "m", "q", 7, "c", 0.95, 0.92, (), "miss", Reason.VETOED, column, 1.0,
                               would_serve=True)])
    log.label(Label("r1", LabelSource.EXPLORE, True, 2.0))  # an exploration's label, as an old database holds it
    got = log.get("r1")
    assert got is not None and (got.reason, got.vetoed_by) == (Reason.BELOW_THRESHOLD, None)
    assert [(item.source, item.correct) for item in log.labeled()] == [(LabelSource.EXPLORE, True)]
    engine.dispose()
