"""The judge's rule: score a request's top K candidates with the judge and serve the most probable one whose
probability clears the bar that meets the false-hit budget. Called through `index.match.decide`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import numpy.typing as npt

from index.guards.form import same_content
from index.guards.safety import pair_veto
from index.judge.features import MISSING, EntryHistory, JudgeInput
from index.judge.model import check_budget
from index.match.bar import raised
from index.match.outcome import Candidate
from index.match.policy import DEFAULT_JUDGE_CANDIDATES, DEFAULT_MAX_FALSE_HIT_RATE, DEFAULT_PAIR_CANDIDATES
from index.request.keys import DEFAULT_MAX_DECISION_CHARS


class JudgeModel(Protocol):
    """What the decision needs of a judge: P(same answer) per candidate, the bar of a budget, a version.
    `index.judge.model.Judge` is the real one; tests pass fakes through the same seam."""

    @property
    def version(self) -> str: ...

    def probabilities(self, items: Sequence[JudgeInput]) -> npt.NDArray[np.float64]: ...

    def cut(self, max_false_hit_rate: float) -> float: ...


class PairReader(Protocol):
    """The judge's second reader (`index.judge.pair_model.PairStage`): a model that reads both prompts, stacked
    with the judge's P and the cosine into one P(same answer) with its own bar per budget. `bounds` says which
    P the stack can give before the model runs, so it runs only where it can change the decision."""

    @property
    def version(self) -> str: ...

    def cut(self, max_false_hit_rate: float) -> float: ...

    def bounds(self, judge_p: float, cosine: float) -> tuple[float, float]: ...

    def probabilities(self, pairs: Sequence[tuple[str, str]], judge_p: Sequence[float],
                      cosines: Sequence[float],
                      contexts: Sequence[tuple[str, str] | None] | None = None) -> npt.NDArray[np.float64]: ...


@dataclass(frozen=True)
class Judgement:
    """What the judge said about one request: each candidate's P(same answer), the bar, and which one (if any)
    is served. `chosen` indexes `candidates`; None when no candidate clears the bar."""

    candidates: tuple[Candidate, ...]
    probabilities: tuple[float, ...]
    bar: float
    version: str
    max_false_hit_rate: float
    chosen: int | None = None
    best: int | None = None
    # Per candidate, why `index.guards.safety` vetoed it ("" when it did not); a vetoed candidate scores 0.
    vetoes: tuple[str, ...] = ()
    # The served candidate asks the same as the request in other words only (`index.guards.form`): served
    # whatever its probability.
    same_content: bool = False
    # How many candidates the pair model read (0 when the judge's P settled every one).
    pair_read: int = 0

    @property
    def hit(self) -> bool:
        return self.chosen is not None

    @property
    def probability(self) -> float | None:
        """The served candidate's probability, else the best candidate's (None without candidates)."""
        index = self.chosen if self.chosen is not None else self.best
        return None if index is None else self.probabilities[index]


@dataclass(frozen=True)
class JudgeSetup:
    """A judge and the budget it serves at; `candidates` is K, how many neighbours it scores."""

    judge: JudgeModel
    max_false_hit_rate: float = DEFAULT_MAX_FALSE_HIT_RATE
    candidates: int = DEFAULT_JUDGE_CANDIDATES
    histories: Mapping[int, EntryHistory] = field(default_factory=dict)
    max_decision_chars: int = DEFAULT_MAX_DECISION_CHARS
    # Steps the bar is moved from the calibrated cut by the live budget (`index.match.bar`); 0 = the prior.
    bar_level: int = 0
    # The pair model stacked with the judge (None = the judge's P alone) and how many of the most probable
    # undecided candidates it may read per request.
    pair: PairReader | None = None
    pair_candidates: int = DEFAULT_PAIR_CANDIDATES

    def __post_init__(self) -> None:
        check_budget(self.max_false_hit_rate)
        if self.candidates < 1:
            raise ValueError(f"judge candidates must be >= 1, got {self.candidates}")


def margins(similarities: Sequence[float]) -> list[float]:
    """Each candidate's similarity minus the best other candidate's (NaN for a lone candidate)."""
    out: list[float] = []
    for i, s in enumerate(similarities):
        others = [o for j, o in enumerate(similarities) if j != i]
        out.append(s - max(others) if others else MISSING)
    return out


def judge(
    query: str, candidates: Sequence[Candidate], setup: JudgeSetup, query_context: str | None = None,
) -> Judgement:
    """Score the first K candidates (most similar first) and serve the most probable one above the bar.

    A candidate that `index.guards.safety` vetoes (past the length cap, an accent that changes a word) is not
    scored and gets probability 0: it is never served, and its features are never computed."""
    chosen = tuple(candidates[: setup.candidates])
    scorer = setup.pair if setup.pair is not None else setup.judge
    bar = raised(scorer.cut(setup.max_false_hit_rate), setup.bar_level)
    version = setup.judge.version if setup.pair is None else f"{setup.judge.version}+{setup.pair.version}"
    if not chosen:
        return Judgement((), (), bar, version, setup.max_false_hit_rate)
    sims = [c.similarity for c in chosen]
    vetoes = tuple(_veto_reason(query, c, query_context, setup.max_decision_chars) for c in chosen)
    items = [
        JudgeInput(query, c.prompt, c.similarity, rank, margin, query_context, c.context, c.context_similarity,
                   setup.histories.get(c.entry_id, EntryHistory()))
        for rank, (c, margin) in enumerate(zip(chosen, margins(sims), strict=True))
    ]
    scored = [i for i, reason in enumerate(vetoes) if not reason]
    p = np.zeros(len(chosen), dtype=np.float64)
    if scored:
        p[scored] = setup.judge.probabilities([items[i] for i in scored])
    read = 0
    if setup.pair is not None and scored:
        p, read = _stacked(query, query_context, chosen, scored, p, bar, setup.pair, setup.pair_candidates)
    best = int(np.argmax(p))
    probabilities = tuple(float(x) for x in p)
    budget = setup.max_false_hit_rate
    if float(p[best]) >= bar and not vetoes[best]:
        return Judgement(chosen, probabilities, bar, version, budget, best, best, vetoes, pair_read=read)
    # Below the bar, a candidate with the request's own content words in the same order (a plain rewording)
    # still asks the same question; the most probable such one is served (never one `index.guards.safety` vetoes).
    # In a conversation the contexts must be such rewordings of each other too.
    same = [i for i in np.argsort(-p, kind="stable")
            if not vetoes[int(i)] and _same_content(query, query_context, chosen[int(i)])]
    served = int(same[0]) if same else None
    return Judgement(chosen, probabilities, bar, version, budget, served, best, vetoes,
                     same_content=served is not None, pair_read=read)


def _context_pair(query_context: str | None, cached_context: str | None) -> tuple[str, str] | None:
    return None if query_context is None or cached_context is None else (query_context, cached_context)


def _same_content(query: str, query_context: str | None, candidate: Candidate) -> bool:
    if not same_content(query, candidate.prompt):
        return False
    context = _context_pair(query_context, candidate.context)
    if context is None:  # same content only between two single-turn prompts, or two conversations
        return query_context is None and candidate.context is None
    return context[0] == context[1] or same_content(*context)


def _stacked(
    query: str, query_context: str | None, chosen: Sequence[Candidate], scored: Sequence[int],
    judge_p: npt.NDArray[np.float64], bar: float, pair: PairReader, limit: int,
) -> tuple[npt.NDArray[np.float64], int]:
    """Each scored candidate's stacked P. Where the bar lies outside what the stack can give a candidate
    (`PairReader.bounds`), the bound that decides stands in (the lower one for a sure hit, the upper one for a
    sure miss) and the pair model does not run; it reads the `limit` most probable undecided candidates, unless
    a sure hit already settles the request. An undecided candidate it does not read keeps its lower bound.
    In a conversation it reads the two contexts as well, and the less similar pair counts."""
    p = np.zeros(len(chosen), dtype=np.float64)
    undecided: list[int] = []
    for i in scored:
        low, high = pair.bounds(float(judge_p[i]), chosen[i].similarity)
        p[i] = high if high < bar else low
        if low < bar <= high:
            undecided.append(i)
    if not undecided or float(p.max()) >= bar:
        return p, 0
    read = sorted(undecided, key=lambda i: -float(judge_p[i]))[:limit]
    contexts = [_context_pair(query_context, chosen[i].context) for i in read]
    stacked = pair.probabilities([(query, chosen[i].prompt) for i in read], [float(judge_p[i]) for i in read],
                                 [chosen[i].similarity for i in read], contexts)
    p[read] = stacked
    return p, len(read)


def _veto_reason(query: str, candidate: Candidate, query_context: str | None, max_chars: int) -> str:
    found = pair_veto(query, candidate.prompt, query_context, candidate.context, max_chars)
    return "" if found is None else f"{found.stage}: {found.reason}"
