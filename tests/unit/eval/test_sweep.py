"""Sweep metrics on hand-computed cases: similarities are given, stages are small fakes."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from eval.datasets import Conversation, LabeledPair, Message
from eval.sweep import (
    ScoredPair,
    Sweep,
    SweepConfig,
    SweepPoint,
    build_report,
    choose_threshold,
    run_sweep,
    score_pairs,
)
from index.embedding.embedder import HashEmbedder, Vector
from support.fakes import WordVeto


def _pair(pair_id: str, kind: str, same: bool, a: str, b: str) -> LabeledPair:
    return LabeledPair(pair_id, Conversation.of(a), Conversation.of(b), kind, same)


# Similarities chosen by hand; C1 is a conversation whose contexts differ (the gateway has no candidate).
SCORED = (
    ScoredPair(_pair("P1", "paraphrase", True, "how do I cancel", "how can I cancel"), 0.95),
    ScoredPair(_pair("P2", "paraphrase", True, "is it unavailable", "is it not available"), 0.82),
    ScoredPair(_pair("N1", "negation", False, "is it refundable", "is it not refundable"), 0.93),
    ScoredPair(_pair("V1", "value_change", False, "refund in 14 days", "refund in 30 days"), 0.88),
    ScoredPair(_pair("U1", "unrelated", False, "cancel my plan", "capital of France"), 0.30),
    ScoredPair(LabeledPair("C1", Conversation((Message("user", "hi"), Message("user", "help"))),
                           Conversation.of("help"), "small_talk", True), None),
)


def _at(sweep: Sweep, threshold: float) -> SweepPoint:
    return next(p for p in sweep.points if p.threshold == threshold)


def _kind_rate(point: SweepPoint, kind: str) -> float | None:
    return next(k.rate for k in point.kinds if k.kind == kind)


def test_without_stages_rates_follow_the_threshold() -> None:
    sweep = run_sweep(SCORED, [0.9, 0.8], ())
    assert [p.threshold for p in sweep.points] == [0.8, 0.9]
    assert (sweep.same_pairs, sweep.must_not_pairs) == (3, 3)
    low, high = _at(sweep, 0.8), _at(sweep, 0.9)
    # 0.80: P1, P2 served (C1 cannot be); N1 and V1 are false hits.
    assert (low.hits, low.false_hits) == (2, 2)
    assert low.hit_rate == pytest.approx(2 / 3)
    assert low.false_hit_rate == pytest.approx(2 / 3)
    assert low.precision == pytest.approx(0.5)
    assert low.f1 == pytest.approx(2 * 0.5 * (2 / 3) / (0.5 + 2 / 3))
    assert (_kind_rate(low, "negation"), _kind_rate(low, "value_change"), _kind_rate(low, "unrelated")) == (1, 1, 0)
    # 0.90: only P1 and N1 clear it.
    assert (high.hits, high.false_hits) == (1, 1)
    assert _kind_rate(high, "value_change") == 0.0


def test_kinds_are_listed_same_answer_first_in_natural_order() -> None:
    point = run_sweep(SCORED, [0.8], ()).points[0]
    assert [k.kind for k in point.kinds] == ["paraphrase", "small_talk", "negation", "value_change", "unrelated"]


def test_stage_catches_must_not_pairs_and_its_wrong_vetoes_are_counted() -> None:
    sweep = run_sweep(SCORED, [0.8, 0.9], [WordVeto("polarity", "not")])
    low = _at(sweep, 0.8)
    # N1 caught; P2 ("not" on one side) wrongly vetoed; V1 still a false hit.
    assert (low.hits, low.false_hits) == (1, 1)
    (vetoes,) = low.vetoes
    assert (vetoes.stage, vetoes.caught, vetoes.wrongly_vetoed) == ("polarity", 1, 1)
    assert {k.kind: k.count for k in vetoes.by_kind if k.count} == {"negation": 1, "paraphrase": 1}
    assert _at(sweep, 0.9).vetoes[0].wrongly_vetoed == 0  # P2 is below 0.90: the stage never saw it


def test_each_stage_runs_once_per_pair_and_only_above_the_lowest_threshold() -> None:
    stage = WordVeto("polarity", "not")
    sweep = run_sweep(SCORED, [0.8, 0.85, 0.9, 0.95], [stage])
    assert sorted(stage.checked) == sorted([
        ("how can I cancel", "how do I cancel"), ("is it not available", "is it unavailable"),
        ("is it not refundable", "is it refundable"), ("refund in 30 days", "refund in 14 days"),
    ])
    assert sweep.stage_checks == 4


def test_first_veto_gets_the_credit_and_later_stages_do_not_run() -> None:
    first, second = WordVeto("polarity", "not"), WordVeto("values", "30")
    point = run_sweep(SCORED, [0.8], [first, second]).points[0]
    assert {v.stage: v.caught for v in point.vetoes} == {"polarity": 1, "values": 1}
    assert ("is it not refundable", "is it refundable") not in second.checked
    assert (point.hits, point.false_hits) == (1, 0)


def _point(threshold: float, hit_rate: float, upper: float) -> SweepPoint:
    return SweepPoint(threshold, 0, 0, hit_rate, 0.0, upper, None, None, (), ())


def _sweep(points: Sequence[SweepPoint], must_not: int = 500) -> Sweep:
    return Sweep((), 100, must_not, 0, tuple(points))


def test_choice_takes_best_hit_rate_among_thresholds_meeting_the_bound() -> None:
    sweep = _sweep([_point(0.8, 0.9, 0.05), _point(0.85, 0.7, 0.009), _point(0.9, 0.5, 0.004)])
    choice = choose_threshold(sweep, 0.01)
    assert choice.threshold == 0.85
    assert choice.closest is None


def test_choice_prefers_the_higher_threshold_on_a_tie() -> None:
    sweep = _sweep([_point(0.88, 0.6, 0.008), _point(0.9, 0.6, 0.008)])
    assert choose_threshold(sweep, 0.01).threshold == 0.9


def test_no_qualifying_threshold_reports_the_closest() -> None:
    sweep = _sweep([_point(0.8, 0.9, 0.2), _point(0.9, 0.5, 0.03)])
    choice = choose_threshold(sweep, 0.01)
    assert choice.threshold is None and choice.point is None
    assert choice.closest is not None and choice.closest.threshold == 0.9


def test_zero_false_hits_on_a_small_sample_is_not_enough() -> None:
    scored = [ScoredPair(_pair(f"P{i}", "paraphrase", True, "a", "b"), 0.99) for i in range(10)]
    scored += [ScoredPair(_pair(f"U{i}", "unrelated", False, "a", "c"), 0.1) for i in range(100)]
    sweep = run_sweep(scored, [0.5], ())
    assert sweep.points[0].false_hits == 0
    assert sweep.points[0].false_hit_upper == pytest.approx(0.0370, abs=1e-4)
    assert choose_threshold(sweep, 0.01).threshold is None
    assert choose_threshold(sweep, 0.05).threshold == 0.5


class CountingEmbedder:
    """HashEmbedder that records every text it is asked to embed."""

    model_id = "fake/counting"

    def __init__(self) -> None:
        self.inner = HashEmbedder()
        self.dim = self.inner.dim
        self.seen: list[str] = []

    def embed(self, texts: Sequence[str]) -> Vector:
        self.seen.extend(texts)
        return self.inner.embed(texts)


def test_score_pairs_embeds_each_distinct_comparable_prompt_once() -> None:
    pairs = [item.pair for item in SCORED] + [_pair("P9", "paraphrase", True, "how do I cancel", "how do I cancel")]
    embedder = CountingEmbedder()
    done: list[int] = []
    scored = score_pairs(pairs, embedder, batch_size=3, progress=done.append)
    assert len(embedder.seen) == len(set(embedder.seen)) == 10  # C1 (contexts differ) is never embedded
    assert sum(done) == 10 and max(done) <= 3
    assert scored[-1].similarity == pytest.approx(1.0)
    assert scored[5].similarity is None
    expected = float(np.dot(*HashEmbedder().embed(["how do I cancel", "how can I cancel"])))
    assert scored[0].similarity == pytest.approx(expected)


def test_report_has_aucs_of_the_gateway_score_and_one_choice_per_sweep() -> None:
    config = SweepConfig((0.8, 0.9), ((), (WordVeto("polarity", "not"),)), max_false_hit_rate=0.5)
    report = build_report("toy", "fake", SCORED, config)
    assert (report.pairs, report.compared, report.same_pairs, report.must_not_pairs) == (6, 5, 3, 3)
    # Scores: same-answer 0.95, 0.82, -1 (C1); must-not 0.93, 0.88, 0.30 -> 3 + 1 + 0 of 9 pairs ordered right.
    assert report.roc_auc == pytest.approx(4 / 9)
    assert [s.stages for s in report.sweeps] == [(), ("polarity",)]
    assert [c.stages for c in report.choices] == [(), ("polarity",)]
