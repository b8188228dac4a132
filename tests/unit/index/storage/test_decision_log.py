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
        pytest.param(Reason.EXPLORED, None, id="explored"),
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


def test_entry_histories_count_serves_and_labels_by_precedence(tmp_path: Path) -> None:
    from index.judge.features import EntryHistory
    from index.storage.decision_log import Label, LabelSource

    engine = make_engine(f"sqlite:///{tmp_path / 'log.db'}")
    EntryStore(engine).create_schema()
    log = DecisionLog(engine)
    hit = ("hit-semantic", Reason.HIT)
    miss = ("miss", Reason.BELOW_THRESHOLD)
    rows = [("r1", 7, *hit), ("r2", 7, *hit), ("r3", 7, *miss), ("r4", 9, *miss)]
    log.record([DecisionRecord(rid, "ns", "m", "q", entry, "c", 0.8, 0.5, (), verdict, reason, None, 1.0)
                for rid, entry, verdict, reason in rows])
    log.label(Label("r1", LabelSource.SHADOW, False, 2.0))
    log.label(Label("r1", LabelSource.HUMAN, True, 3.0))  # a human label outranks the shadow
    log.label(Label("r3", LabelSource.SHADOW, False, 2.0))
    log.label(Label("r4", LabelSource.AUDIT, True, 2.0))
    assert log.entry_histories() == {7: EntryHistory(served=2, same=1, different=1),
                                     9: EntryHistory(served=0, same=1, different=0)}
    engine.dispose()
