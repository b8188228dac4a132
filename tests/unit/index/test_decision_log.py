"""The decision log keeps why each decision was taken: reason and, for vetoes only, the stage."""

from __future__ import annotations

from pathlib import Path

import pytest

from index.decision_log import DecisionLog, DecisionRecord
from index.rule import Reason
from index.store import EntryStore, make_engine


@pytest.mark.parametrize(
    ("reason", "vetoed_by"),
    [
        pytest.param(Reason.HIT, None, id="hit"),
        pytest.param(Reason.BELOW_THRESHOLD, None, id="below-threshold"),
        pytest.param(Reason.CONTEXT_BELOW_THRESHOLD, None, id="context-below-threshold"),
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
