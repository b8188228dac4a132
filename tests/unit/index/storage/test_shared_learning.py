"""What the replicas share beyond the evidence, on one SQLite file standing for the shared store: the labelling
allowance, the upstream's answer variation and the learned thresholds' moves (a restart records none)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine

from index.match.allowance import HourlyAllowance
from index.match.audit_sampler import AuditSampler
from index.match.evidence import Observation, collect
from index.match.kinds import Kind
from index.match.live_threshold import LearnerConfig
from index.match.threshold_book import ThresholdBook
from index.storage.allowance import SqlAllowance
from index.storage.entries import EntryStore, make_engine
from index.storage.threshold_moves import SqlMoveLog
from index.storage.variation import SharedAnswerBaselines

CONFIG = LearnerConfig(0.02, 0.92, 0.80)


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    engine = make_engine(f"sqlite:///{tmp_path / 'shared.db'}")
    EntryStore(engine).create_schema()
    yield engine
    engine.dispose()


def test_one_allowance_is_spent_once_between_replicas(engine: Engine) -> None:
    now = [1000.0]
    replicas = [AuditSampler(0.01, 10, lambda: now[0], allowance=SqlAllowance(engine, 10)) for _ in range(3)]
    taken = sum(sampler.spend(2) for _ in range(4) for sampler in replicas)
    assert taken == 5  # 10 calls an hour between the three, 2 a take
    now[0] += 3600.0  # an hour later the allowance is whole again
    assert all(sampler.spend(2) for sampler in replicas)


def test_the_allowance_in_memory_slides_over_the_hour() -> None:
    allowance = HourlyAllowance(2)
    assert [allowance.take(1, 0.0), allowance.take(1, 10.0), allowance.take(1, 20.0)] == [True, True, False]
    assert allowance.take(1, 3600.0) and not allowance.take(1, 3605.0)


def test_a_variation_measured_through_one_replica_is_every_replicas_baseline(engine: Engine) -> None:
    one, two = (SharedAnswerBaselines(engine, lambda: 50.0) for _ in range(2))
    for similarity in (0.9, 0.8, 0.85, 0.95, 0.7):
        one.add("ns", similarity)
    assert one.baseline("ns") is not None and two.baseline("ns") is None
    assert two.sync() == 5 and two.sync() == 0
    assert two.baseline("ns") == one.baseline("ns")
    late = SharedAnswerBaselines(engine, lambda: 60.0)
    late.sync()
    assert late.baseline("ns") == one.baseline("ns")


def _wrong_hits() -> list[Observation]:
    """Conversation hits at 0.95, 15 of them audited wrong: evidence that raises the conversation threshold."""
    return ([Observation(0.95, False, kind=Kind.CONVERSATION) for _ in range(15)]
            + [Observation(0.95, None, kind=Kind.CONVERSATION) for _ in range(100)])


def test_a_move_is_recorded_once_and_a_restarted_replica_records_none(engine: Engine) -> None:
    evidence = collect(_wrong_hits(), CONFIG.floor)
    first, second = (ThresholdBook(CONFIG, lambda: 7.0, moves=SqlMoveLog(engine)) for _ in range(2))
    move = first.update("ns", evidence, 0.90, Kind.CONVERSATION, version=3)
    assert move is not None and move.old == 0.90 and move.new > 0.95
    assert second.update("ns", evidence, 0.90, Kind.CONVERSATION, version=3) is None  # recorded already
    assert second.threshold("ns", Kind.CONVERSATION) == move.new  # ... and served all the same
    restarted = ThresholdBook(CONFIG, lambda: 8.0, moves=SqlMoveLog(engine))
    assert restarted.update("ns", evidence, 0.90, Kind.CONVERSATION, version=3) is None
    assert restarted.update("ns", collect([], CONFIG.floor), 0.90, Kind.CONVERSATION, version=2) is None  # older
    restarted.moves.sync()
    assert [(m.namespace, m.kind, m.old, m.new) for m in restarted.history] == [
        ("ns", Kind.CONVERSATION, 0.90, move.new)]
