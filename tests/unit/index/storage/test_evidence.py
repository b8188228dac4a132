"""The learned threshold's evidence as the shared decision log holds it (`index.storage.evidence`): would-serve
decisions with their label by precedence, hits served whatever the threshold as fixed mass, oldest first."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, update

from index.match.evidence import Observation
from index.match.outcome import Reason
from index.records import Verdict
from index.storage.decision_log import DecisionLog, DecisionRecord, Label, LabelSource
from index.storage.entries import EntryStore, make_engine
from index.storage.evidence import EvidenceLog
from index.storage.schema import decisions


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    engine = make_engine(f"sqlite:///{tmp_path / 'log.db'}")
    EntryStore(engine).create_schema()
    yield engine
    engine.dispose()


def _record(request_id: str, similarity: float, verdict: Verdict, reason: Reason, at: float,
            would_serve: bool, namespace: str = "ns") -> DecisionRecord:
    return DecisionRecord(request_id, namespace, "m", "p", 1, "c", similarity, 0.92, (), verdict.value, reason, None,
                          at, "chat", would_serve)


def test_near_misses_hits_and_exact_hits_are_evidence_with_their_labels_oldest_first(engine: Engine) -> None:
    log = DecisionLog(engine)
    log.record([
        _record("near", 0.85, Verdict.MISS, Reason.BELOW_THRESHOLD, 1.0, True),
        _record("hit", 0.95, Verdict.SEMANTIC_HIT, Reason.HIT, 2.0, True),
        _record("rewording", 0.70, Verdict.SEMANTIC_HIT, Reason.HIT, 3.0, False),
        _record("exact", 1.0, Verdict.EXACT_HIT, Reason.HIT, 4.0, False),
        _record("vetoed", 0.88, Verdict.MISS, Reason.BELOW_THRESHOLD, 5.0, False),
        _record("other", 0.85, Verdict.MISS, Reason.BELOW_THRESHOLD, 6.0, True, namespace="other"),
    ])
    log.label(Label("near", LabelSource.SHADOW, False, 7.0))
    log.label(Label("near", LabelSource.AUDIT, True, 8.0))  # an audit outranks a shadow
    log.label(Label("hit", LabelSource.AUDIT, False, 9.0))
    evidence = EvidenceLog(engine)
    assert evidence.namespaces() == ["ns", "other"]
    assert evidence.observations("ns") == [
        Observation(0.85, True), Observation(0.95, False), Observation(0.70, None, fixed=True),
        Observation(1.0, None, fixed=True)]


def test_a_forgotten_decision_is_no_longer_evidence_and_the_newest_are_kept(engine: Engine) -> None:
    log = DecisionLog(engine)
    log.record([_record(f"r{i}", 0.80 + i / 100, Verdict.MISS, Reason.BELOW_THRESHOLD, float(i), True)
                for i in range(5)])
    with engine.begin() as conn:
        conn.execute(update(decisions).where(decisions.c.request_id == "r4").values(forgotten_at=10.0))
    assert [o.similarity for o in EvidenceLog(engine, limit=2).observations("ns")] == pytest.approx([0.82, 0.83])
