"""Near-twin intents, a bag-of-words embedder for them and a small judge fitted on them in a fraction of a
second, for tests that need a prior to serve and to refit on top of without paying for the shipped one."""

from __future__ import annotations

import random
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from index.judge.features import JudgeInput, feature_matrix
from index.judge.fit import TrainingPlan, calibrate, held_out, train
from index.judge.model import Judge
from index.judge.pair_calibration import Combination

# Near-twin intents: each pair shares most words and needs another answer.
WORDINGS = {
    "freeze_card": ["how do i freeze my debit card", "freeze debit card in the app", "lock my debit card for now"],
    "unfreeze_card": ["how do i unfreeze my debit card", "unfreeze debit card in the app", "unlock my debit card"],
    "sort_oldest": ["sort my files oldest first", "order files by date oldest first", "oldest files at the top"],
    "sort_newest": ["sort my files newest first", "order files by date newest first", "newest files at the top"],
    "tip_18": ["what is an 18 percent tip on 85 dollars", "18 percent tip on 85", "tip 18 percent of 85 dollars"],
    "tip_20": ["what is a 20 percent tip on 85 dollars", "20 percent tip on 85", "tip 20 percent of 85 dollars"],
}
SUFFIXES = ("", "please", "thx")
# Few, small trees: the judge only has to tell these intents apart, and a test session fits it once.
SMALL_PLAN = TrainingPlan(max_iter=20, min_samples_leaf=10)


class BagOfWords:
    """Deterministic unit vectors from word counts (hashed into 64 buckets); shared words mean high cosine."""

    model_id = "bag-of-words"
    dim = 64

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        rows = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in text.lower().split():
                rows[row, sum(map(ord, word)) % self.dim] += 1.0
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def twin_pairs(n: int, seed: int) -> tuple[list[JudgeInput], list[bool]]:
    """`n` (request, cached) pairs, about half of one intent (True) and half of its twin (False)."""
    rng = random.Random(seed)
    intents = sorted(WORDINGS)
    twin = {a: b for a, b in zip(intents[::2], intents[1::2], strict=True)}
    twin |= {b: a for a, b in twin.items()}
    embedder = BagOfWords()
    items, labels = [], []
    for _ in range(n):
        intent = rng.choice(intents)
        same = rng.random() < 0.5
        query, cached = (f"{rng.choice(WORDINGS[name])} {rng.choice(SUFFIXES)}".strip()
                         for name in (intent, intent if same else twin[intent]))
        vectors = embedder.embed([query, cached])
        items.append(JudgeInput(query, cached, float(vectors[0] @ vectors[1])))
        labels.append(same)
    return items, labels


def small_judge(pairs: int = 1200, seed: int = 0) -> Judge:
    """A judge without a prior, trained on half of `twin_pairs` and calibrated on the other half (enough
    held-out pairs for a 2% false-hit budget to have a cut)."""
    items, labels = twin_pairs(pairs, seed)
    x = feature_matrix(items)
    y = np.asarray(labels, dtype=np.int8)
    held = held_out(y, 0.5, seed)
    forest = train(x[~held], y[~held], None, seed, SMALL_PLAN)
    return calibrate(forest, x[held], y[held], None, {"test_judge": "support.judges.small_judge", "seed": seed})


class FixedJudge:
    """A judge fake through the real seam (`index.match.learned.JudgeModel`): every candidate scores `p` against
    a bar of `bar`, whatever the budget."""

    def __init__(self, p: float, bar: float = 0.90, version: str = "judge-fixed") -> None:
        self.p, self.bar, self.version = p, bar, version

    def cut(self, max_false_hit_rate: float) -> float:
        return self.bar

    def probabilities(self, items: Sequence[object]) -> npt.NDArray[np.float64]:
        return np.full(len(items), self.p)


class FixedPair:
    """A pair-reader fake through the real seam (`index.match.learned.PairReader`): the real stack
    (`index.judge.pair_model.Combination`) over a pair model that gives each cached prompt (or cached context) a
    fixed P (`default` for any other), counting the pairs it reads; a context pair's P lowers its prompt's."""

    def __init__(self, combination: Combination, pair_p: dict[str, float], default: float = 0.5,
                 pair_range: tuple[float, float] = (0.02, 0.98), version: str = "pair-fixed") -> None:
        self.combination, self.pair_p, self.default = combination, pair_p, default
        self.pair_range, self.version = pair_range, version
        self.read: list[tuple[str, str]] = []
        self.contexts_read: list[tuple[str, str]] = []

    def cut(self, max_false_hit_rate: float) -> float:
        return self.combination.cut(max_false_hit_rate)

    def bounds(self, judge_p: float, cosine: float) -> tuple[float, float]:
        return self.combination.bounds(judge_p, cosine, self.pair_range)

    def probabilities(self, pairs: Sequence[tuple[str, str]], judge_p: Sequence[float], cosines: Sequence[float],
                      contexts: Sequence[tuple[str, str] | None] | None = None) -> npt.NDArray[np.float64]:
        self.read += list(pairs)
        self.contexts_read += [c for c in contexts or () if c is not None]
        low, high = self.pair_range
        out = []
        for i, ((_, b), j, c) in enumerate(zip(pairs, judge_p, cosines, strict=True)):
            q = self.pair_p.get(b, self.default)
            context = None if contexts is None else contexts[i]
            if context is not None:
                q = min(q, self.pair_p.get(context[1], self.default))
            out.append(self.combination.probability(j, min(max(q, low), high), c))
        return np.array(out, dtype=np.float64)
