"""One learner, one threshold per kind of difference: each kind's evidence moves only its own threshold, a
strict kind opens only on its own labels, and the threshold is a function of the shared evidence alone."""

from __future__ import annotations

import random

from index.match.evidence import Observation, collect
from index.match.live_threshold import LearnerConfig
from index.match.outcome import Kind
from index.match.threshold_book import ThresholdBook

FLOOR = 0.80
CONFIG = LearnerConfig(0.02, 0.92, FLOOR)


def _slots(n: int, wrong_share: float, seed: int = 0) -> list[Observation]:
    rng = random.Random(seed)
    return [Observation(round(rng.uniform(0.90, 0.99), 3), rng.random() >= wrong_share, kind=Kind.SLOT)
            for _ in range(n)]


def test_a_namespace_whose_slot_swaps_are_rewordings_learns_to_serve_them() -> None:
    book = ThresholdBook(CONFIG, lambda: 0.0)
    # Each band below a prior of 1.0 is its own stratum: a 95% bound within a 2% budget needs hundreds of labels,
    # and labels weigh by the stream's growth since they were taken (on stationary traffic, about half of them
    # count): 800 labels.
    assert book.update("paraphrases", collect(_slots(800, 0.0), FLOOR), 1.0, Kind.SLOT) is not None
    learned = book.threshold("paraphrases", Kind.SLOT)
    assert learned is not None and learned < 0.95
    assert book.threshold("paraphrases") is None  # the cosine kind saw nothing


def test_a_namespace_whose_slot_swaps_are_contrasts_keeps_them_out() -> None:
    book = ThresholdBook(CONFIG, lambda: 0.0)
    book.update("contrasts", collect(_slots(300, 0.3), FLOOR), 1.0, Kind.SLOT)
    learned = book.threshold("contrasts", Kind.SLOT)
    assert learned is not None and learned >= 0.99


def test_conversation_hits_audited_wrong_raise_the_conversation_threshold_only() -> None:
    book = ThresholdBook(CONFIG, lambda: 0.0)
    audited = [Observation(0.95, False, kind=Kind.CONVERSATION) for _ in range(15)]
    unaudited = [Observation(0.95, None, kind=Kind.CONVERSATION) for _ in range(100)]
    move = book.update("ns", collect([*audited, *unaudited], FLOOR), 0.90, Kind.CONVERSATION)
    assert move is not None and move.kind is Kind.CONVERSATION and move.new > 0.95
    assert book.threshold("ns") is None


def test_replicas_with_other_histories_serve_the_same_threshold_on_the_same_evidence() -> None:
    evidence = collect(_slots(100, 0.0), FLOOR)
    early, late = ThresholdBook(CONFIG, lambda: 0.0), ThresholdBook(CONFIG, lambda: 0.0)
    early.update("ns", collect(_slots(30, 0.0, seed=1), FLOOR), 1.0, Kind.SLOT)  # saw part of the evidence before
    early.update("ns", evidence, 1.0, Kind.SLOT)
    late.update("ns", evidence, 1.0, Kind.SLOT)
    assert early.threshold("ns", Kind.SLOT) == late.threshold("ns", Kind.SLOT)
