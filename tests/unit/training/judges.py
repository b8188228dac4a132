"""Judge and pair-reader fakes through the learned veto's seams (`training.judge.learned.JudgeModel`,
`PairReader`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from training.judge.pair_calibration import Combination


class FixedJudge:
    """A judge fake through the real seam (`training.judge.learned.JudgeModel`): every candidate scores `p` against
    a bar of `bar`, whatever the budget."""

    def __init__(self, p: float, bar: float = 0.90, version: str = "judge-fixed") -> None:
        self.p, self.bar, self.version = p, bar, version

    def cut(self, max_false_hit_rate: float) -> float:
        return self.bar

    def probabilities(self, items: Sequence[object]) -> npt.NDArray[np.float64]:
        return np.full(len(items), self.p)


class FixedPair:
    """A pair-reader fake through the real seam (`training.judge.learned.PairReader`): the real stack
    (`training.judge.pair_calibration.Combination`) over a pair model that gives each cached prompt (or cached
    context) a fixed P (`default` for any other), counting the pairs it reads; a context pair's P lowers its
    prompt's."""

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
