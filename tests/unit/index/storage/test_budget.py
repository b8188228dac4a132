"""The budget's evidence: the tallies read from the decision log, remembered differences and the audit sampler."""

from __future__ import annotations

from pathlib import Path

import pytest

from index.match.audit_sampler import AuditReason, AuditSampler, HitFacts
from index.match.differences import HALF_LIFE_SECONDS, HORIZON_HALF_LIVES, DifferenceLabel, Differences, difference
from index.match.outcome import Reason
from index.storage.budget import BudgetTallies, BudgetTally, tallies_since
from index.storage.decision_log import DecisionLog, DecisionRecord, Label, LabelSource
from index.storage.differences import SqlDifferenceLog
from index.storage.entries import EntryStore, make_engine


def _record(log: DecisionLog, rid: str, namespace: str, verdict: str, api: str = "chat") -> None:
    reason = Reason.HIT if verdict == "hit-semantic" else Reason.BELOW_THRESHOLD
    log.record([DecisionRecord(rid, namespace, "m", "q", 1, "c", 0.9, 0.5, (), verdict, reason, None, 1.0, api)])
    log.count()


def test_tallies_count_served_hits_and_their_audits_by_precedence(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'log.db'}")
    EntryStore(engine).create_schema()
    log = DecisionLog(engine, tallies=BudgetTallies(lambda: 1.0))
    log.label(Label("h3", LabelSource.FEEDBACK, False, 0.5))  # a label before its decision counts once it is logged
    for i in range(4):
        _record(log, f"h{i}", "ns-a", "hit-semantic")
    _record(log, "m1", "ns-a", "miss")
    _record(log, "x1", "ns-a", "hit-semantic", api="messages")
    log.label(Label("h0", LabelSource.AUDIT, False, 2.0))
    log.label(Label("h1", LabelSource.AUDIT, False, 2.0))
    log.label(Label("h1", LabelSource.HUMAN, True, 3.0))  # a human outranks the audit: right
    log.label(Label("h1", LabelSource.AUDIT, False, 4.0))  # ... and stays ahead of a later audit
    log.label(Label("h2", LabelSource.SHADOW, False, 2.0))  # shadows judge unserved answers: not an audit
    log.label(Label("m1", LabelSource.SHADOW, False, 2.0))
    tallies, version = tallies_since(engine, 0)
    assert tallies == [BudgetTally("ns-a", "chat", 4, 3, 2), BudgetTally("ns-a", "messages", 1, 0, 0)]
    # Read by version: only what changed since.
    assert tallies_since(engine, version) == ([], version)
    _record(log, "x2", "ns-a", "hit-semantic", api="messages")
    assert tallies_since(engine, version)[0] == [BudgetTally("ns-a", "messages", 2, 0, 0)]
    engine.dispose()


def test_a_difference_vetoes_only_after_enough_agreeing_wrong_labels() -> None:
    assert difference("how do i pin a message", "how do i unpin a message") == frozenset({("pin", "unpin")})
    assert difference("same words", "same words") is None
    memory = Differences()
    for _ in range(2):
        memory.remember("ns", "how do i pin a message", "how do i unpin a message", same=False)
    assert memory.veto("ns", "can i unpin a chat", "can i pin a chat") is None  # two labels: not yet
    memory.remember("ns", "pin a note", "unpin a note", same=False)
    found = memory.veto("ns", "can i unpin a chat", "can i pin a chat")
    assert found is not None and found.changed == 1
    assert memory.veto("ns", "can i pin a chat", "can i pin a group chat") is None
    assert memory.veto("other-ns", "can i unpin a chat", "can i pin a chat") is None
    memory.remember("ns", "pin a message", "unpin a message", same=True)  # a right label counts against it
    assert memory.veto("ns", "unpin it", "pin it") is None
    assert [(d.a, d.b, d.wrong, d.right, d.labels, d.same, d.changed) for d in memory.remembered()] == [
        ("pin", "unpin", 3.0, 1.0, 4, False, 1)]


def test_a_labels_weight_is_its_labellers_accuracy() -> None:
    memory = Differences()
    for _ in range(3):  # a label model wrong one time in ten: each label weighs 0.8
        memory.remember("ns", "how do i pin a message", "how do i unpin a message", same=False, weight=0.8)
    assert memory.veto("ns", "unpin it now", "pin it now") is None
    memory.remember("ns", "how do i pin a message", "how do i unpin a message", same=False, weight=0.8)
    assert memory.veto("ns", "unpin it now", "pin it now") is not None


def test_old_evidence_decays_with_its_half_life() -> None:
    now = [0.0]
    memory = Differences(clock=lambda: now[0], half_life=100.0)
    for _ in range(4):
        memory.remember("ns", "how do i pin a message", "how do i unpin a message", same=False)
    assert memory.veto("ns", "unpin it now", "pin it now") is not None
    now[0] = 100.0  # one half-life: 4 -> 2, below 3
    assert memory.veto("ns", "unpin it now", "pin it now") is None
    assert memory.remembered()[0].wrong == pytest.approx(2.0)


def test_a_difference_never_vetoes_two_prompts_of_the_same_content() -> None:
    memory = Differences()
    for topic in ("reset my router", "export a pdf", "clear the cache", "rotate a video"):
        memory.remember("ns", f"how do i {topic}", f"how can i {topic}", same=False)
    [item] = memory.remembered()
    assert item.net_wrong == 4.0
    assert memory.veto("ns", "how do i update my drivers", "how can i update my drivers") is None


def test_a_right_difference_is_remembered_but_never_vetoes() -> None:
    memory = Differences()
    memory.remember("ns", "how to reset my password", "how to reset my passcode", same=True)
    assert memory.veto("ns", "reset password", "reset passcode") is None
    assert len(memory.remembered()) == 1


def test_replicas_share_the_evidence_through_sql(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'diff.db'}")
    EntryStore(engine).create_schema()
    now = [10.0]
    one, two = (Differences(SqlDifferenceLog(engine), clock=lambda: now[0]) for _ in range(2))
    for _ in range(3):
        one.remember("ns", "how do i pin a message", "how do i unpin a message", same=False)
    assert two.veto("ns", "unpin it now", "pin it now") is None  # not read yet
    two.sync()
    assert two.veto("ns", "unpin it now", "pin it now") is not None
    now[0] = 10.0 + HORIZON_HALF_LIVES * HALF_LIFE_SECONDS + 1
    two.sync()  # past the horizon: forgotten, in SQL too
    assert two.remembered() == [] and SqlDifferenceLog(engine).since(0.0) == []
    engine.dispose()


class _Reads:
    """A difference log that remembers how many labels each `since` returned."""

    def __init__(self, inner: SqlDifferenceLog) -> None:
        self.inner = inner
        self.returned: list[int] = []

    def add(self, label: DifferenceLabel) -> int:
        return self.inner.add(label)

    def since(self, after: float) -> list[DifferenceLabel]:
        found = self.inner.since(after)
        self.returned.append(len(found))
        return found

    def prune(self, before: float) -> None:
        self.inner.prune(before)


def test_a_sync_reads_what_is_new_and_folds_each_label_once(tmp_path: Path) -> None:
    """A pass costs what the new labels add: a sync reads the labels written since its last (and those of the
    last `LOOKBACK_SECONDS`, for one another replica committed late), each folded once, its own included."""
    engine = make_engine(f"sqlite:///{tmp_path / 'diff.db'}")
    EntryStore(engine).create_schema()
    now = [0.0]
    reads = _Reads(SqlDifferenceLog(engine))
    one, other = Differences(reads, clock=lambda: now[0]), Differences(SqlDifferenceLog(engine), clock=lambda: now[0])
    for i in range(10):
        now[0] = i * 1000.0
        one.remember("ns", "how do i pin a message", "how do i unpin a message", same=False)
    one.sync()
    assert reads.returned[-1] == 10
    [seen] = one.remembered()
    assert seen.labels == 10  # its own ten, read back, not counted twice
    now[0] = 20_000.0
    other.remember("ns", "how do i pin a message", "how do i unpin a message", same=False)
    one.sync()
    assert reads.returned[-1] == 2  # the new one, and the last one within the look-back
    now[0] = 20_100.0
    late = DifferenceLabel("ns", frozenset({("pin", "unpin")}), False, 1.0, 19_900.0)  # stamped behind, late
    SqlDifferenceLog(engine).add(late)
    one.sync()
    one.sync()
    [seen] = one.remembered()
    assert seen.labels == 12
    engine.dispose()


def _facts(over_budget: bool = False, p: float | None = None, age: float = 1e6) -> HitFacts:
    return HitFacts(over_budget, p, 0.9 if p is not None else None, age)


@pytest.mark.parametrize(("facts", "u", "expected"), [
    (_facts(), 0.005, AuditReason.BASE),
    (_facts(), 0.05, None),
    (_facts(over_budget=True), 0.15, AuditReason.OVER_BUDGET),
    (_facts(p=0.93), 0.05, AuditReason.UNCERTAIN),
    (_facts(p=0.99), 0.05, None),
    (_facts(age=10.0), 0.04, AuditReason.YOUNG),
], ids=["base-share", "not-drawn", "over-budget", "uncertain", "sure", "young"])
def test_audits_are_denser_where_they_teach_most(facts: HitFacts, u: float, expected: AuditReason | None) -> None:
    assert AuditSampler(0.01, 100, clock=lambda: 0.0).draw(facts, u) == expected


def test_extra_audits_stop_at_the_hourly_allowance_and_base_ones_do_not() -> None:
    now = [0.0]
    sampler = AuditSampler(0.01, 2, clock=lambda: now[0])
    over = _facts(over_budget=True)
    assert [sampler.draw(over, 0.1) for _ in range(3)] == [AuditReason.OVER_BUDGET] * 2 + [None]
    assert sampler.draw(over, 0.001) is AuditReason.BASE
    now[0] = 3600.0
    assert sampler.draw(over, 0.1) is AuditReason.OVER_BUDGET
