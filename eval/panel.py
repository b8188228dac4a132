"""The source panel (`eval panel`): every labelled source replayed through the one decision, side by side with
the baselines, each source and part on its own row.

A trace is replayed through the real cache pipeline (`eval.replay`: a cold cache, the exact tier, the index,
`index.match.decide`); labelled pairs are decided one by one by the same `decide`, the first prompt as the
cached candidate. The default is what `Settings()` builds, so the panel measures what the gateway runs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from eval.embedding import MemoEmbedder, embed_unique
from eval.replay import ReplayConfig, run_replay
from eval.sources import Origin, Source
from eval.sweep import ScoredPair, score_pairs
from eval.vcache import run_vcache
from index.embedding.embedder import Embedder
from index.guards.registry import build_stages
from index.judge.model import Judge, false_hit_upper
from index.match.decide import Deciders, decide
from index.match.learned import PairReader
from index.match.outcome import Candidate
from index.match.policy import LEARNED_VETO_BELOW, DecisionMode, MatchPolicy

DEFAULT = "default"
BASELINE_THRESHOLDS = (0.85, 0.90, 0.95)
# The guarded rule is shown at the default threshold and below it, each with the learned veto on and off, so what
# the veto costs and what it removes can be read per source and per threshold.
VETO_THRESHOLDS = (0.88, 0.85)


@dataclass(frozen=True)
class Contender:
    """One decision the panel runs: the default, a cosine baseline, the judge, or vCache (traces only)."""

    name: str
    policy: MatchPolicy | None
    judge: Judge | None = None
    pair: PairReader | None = None
    vcache_delta: float | None = None


@dataclass(frozen=True)
class Cell:
    """One contender on one source. `served` counts answers from cache (a trace: exact and semantic hits; pairs:
    pairs served); `correct` those right; `base` is what `served_rate` and `correct_rate` divide by (a trace's
    requests; pairs: the same-answer pairs)."""

    contender: str
    served: int
    correct: int
    base: int

    @property
    def wrong(self) -> int:
        return self.served - self.correct

    @property
    def correct_rate(self) -> float | None:
        return self.correct / self.base if self.base else None

    @property
    def wrong_per_served(self) -> float | None:
        return self.wrong / self.served if self.served else None

    @property
    def upper(self) -> float:
        """95% Clopper-Pearson upper bound on wrong / served."""
        return false_hit_upper(self.wrong, self.served)


@dataclass(frozen=True)
class PanelRow:
    """One source and part, every contender's cell, and whether the default holds the source's target."""

    source: str
    origin: str
    part: str
    kind: str
    size: int
    target: float
    note: str
    cells: tuple[Cell, ...]

    def cell(self, contender: str) -> Cell | None:
        return next((c for c in self.cells if c.contender == contender), None)

    @property
    def holds(self) -> bool:
        cell = self.cell(DEFAULT)
        rate = None if cell is None else cell.wrong_per_served
        return rate is None or rate <= self.target


@dataclass(frozen=True)
class PanelReport:
    """The whole panel: rows in source order, the contenders, the default's description, notes."""

    default: str
    contenders: tuple[str, ...]
    rows: tuple[PanelRow, ...]
    notes: tuple[str, ...] = ()

    def worst(self, origin: str | None = None) -> PanelRow | None:
        """The row (of `origin`, or any) where the default's wrong / served stands highest above its target."""
        rows = [r for r in self.rows if (origin is None or r.origin == origin) and r.cell(DEFAULT) is not None]

        def excess(row: PanelRow) -> float:
            cell = row.cell(DEFAULT)
            rate = None if cell is None else cell.wrong_per_served
            return -1.0 if rate is None else rate - row.target

        return max(rows, key=excess, default=None)

    @property
    def real_sources_hold(self) -> bool:
        return all(row.holds for row in self.rows if row.origin == Origin.REAL.value)


VETO_ON, VETO_OFF = " veto on", " veto off"


def veto_name(threshold: float, on: bool) -> str:
    """The column of the guarded rule at `threshold` with the learned veto on or off."""
    return f"guarded {threshold:.2f}{VETO_ON if on else VETO_OFF}"


def veto_columns(default: MatchPolicy, judge: Judge, pair: PairReader | None,
                 veto_below: float) -> list[Contender]:
    """The guarded rule at the default threshold and each of `VETO_THRESHOLDS` below it, with the learned veto
    (judge stacked with the pair model, P below `veto_below`) and without it (no learned score read)."""
    if not default.guarded:
        return []
    thresholds = sorted({round(default.min_similarity, 4), *(t for t in VETO_THRESHOLDS
                                                              if t < default.min_similarity)}, reverse=True)
    out = []
    for t in thresholds:
        vetoed = dataclasses.replace(default.at(t), veto_below=veto_below)
        out.append(Contender(veto_name(t, True), vetoed, judge, pair))
        out.append(Contender(veto_name(t, False), dataclasses.replace(vetoed, veto_below=0.0)))
    return out


def contenders(default: MatchPolicy, judge: Judge, pair: PairReader | None,
               veto_below: float = LEARNED_VETO_BELOW) -> tuple[Contender, ...]:
    """The default; the guarded rule at the default threshold and below, the learned veto (P below
    `veto_below`) on and off; the cosine rule with its rule stages at each baseline threshold (the judge deciding
    alone, retired judge mode, is no longer a contender); and vCache at the default's budget. The default reads
    the judge only where its policy vetoes on it (`veto_below` > 0)."""
    cosine = dataclasses.replace(default, decision=DecisionMode.THRESHOLD, stages=("polarity", "values"))
    learned = default.guarded and default.veto_below > 0.0
    out = [Contender(DEFAULT, default, judge if learned else None, pair if learned else None)]
    out += veto_columns(default, judge, pair, veto_below)
    out += [Contender(f"cosine {t:.2f} + rules", cosine.at(t)) for t in BASELINE_THRESHOLDS]
    out.append(Contender(f"vCache δ={default.max_false_hit_rate:g}", None, vcache_delta=default.max_false_hit_rate))
    return tuple(out)


def run_panel(sources: Sequence[Source], embedder: Embedder, entrants: Sequence[Contender], default_text: str,
              notes: Sequence[str] = (), progress: Callable[[str], None] | None = None) -> PanelReport:
    """Run every contender on every source."""
    rows = []
    for source in sources:
        if progress is not None:
            progress(f"{source.name} ({source.part})")
        rows.append(_row(source, embedder, entrants))
    return PanelReport(default_text, tuple(c.name for c in entrants), tuple(rows), tuple(notes))


def _row(source: Source, embedder: Embedder, entrants: Sequence[Contender]) -> PanelRow:
    if source.trace:
        memo = MemoEmbedder(embedder, embed_unique(embedder, (r.prompt for r in source.requests)))
        cells = tuple(c for c in (_trace_cell(source, memo, e) for e in entrants) if c is not None)
        kind, size = "trace", len(source.requests)
    else:
        scored = score_pairs(source.pairs, embedder)
        cells = tuple(_pairs_cell(scored, e) for e in entrants if e.policy is not None)
        kind, size = "pairs", len(source.pairs)
    return PanelRow(source.name, source.origin.value, source.part, kind, size, source.target, source.note, cells)


def _trace_cell(source: Source, embedder: Embedder, entrant: Contender) -> Cell | None:
    if entrant.vcache_delta is not None:
        row = run_vcache(source.name, source.requests, embedder, (entrant.vcache_delta,)).rows[0]
        return Cell(entrant.name, row.exact_hits + row.semantic_hits, row.correct, len(source.requests))
    assert entrant.policy is not None
    policy = entrant.policy
    config = ReplayConfig((policy.min_similarity,), build_stages(policy.stages), policy=policy, judge=entrant.judge,
                          pair=entrant.pair)
    replayed = run_replay(source.name, source.requests, embedder, config).rows[0]
    return Cell(entrant.name, replayed.exact_hits + replayed.semantic_hits, replayed.correct, replayed.requests)


def _pairs_cell(scored: Sequence[ScoredPair], entrant: Contender) -> Cell:
    assert entrant.policy is not None
    policy = entrant.policy
    deciders = Deciders(build_stages(policy.stages), None, entrant.judge, pair=entrant.pair)
    served = correct = 0
    for index, item in enumerate(scored):
        if item.similarity is None or item.veto is not None:
            continue
        pair = item.pair
        candidate = Candidate(index, pair.a.prompt, item.similarity, item.context_a, item.context_similarity)
        if decide(pair.b.prompt, [candidate], policy, deciders, item.context_b).hit:
            served += 1
            correct += pair.same_answer
    same = sum(1 for item in scored if item.pair.same_answer)
    return Cell(entrant.name, served, correct, same)
