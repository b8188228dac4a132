"""The learned scores the guarded rule reads as its veto (`index.match.steps`, step `learned`): the judge's
calibrated P(same answer) (`index.judge.model`), stacked with the pair model (`index.judge.pair_model`) where the
pair model can move it across the veto's bar. They never serve a candidate; they only veto one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

from index.judge.features import MISSING, EntryHistory, JudgeInput
from index.match.outcome import Candidate


class JudgeModel(Protocol):
    """What the decision needs of a judge: P(same answer) per candidate, the bar of a budget, a version.
    `index.judge.model.Judge` is the real one; tests pass fakes through the same seam."""

    @property
    def version(self) -> str: ...

    def probabilities(self, items: Sequence[JudgeInput]) -> npt.NDArray[np.float64]: ...

    def cut(self, max_false_hit_rate: float) -> float: ...


class PairReader(Protocol):
    """The judge's second reader (`index.judge.pair_model.PairStage`): a model that reads both prompts, stacked
    with the judge's P and the cosine into one P(same answer). `bounds` says which P the stack can give before
    the model runs, so it runs only where it can change the decision."""

    @property
    def version(self) -> str: ...

    def cut(self, max_false_hit_rate: float) -> float: ...

    def bounds(self, judge_p: float, cosine: float) -> tuple[float, float]: ...

    def probabilities(self, pairs: Sequence[tuple[str, str]], judge_p: Sequence[float],
                      cosines: Sequence[float],
                      contexts: Sequence[tuple[str, str] | None] | None = None) -> npt.NDArray[np.float64]: ...


@dataclass(frozen=True)
class LearnedScores:
    """The learned veto's scorers and its bar: a P below `veto_below` vetoes. No judge = no learned veto."""

    judge: JudgeModel | None
    pair: PairReader | None
    veto_below: float
    histories: Mapping[int, EntryHistory] | None = None

    @property
    def version(self) -> str:
        """The scorers' versions as the decision log records them ("cosine" without a judge)."""
        judge = "cosine" if self.judge is None else self.judge.version
        return judge if self.pair is None else f"{judge}+{self.pair.version}"


def margins(similarities: Sequence[float]) -> list[float]:
    """Each candidate's similarity minus the best other candidate's (NaN for a lone candidate)."""
    out: list[float] = []
    for i, s in enumerate(similarities):
        others = [o for j, o in enumerate(similarities) if j != i]
        out.append(s - max(others) if others else MISSING)
    return out


def learned_probability(query: str, candidate: Candidate, rank: int, margin: float,
                        scores: LearnedScores) -> tuple[float | None, bool]:
    """The judge's P, stacked with the pair model's where the pair model can move it across the veto's bar (None
    without a judge, or with no veto: nothing learned is read, nor paid for), and whether the pair model read the
    pair: it never runs when the judge's P settles the veto either way.

    The judge reads every candidate as a lone one (rank 0, no margin; `rank` and `margin` are kept for the caller's
    record): a candidate's rank and its margin over the next move with how full the cache is, and a veto that fires
    on right answers as a cache fills does not carry from one deployment to another (measured in docs/judge.md)."""
    if scores.judge is None or scores.veto_below <= 0.0:
        return None, False
    history = (scores.histories or {}).get(candidate.entry_id, EntryHistory())
    item = JudgeInput(query, candidate.prompt, candidate.similarity, history=history)
    judge_p = float(scores.judge.probabilities([item])[0])
    if scores.pair is None:
        return judge_p, False
    low, high = scores.pair.bounds(judge_p, candidate.similarity)
    if low >= scores.veto_below:
        return low, False
    if high < scores.veto_below:
        return high, False
    stacked = scores.pair.probabilities([(query, candidate.prompt)], [judge_p], [candidate.similarity])
    return float(stacked[0]), True
