"""The vCache baseline: its per-entry threshold maths, and a replay on a tiny trace with a fake embedder."""

from __future__ import annotations

import random
from collections.abc import Sequence

import numpy as np
import pytest

from eval.datasets import StreamRequest
from eval.vcache import (
    MIN_OBSERVATIONS,
    SEPARABLE_VARIANCE,
    Entry,
    ThresholdFit,
    explore_probability,
    fit_threshold,
    replay_vcache,
)


def test_separable_labels_put_the_threshold_between_the_classes_with_the_tabled_variance() -> None:
    sims = [0.0, 1.0, 0.55, 0.6, 0.62, 0.81, 0.85, 0.9]
    labels = [False, True, False, False, False, True, True, True]
    fit = fit_threshold(sims, labels)
    assert 0.62 <= fit.t_hat <= 0.81
    assert fit.gamma > 10
    assert fit.variance == SEPARABLE_VARIANCE[8]


def test_overlapping_labels_use_the_delta_method_variance() -> None:
    sims = [0.0, 1.0, 0.6, 0.7, 0.75, 0.8, 0.82, 0.9, 0.7, 0.85]
    labels = [False, True, False, True, False, True, False, True, False, True]
    fit = fit_threshold(sims, labels)
    assert 0.5 < fit.t_hat < 0.9
    assert fit.variance not in SEPARABLE_VARIANCE.values() and fit.variance > 0


def test_far_above_a_steep_threshold_the_entry_is_served() -> None:
    assert explore_probability(0.99, ThresholdFit(t_hat=0.7, gamma=80.0, variance=0.0001), delta=0.02) <= 0


def test_at_the_threshold_the_request_is_mostly_explored() -> None:
    tau = explore_probability(0.7, ThresholdFit(t_hat=0.7, gamma=80.0, variance=0.0001), delta=0.02)
    # P(correct) is about one half there, so serving would err ~50% of the time: explore with prob ~1 - 2 delta.
    assert 0.9 < tau < 1


@pytest.mark.parametrize("delta", [0.01, 0.05])
def test_exploration_falls_as_similarity_rises(delta: float) -> None:
    fit = ThresholdFit(t_hat=0.75, gamma=30.0, variance=0.002)
    taus = [explore_probability(s, fit, delta) for s in (0.7, 0.8, 0.9, 0.97)]
    assert taus == sorted(taus, reverse=True) and taus[0] > taus[-1]


def test_a_looser_bound_explores_less() -> None:
    fit = ThresholdFit(t_hat=0.75, gamma=30.0, variance=0.002)
    assert explore_probability(0.85, fit, 0.10) < explore_probability(0.85, fit, 0.01)


def test_a_threshold_less_certain_explores_more() -> None:
    sure, unsure = ThresholdFit(0.75, 30.0, 0.0005), ThresholdFit(0.75, 30.0, 0.02)
    assert explore_probability(0.85, unsure, 0.02) > explore_probability(0.85, sure, 0.02)


def test_an_entry_explores_until_it_holds_six_observations() -> None:
    entry = Entry("answer", np.ones(2))
    rng = random.Random(0)
    for _ in range(MIN_OBSERVATIONS - len(entry.observations)):
        assert entry.should_explore(0.999, 0.5, rng)
        entry.observations.append((0.999, True))
    entry.observations += [(0.3, False), (0.35, False)]
    assert not entry.should_explore(0.999, 0.05, rng)


class WordEmbedder:
    """Vectors over a fixed vocabulary: prompts sharing words are close; deterministic."""

    model_id = "words"
    dim = 8
    vocabulary = ("freeze", "thaw", "card", "my", "how", "do", "i", "please")

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        rows = []
        for text in texts:
            words = text.lower().split()
            vector = np.array([words.count(w) for w in self.vocabulary], dtype=np.float32) + 0.01
            rows.append(vector / np.linalg.norm(vector))
        return np.stack(rows)


def _trace(prompts: Sequence[tuple[str, str]]) -> list[StreamRequest]:
    return [StreamRequest(seq, intent, prompt) for seq, (intent, prompt) in enumerate(prompts, 1)]


def test_replay_learns_to_serve_a_recurring_paraphrase_and_counts_every_request() -> None:
    wordings = ["how do i freeze my card", "freeze my card please", "how do i freeze my card please"]
    # A number the embedder ignores makes every prompt new to the exact tier: the semantic tier must do it.
    requests = _trace([("freeze", f"{wordings[i % 3]} {i}") for i in range(40)])
    row = replay_vcache(requests, WordEmbedder(), delta=0.05, seed=1)
    assert row.requests == 40 and row.oracle == 39
    assert row.exact_hits + row.semantic_hits + row.explored + 1 == 40
    assert row.wrong == 0 and row.correct == row.exact_hits + row.semantic_hits
    assert row.exact_hits == 0 and row.semantic_hits >= 20
    assert row.explored >= MIN_OBSERVATIONS - 2  # labels first, hits after


def test_replay_does_not_serve_a_near_twin_it_has_only_seen_as_wrong() -> None:
    requests = _trace([("freeze", "how do i freeze my card"), ("thaw", "how do i thaw my card"),
                       ("thaw", "thaw my card please"), ("freeze", "freeze my card please")])
    row = replay_vcache(requests, WordEmbedder(), delta=0.02, seed=0)
    assert row.wrong == 0 and row.semantic_hits == 0 and row.explored == 3


def test_delta_outside_zero_one_is_refused() -> None:
    with pytest.raises(ValueError, match="delta"):
        replay_vcache(_trace([("a", "x")]), WordEmbedder(), delta=0.0)
