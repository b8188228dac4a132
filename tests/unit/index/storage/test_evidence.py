"""The learned threshold's evidence as the shared store keeps it (`index.storage.evidence`): running totals updated
where decisions and labels are written, the same evidence `collect` makes of the same history, labels by
precedence, exact hits as fixed mass that crowds nothing out, and publication only where labels change."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, func, select

from index.forgetting import Forgetting, Retention
from index.maintenance import Maintainer
from index.match.evidence import GROWTH_OFFSET, HALF_LIFE_LABELS, Aging, Evidence, Observation, Totals, collect
from index.match.outcome import Kind, Reason
from index.records import Verdict
from index.storage.decision_log import DecisionLog, DecisionRecord, Label, LabelSource
from index.storage.entries import EntryStore, make_engine
from index.storage.evidence import ORPHAN_SECONDS, EvidenceStore, StreamEvidence
from index.storage.schema import decisions, evidence_bands, labels
from support.caches import sqlite_cache

FLOOR = 0.80


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    engine = make_engine(f"sqlite:///{tmp_path / 'log.db'}")
    EntryStore(engine).create_schema()
    yield engine
    engine.dispose()


@pytest.fixture
def store(engine: Engine) -> EvidenceStore:
    return EvidenceStore(engine, Aging(FLOOR), clock=lambda: 0.0)


def _flush(log: DecisionLog, records: list[DecisionRecord]) -> None:
    """Log decisions, then count them, as the budget's pass does after the tick's flush."""
    log.record(records)
    log.count()


def _record(request_id: str, similarity: float, verdict: Verdict, at: float, would_serve: bool,
            namespace: str = "ns", kind: Kind = Kind.COSINE) -> DecisionRecord:
    reason = Reason.HIT if verdict is not Verdict.MISS else Reason.BELOW_THRESHOLD
    return DecisionRecord(request_id, namespace, "m", "p", 1, "c", similarity, 0.92, (), verdict.value, reason, None,
                          at, "chat", would_serve, kind.value)


def _streams(store: EvidenceStore, since: int = 0) -> dict[tuple[str, Kind], StreamEvidence]:
    return {(s.namespace, s.kind): s for s in store.changed(since)}


def _same(found: Evidence, expected: Evidence) -> None:
    assert (found.observations, found.labels) == (expected.observations, expected.labels)
    assert found.fixed == pytest.approx(expected.fixed)
    assert [(b.low, b.mass, b.right, b.wrong) for b in found.bands] == [
        (b.low, pytest.approx(b.mass), pytest.approx(b.right), pytest.approx(b.wrong)) for b in expected.bands]


def test_the_totals_hold_what_collect_makes_of_the_same_history(engine: Engine, store: EvidenceStore) -> None:
    """Decisions flushed in batches, each labelled as it arrives: the stored stream is `collect` of the history (with
    each batch's labels counted after its requests, as they reach the store: labels age on the request clock)."""
    log, rng = DecisionLog(engine, store), random.Random(7)
    history = []
    aging, expected = Aging(FLOOR), Totals()
    for batch in range(6):
        records = []
        for i in range(50):
            at = batch * 100.0 + i
            fixed = rng.random() < 0.2
            similarity = 1.0 if fixed else round(rng.uniform(0.7, 1.0), 3)
            records.append(_record(f"r{batch}-{i}", similarity, Verdict.EXACT_HIT if fixed else Verdict.MISS, at,
                                   not fixed))
        _flush(log, records)
        for record in records:
            label = None if record.verdict == Verdict.EXACT_HIT.value or rng.random() < 0.6 else rng.random() < 0.8
            if label is not None:
                log.label(Label(record.request_id, LabelSource.SHADOW, label, record.created_at))
            history.append(Observation(record.similarity, label, fixed=not record.would_serve))
        batch_history = history[-len(records):]
        lows = [None if o.fixed else aging.band(o.similarity) for o in batch_history]
        for o, low in zip(batch_history, lows, strict=True):
            if o.fixed or low is not None:
                expected.observe(low, aging)
        for o, low in zip(batch_history, lows, strict=True):
            if low is not None and o.correct is not None:
                expected.label(low, o.correct, aging)
    _same(_streams(store)[("ns", Kind.COSINE)].evidence, expected.live(aging))
    assert collect(history, FLOOR).labels == expected.live(aging).labels


def test_labels_count_by_precedence_and_exact_hits_count_as_fixed_mass(engine: Engine, store: EvidenceStore) -> None:
    log = DecisionLog(engine, store)
    _flush(log, [
        _record("near", 0.85, Verdict.MISS, 1.0, True),
        _record("hit", 0.95, Verdict.SEMANTIC_HIT, 2.0, True),
        _record("rewording", 0.70, Verdict.SEMANTIC_HIT, 3.0, False),
        _record("exact", 1.0, Verdict.EXACT_HIT, 4.0, False, kind=Kind.SLOT),  # served whatever: cosine's mass
        _record("vetoed", 0.88, Verdict.MISS, 5.0, False),
        _record("slot", 0.90, Verdict.MISS, 6.0, True, kind=Kind.SLOT),
        _record("other", 0.85, Verdict.MISS, 7.0, True, namespace="other"),
    ])
    log.label(Label("near", LabelSource.SHADOW, False, 8.0))
    log.label(Label("near", LabelSource.AUDIT, True, 9.0))  # an audit outranks a shadow: the label changes sides
    log.label(Label("hit", LabelSource.AUDIT, False, 10.0))
    log.label(Label("hit", LabelSource.SHADOW, True, 11.0))  # outranked: nothing changes
    log.label(Label("vetoed", LabelSource.SHADOW, True, 12.0))  # not evidence
    streams = _streams(store)
    assert set(streams) == {("ns", Kind.COSINE), ("ns", Kind.SLOT), ("other", Kind.COSINE)}
    aging, expected = Aging(FLOOR), Totals()
    for low in (aging.band(0.85), aging.band(0.95), None, None):  # the four decisions, then their labels
        expected.observe(low, aging)
    expected.label(0.85, True, aging)
    expected.label(0.95, False, aging)
    _same(streams[("ns", Kind.COSINE)].evidence, expected.live(aging))
    _same(streams[("ns", Kind.SLOT)].evidence, collect([Observation(0.90, None)], FLOOR))


def test_a_label_written_before_its_decision_is_logged_counts_when_the_decision_flushes(
        engine: Engine, store: EvidenceStore) -> None:
    log = DecisionLog(engine, store)
    log.label(Label("early", LabelSource.SHADOW, False, 1.0))
    assert store.changed(0) == []
    _flush(log, [_record("early", 0.85, Verdict.MISS, 0.5, True)])
    [stream] = store.changed(0)
    assert (stream.evidence.labels, sum(b.wrong for b in stream.evidence.bands)) == (1, 1.0)


def test_the_flush_logs_uncounted_and_one_count_counts_each_decision_once(engine: Engine, store: EvidenceStore) -> None:
    """The tick's flush is a bare insert; the pass's count claims, counts and marks; a second log on the same store
    (another replica) finds nothing left to count, and a label written between the two waits for the count."""
    log, replica = DecisionLog(engine, store), DecisionLog(engine, store)
    log.record([_record(f"r{i}", 0.85, Verdict.MISS, float(i), True) for i in range(5)])
    log.label(Label("r1", LabelSource.SHADOW, False, 10.0))
    assert store.changed(0) == []
    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(decisions).where(decisions.c.counted)).scalar() == 0
    assert replica.count() == 5
    assert (log.count(), replica.count()) == (0, 0)
    [stream] = store.changed(0)
    assert (stream.evidence.observations, stream.evidence.labels) == (5, 1)


class _Failing:
    """An evidence sink whose count fails (the database refused it midway)."""

    def count_in(self, conn: object, records: object) -> None:
        raise RuntimeError("count failed")

    def settle(self, request_ids: object = None) -> int:
        return 0


def test_a_count_that_fails_leaves_its_decisions_for_the_next_pass(engine: Engine, store: EvidenceStore) -> None:
    DecisionLog(engine, store).record([_record(f"r{i}", 0.85, Verdict.MISS, float(i), True) for i in range(3)])
    with pytest.raises(RuntimeError):
        DecisionLog(engine, _Failing()).count()
    assert DecisionLog(engine, store).count() == 3  # nothing lost, nothing counted twice
    [stream] = store.changed(0)
    assert stream.evidence.observations == 3


def test_a_log_without_totals_logs_its_decisions_counted(engine: Engine) -> None:
    log = DecisionLog(engine)
    log.record([_record("r", 0.85, Verdict.MISS, 1.0, True)])
    assert log.count() == 0
    with engine.connect() as conn:
        assert conn.execute(select(decisions.c.counted)).scalar() is True


def test_a_label_whose_decision_never_comes_is_given_up_and_holds_up_no_other(engine: Engine) -> None:
    now = {"t": 0.0}
    store = EvidenceStore(engine, Aging(FLOOR), clock=lambda: now["t"])
    log = DecisionLog(engine, store)
    log.label(Label("lost", LabelSource.SHADOW, False, 0.0))  # its decision's flush was lost
    now["t"] = ORPHAN_SECONDS + 1.0
    log.label(Label("early", LabelSource.SHADOW, True, now["t"]))  # its decision is only late
    assert store.settle() == 1  # the lost one given up, the late one still waiting
    _flush(log, [_record("early", 0.85, Verdict.MISS, now["t"], True)])
    [stream] = store.changed(0)
    assert stream.evidence.labels == 1
    with engine.connect() as conn:
        pending = select(func.count()).select_from(labels).where(labels.c.counted.is_(False))
        assert conn.execute(pending).scalar_one() == 0


def test_requests_publish_only_once_they_grew_by_an_eighth_a_label_publishes_its_stream_at_once(
        engine: Engine, store: EvidenceStore) -> None:
    log = DecisionLog(engine, store)
    _flush(log, [_record(f"a{i}", 0.85, Verdict.MISS, 1.0, True) for i in range(80)]
               + [_record("b", 0.85, Verdict.MISS, 1.0, True, namespace="quiet")])
    first = max(s.version for s in store.changed(0))
    _flush(log, [_record(f"more{i}", 0.86, Verdict.MISS, 2.0, True) for i in range(9)])
    assert store.changed(first) == []  # 9 more of 80: counted, not published; every replica still reads the same
    [before] = [s for s in store.changed(0) if s.namespace == "ns"]
    assert before.evidence.observations == 80
    _flush(log, [_record("tenth", 0.86, Verdict.MISS, 3.0, True)])
    [grown] = store.changed(first)
    assert (grown.namespace, grown.evidence.observations, grown.evidence.labels) == ("ns", 90, 0)
    log.label(Label("more3", LabelSource.SHADOW, True, 4.0))
    [labelled] = store.changed(grown.version)
    assert (labelled.namespace, labelled.evidence.labels) == ("ns", 1)


def test_exact_hits_take_no_room_from_the_labelled_evidence(engine: Engine, store: EvidenceStore) -> None:
    """However many exact hits a namespace serves, every label stays counted (no window of rows to fill)."""
    log = DecisionLog(engine, store)
    _flush(log, [_record(f"near{i}", 0.85, Verdict.MISS, float(i), True) for i in range(10)])
    for i in range(10):
        log.label(Label(f"near{i}", LabelSource.SHADOW, True, 10.0 + i))
    _flush(log, [_record(f"exact{i}", 1.0, Verdict.EXACT_HIT, 100.0 + i, False) for i in range(25_000)])
    _flush(log, [_record("last", 0.85, Verdict.MISS, 300.0, True)])
    log.label(Label("last", LabelSource.SHADOW, True, 301.0))  # publishes again
    [stream] = store.changed(0)
    assert stream.evidence.labels == 11 and stream.evidence.fixed > 4000
    [band] = [b for b in stream.evidence.bands if b.low == 0.85]
    # Labels age on the stream's would-serve requests: the ten by one ("last"), and 25,000 exact hits age none.
    assert band.right == pytest.approx(10 * 0.5 ** (1 / HALF_LIFE_LABELS) * (10 + GROWTH_OFFSET) / (11 + GROWTH_OFFSET)
                                       + 1)
    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(evidence_bands)).scalar_one() == 1


def test_invalidating_a_namespace_resets_its_evidence_for_every_replica(tmp_path: Path) -> None:
    cache = sqlite_cache(tmp_path / "db.sqlite")
    maintainer = Maintainer(cache, None, clock=lambda: 10.0)
    maintainer.start()
    engine = cache.store.engine
    store = EvidenceStore(engine, Aging(FLOOR))
    log = DecisionLog(engine, store)
    _flush(log, [_record("a", 0.85, Verdict.MISS, 1.0, True), _record("b", 0.85, Verdict.MISS, 1.0, True, "kept")])
    log.label(Label("a", LabelSource.SHADOW, False, 2.0))
    log.record([_record("pending", 0.85, Verdict.MISS, 3.0, True)])  # logged before the invalidation, not counted
    before = max(s.version for s in store.changed(0))
    Forgetting(engine, maintainer, Retention(), lambda: 10.0).invalidate(namespace="ns")
    assert log.count() == 0  # it belonged to the evidence the invalidation emptied
    [reset] = store.changed(before)  # a newer version: every replica's pass serves the priors again
    assert (reset.namespace, reset.evidence.labels, reset.evidence.observations) == ("ns", 0, 0)
    assert {s.namespace: s.evidence.observations for s in store.changed(0)} == {"ns": 0, "kept": 1}
    engine.dispose()
