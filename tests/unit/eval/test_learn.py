"""`eval replay --learn`: the real Cache and Matcher at the default decision learn the namespace's threshold from a
synthetic trace of reworded intents (`support.twins`), deterministically for a seed."""

from __future__ import annotations

import random

import pytest

from eval.datasets import StreamRequest
from eval.learn import LearnConfig, fixed, run_learn
from index.match import live_threshold
from index.match.policy import MatchPolicy
from support.twins import WORDINGS, BagOfWords

POLICY = MatchPolicy(0.92)


def _trace(n: int, seed: int = 5) -> list[StreamRequest]:
    rng = random.Random(seed)
    intents = sorted(WORDINGS)
    out = []
    for seq in range(1, n + 1):
        intent = rng.choice(intents)
        # A varying suffix keeps most prompts new to the exact tier, so the semantic tier decides them.
        suffix = rng.choice(["", "please", "thx", "now", "today", "quickly"])
        out.append(StreamRequest(seq, intent, f"{rng.choice(WORDINGS[intent])} {suffix}".strip()))
    return out


def test_the_halves_split_the_trace_and_their_counts_add_up() -> None:
    report = run_learn("synthetic", _trace(120), BagOfWords(), LearnConfig(POLICY, seed=1))
    assert report.first.requests == report.second.requests == 60
    for half in (report.first, report.second):
        assert half.correct + half.wrong == half.served <= half.requests


def test_one_seed_gives_one_result() -> None:
    config = LearnConfig(POLICY, seed=2, answer_variation=True)
    assert run_learn("synthetic", _trace(200), BagOfWords(), config) == \
        run_learn("synthetic", _trace(200), BagOfWords(), config)


def test_near_misses_are_labelled_and_learning_moves_the_threshold_where_a_fixed_one_stays(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # The wiring, not the default's figures: this small synthetic trace gives 40-50 shadow labels, fewer than a move
    # below the prior needs at the defaults (MIN_LABELS_BELOW_PRIOR, on growth-weighted labels); at 20 it moves.
    monkeypatch.setattr(live_threshold, "MIN_LABELS_BELOW_PRIOR", 20)
    config = LearnConfig(POLICY, seed=3)
    learning = run_learn("synthetic", _trace(400), BagOfWords(), config)
    still = run_learn("synthetic", _trace(400), BagOfWords(), fixed(config, 0.92))
    assert learning.labels.get("shadow", 0) > 0
    assert still.threshold == 0.92 and not still.moves
    assert learning.moves and learning.threshold != 0.92


def test_a_label_model_wrong_one_time_in_ten_is_scored_against_the_truth() -> None:
    report = run_learn("synthetic", _trace(200), BagOfWords(), LearnConfig(POLICY, seed=4, labeller_error=0.1))
    assert report.labeller_accuracy is not None and 0.7 < report.labeller_accuracy < 1.0
    assert report.label_calls > 0
