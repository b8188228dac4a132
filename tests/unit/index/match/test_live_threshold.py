"""The learned threshold (`index.match.live_threshold`, `index.match.evidence`, `index.match.threshold_book`):
down on clean near misses, up on wrong hits above it, nowhere on no evidence, the same for the same evidence."""

from __future__ import annotations

import random

import pytest

from index.match.evidence import GROWTH_OFFSET, Observation, collect
from index.match.live_threshold import LearnerConfig, choose
from index.match.threshold_book import ThresholdBook

FLOOR = 0.80
CONFIG = LearnerConfig(budget=0.02, prior=0.92, floor=FLOOR)


def _traffic(n: int, wrong_rate: dict[float, float], seed: int = 0, labelled_below: float = 0.92,
             flip: float = 0.0) -> list[Observation]:
    """`n` would-serve requests spread over 0.80-1.0; those below `labelled_below` carry a (shadow) label."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        s = rng.uniform(0.80, 0.999)
        rate = next(r for low, r in sorted(wrong_rate.items(), reverse=True) if s >= low)
        label = None
        if s < labelled_below:
            right = rng.random() >= rate
            label = right if rng.random() >= flip else not right
        out.append(Observation(s, label))
    return out


CLEAN = {0.80: 0.0, 0.90: 0.0}
BROKEN = {0.80: 0.3, 0.86: 0.3, 0.90: 0.0}


def test_a_namespace_without_evidence_serves_at_the_prior() -> None:
    state = choose(collect([], FLOOR), 0.92, CONFIG)
    assert state.threshold == 0.92 and state.labels == 0


def test_clean_near_misses_lower_the_threshold_within_hundreds_of_labels() -> None:
    # 800 requests, half of them labelled near misses (labels weigh by the stream's growth since they were taken).
    state = choose(collect(_traffic(800, CLEAN), FLOOR), 0.92, CONFIG)
    assert state.threshold <= 0.85
    assert state.within >= CONFIG.confidence and state.estimate <= CONFIG.budget


def test_wrong_near_misses_keep_the_threshold_where_it_is() -> None:
    state = choose(collect(_traffic(400, BROKEN), FLOOR), 0.92, CONFIG)
    assert state.threshold >= 0.90


def test_wrong_hits_above_a_lowered_threshold_raise_it() -> None:
    # The namespace served at 0.84; audits of its hits in 0.84-0.88 come back wrong one time in three.
    audits = [Observation(0.84 + 0.04 * (i % 10) / 10, i % 3 != 0) for i in range(90)]
    state = choose(collect(audits, FLOOR), 0.84, CONFIG)
    assert state.threshold > 0.84


def test_empty_bands_are_not_opened_on_the_strength_of_the_bands_above() -> None:
    # A handful of right hits high up and no traffic at all between 0.80 and 0.90.
    few = [Observation(0.95, True), Observation(0.97, True), Observation(0.91, True), Observation(0.91, True)]
    assert choose(collect(few, FLOOR), 0.92, CONFIG).threshold == 0.92


def test_the_same_evidence_gives_the_same_threshold() -> None:
    evidence = collect(_traffic(300, CLEAN, seed=3), FLOOR)
    assert choose(evidence, 0.92, CONFIG) == choose(evidence, 0.92, CONFIG)


def test_a_labeller_wrong_one_time_in_ten_still_lowers_it_when_configured_with_its_rate() -> None:
    noisy = LearnerConfig(budget=0.02, prior=0.92, floor=FLOOR, error_rate=0.1)
    state = choose(collect(_traffic(800, CLEAN, flip=0.1), FLOOR), 0.92, noisy)
    assert state.threshold < 0.92


def test_time_to_trust_counts_labels_and_requests_to_the_next_band_down() -> None:
    # 13 labels, clean: the next band down is within the budget but the move below the prior needs 10 labels
    # between it and the prior.
    state = choose(collect(_traffic(20, CLEAN, seed=1), FLOOR), 0.92, CONFIG)
    assert state.threshold == 0.92
    assert state.next_down is not None and state.next_down < state.threshold
    assert state.labels_to_move is not None and state.labels_to_move > 0
    assert state.requests_to_move is not None and state.requests_to_move >= state.labels_to_move


def test_labels_taken_when_the_stream_was_young_weigh_by_its_growth_since() -> None:
    # Ten right labels in the first ten would-serve requests, then 990 unlabelled: the cache they were taken
    # against held a small share of the neighbours it holds now (the twins that arrive later).
    early = [Observation(0.85, True)] * 10 + [Observation(0.95, None)] * 990
    band = next(b for b in collect(early, FLOOR, half_life_labels=1e12).bands if b.low == 0.85)
    assert band.right == pytest.approx(sum((i + GROWTH_OFFSET) / (1000 + GROWTH_OFFSET) for i in range(1, 11)))
    late = [Observation(0.95, None)] * 990 + [Observation(0.85, True)] * 10
    assert next(b for b in collect(late, FLOOR, half_life_labels=1e12).bands if b.low == 0.85).right > 9.9


def test_older_evidence_weighs_less() -> None:
    old = [Observation(0.85, False)] * 10
    new = [Observation(0.85, True)] * 10
    band = next(b for b in collect(old + new, FLOOR, half_life_labels=5).bands if b.low == 0.85)
    assert band.right > band.wrong > 0


def test_the_book_logs_each_move_and_keeps_the_prior_for_unknown_namespaces() -> None:
    book = ThresholdBook(CONFIG, clock=lambda: 7.0)
    assert book.threshold("ns") is None
    move = book.update("ns", collect(_traffic(800, CLEAN), FLOOR))
    assert move is not None and move.new < move.old == 0.92 and move.at == 7.0
    assert book.history == [move] and book.threshold("ns") == move.new
    assert "95% upper bound" in move.describe() and "vs budget 0.02" in move.describe()
    assert book.update("ns", collect(_traffic(800, CLEAN), FLOOR)) is None


@pytest.mark.parametrize("evidence", [
    pytest.param([], id="none"),
    pytest.param(_traffic(400, CLEAN), id="clean"),
    pytest.param(_traffic(400, BROKEN), id="broken"),
    pytest.param([Observation(0.84 + 0.04 * (i % 10) / 10, i % 3 != 0) for i in range(90)], id="wrong-hits"),
    pytest.param(_traffic(60, {0.80: 0.02}, seed=3), id="near-the-budget"),
])
def test_the_budgets_one_statistic_is_the_upper_bound_the_learner_decides_by(evidence: list[Observation]) -> None:
    """`upper` (the posterior's bound at the learner's confidence) is within the budget exactly when the learner's
    own test, P(wrong ÷ served <= budget) >= confidence, says so: one statistic, read two ways; the threshold in
    force is one where it holds, and the estimate never exceeds its own bound."""
    for current in (0.84, 0.92):
        state = choose(collect(evidence, FLOOR), current, CONFIG)
        assert (state.upper <= CONFIG.budget) == (state.within >= CONFIG.confidence)
        assert state.upper <= CONFIG.budget and 0.0 <= state.estimate <= state.upper


def test_where_no_threshold_holds_the_kind_serves_no_cosine_hit_and_the_report_agrees() -> None:
    book = ThresholdBook(CONFIG, clock=lambda: 7.0)
    assert not book.over_budget("ns")  # no evidence: nothing says over
    # A third of the hits at the very top are wrong: no threshold holds, so none is served on its cosine, and the
    # bound shown is that of what is served (nothing of this kind): the report and the learner agree.
    audits = [Observation(0.991 + 0.008 * (i % 10) / 10, i % 3 != 0) for i in range(90)]
    book.update("ns", collect(audits, FLOOR))
    state = book.state("ns")
    assert state is not None and state.threshold == 1.0 and state.upper <= CONFIG.budget
    assert book.over_budget("ns")  # the evidence drove it above the prior: what it still serves is audited most
    book.update("clean", collect(_traffic(400, CLEAN), FLOOR))
    assert not book.over_budget("clean")


@pytest.mark.parametrize("budget", [0.0, 1.0])
def test_a_budget_outside_zero_to_one_is_refused(budget: float) -> None:
    with pytest.raises(ValueError, match="budget"):
        LearnerConfig(budget=budget, prior=0.92, floor=FLOOR)
