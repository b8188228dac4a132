"""Check a veto stack on the held-out sources (`python -m training.veto_check`): the guarded rule at the default
threshold and below, the learned veto on and off, on every held-out source (real users' first), one row each.

The product no longer runs the learned veto (docs/learned-veto.md); here it runs after the product's decision
(`training.judge.learned.with_veto`), which serves the same answers as the step it was. It reads the judge and the
pair model trained into training/judge/models/ (`python -m training.train_judge`, `python -m
training.train_pair_model`). `--stack judge,pair,cosine,bias` tries a stack without writing it; default: the
trained one. Prints, per source and threshold, correct and wrong ÷ served with the veto and without it, and what
the veto cost in points.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import tempfile
from collections.abc import Sequence
from pathlib import Path

from eval.cli_common import settings_from_env
from eval.embedding import EmbedderName, MemoEmbedder, embed_unique, make_embedder
from eval.panel import Cell, PanelReport, PanelRow
from eval.replay import ReplayConfig, ReplayRow, replay_through
from eval.sources import Source, all_sources
from eval.sweep import score_pairs
from index.cache import Cache, CacheConfig
from index.embedding.embedder import Embedder
from index.guards.registry import build_stages
from index.match.decide import Deciders
from index.match.matcher import Matcher, MatchRequest
from index.match.outcome import Candidate, Decision
from index.match.policy import MatchPolicy
from index.search.hnsw import SemanticIndex
from index.storage.entries import EntryStore, make_engine
from index.storage.exact import LruExactCache
from training.judge.learned import VETO_BELOW, LearnedScores, VetoingMatcher, with_veto
from training.judge.model import load_judge
from training.judge.pair_model import PairStage

ROOT = Path(__file__).resolve().parent.parent
# The held-out parts: test parts, OSSChat (test only) and QQP's both parts (never trained on).
HELD_OUT = ("OSSChat clusters", "QQP pairs", "Redis LangCache", "PAWS-Wiki", "trace2", "stream", "our pairs",
            "minimal pairs")
# The guarded rule at the default threshold and at these below it.
VETO_THRESHOLDS = (0.88, 0.85)
VETO_ON, VETO_OFF = " veto on", " veto off"


def _held_out(source: Source) -> bool:
    if source.name not in HELD_OUT:
        return False
    return source.part == "test" or source.name in ("QQP pairs", "stream")


def stage_with(stack: tuple[float, float, float, float] | None) -> PairStage:
    stage = PairStage()
    if stack is not None:
        judge, pair, cosine, bias = stack
        stage.combination = dataclasses.replace(stage.combination, w_judge=judge, w_pair=pair, w_cosine=cosine,
                                                bias=bias)
    return stage


def veto_name(threshold: float, on: bool) -> str:
    """The column of the guarded rule at `threshold` with the learned veto on or off."""
    return f"guarded {threshold:.2f}{VETO_ON if on else VETO_OFF}"


def thresholds_of(default: MatchPolicy) -> list[float]:
    """The default threshold and each of `VETO_THRESHOLDS` below it, highest first."""
    return sorted({round(default.min_similarity, 4), *(t for t in VETO_THRESHOLDS if t < default.min_similarity)},
                  reverse=True)


def _replayed(source: Source, embedder: Embedder, policy: MatchPolicy, scores: LearnedScores | None) -> ReplayRow:
    """One replay of the trace from a cold cache, with the learned veto when `scores` are given."""
    config = ReplayConfig((policy.min_similarity,), build_stages(policy.stages), policy=policy)
    with tempfile.TemporaryDirectory(prefix="deja-veto-") as tmp:
        engine = make_engine(f"sqlite:///{Path(tmp) / 'entries.db'}")
        try:
            store = EntryStore(engine)
            store.create_schema()
            matcher = None if scores is None else VetoingMatcher(policy, scores, config.deciders())
            cache = Cache(LruExactCache(), store, SemanticIndex(embedder.dim), embedder, CacheConfig(policy),
                          config.deciders(), matcher=matcher)
            row = replay_through(cache, source.requests, config)
        finally:
            engine.dispose()
    return row


def _pair_decision(query: str, candidate: Candidate, context: str | None, matcher: Matcher,
                   scores: LearnedScores | None) -> Decision:
    """One labelled pair decided as the panel does (the first prompt cached, through the product's Matcher), with
    the veto when `scores` are given."""
    def product(some: Sequence[Candidate]) -> Decision:
        return matcher.decide(MatchRequest(query, "eval", context), some)

    return product([candidate]) if scores is None else with_veto(product, query, [candidate], context, scores)


def _cells(source: Source, embedder: Embedder, default: MatchPolicy, scores: LearnedScores) -> tuple[Cell, ...]:
    cells = []
    if source.trace:
        memo = MemoEmbedder(embedder, embed_unique(embedder, (r.prompt for r in source.requests)))
        for t in thresholds_of(default):
            for on in (True, False):
                row = _replayed(source, memo, default.at(t), scores if on else None)
                cells.append(Cell(veto_name(t, on), row.exact_hits + row.semantic_hits, row.correct, row.requests))
        return tuple(cells)
    scored = score_pairs(source.pairs, embedder)
    same = sum(1 for item in scored if item.pair.same_answer)
    for t in thresholds_of(default):
        policy = default.at(t)
        matcher = Matcher(policy, Deciders(build_stages(policy.stages)))
        for on in (True, False):
            served = correct = 0
            for index, item in enumerate(scored):
                if item.similarity is None or item.veto is not None:
                    continue
                pair = item.pair
                candidate = Candidate(index, pair.a.prompt, item.similarity, item.context_a, item.context_similarity)
                if _pair_decision(pair.b.prompt, candidate, item.context_b, matcher,
                                  scores if on else None).hit:
                    served += 1
                    correct += pair.same_answer
            cells.append(Cell(veto_name(t, on), served, correct, same))
    return tuple(cells)


def run(sources: Sequence[Source], embedder: Embedder, default: MatchPolicy, scores: LearnedScores) -> PanelReport:
    """Every source's row: the guarded rule at each threshold, the veto on and off."""
    rows = tuple(PanelRow(s.name, s.origin.value, s.part, "trace" if s.trace else "pairs",
                          len(s.requests) if s.trace else len(s.pairs), s.target, s.note,
                          _cells(s, embedder, default, scores)) for s in sources)
    names = tuple(veto_name(t, on) for t in thresholds_of(default) for on in (True, False))
    return PanelReport(default.describe(), names, rows)


def lines(report: PanelReport, thresholds: list[float]) -> list[str]:
    out = []
    for row in report.rows:
        parts = []
        for t in thresholds:
            on, off = row.cell(veto_name(t, True)), row.cell(veto_name(t, False))
            if on is None or off is None or on.correct_rate is None or off.correct_rate is None:
                continue
            cost = 100 * (off.correct_rate - on.correct_rate)
            parts.append(f"{t:.2f}: on {100 * on.correct_rate:.1f}%/{100 * (on.wrong_per_served or 0):.1f}% "
                         f"off {100 * off.correct_rate:.1f}%/{100 * (off.wrong_per_served or 0):.1f}% "
                         f"cost {cost:+.1f}")
        out.append(f"{row.source} ({row.part}) [{row.origin}] | " + " | ".join(parts))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.veto_check", description=__doc__)
    parser.add_argument("--shared", type=Path, default=ROOT.parent / "shared" / "datasets")
    parser.add_argument("--stack", type=lambda s: tuple(float(v) for v in s.split(",")), default=None)
    parser.add_argument("--veto-below", type=float, default=VETO_BELOW)
    parser.add_argument("--source", action="append", default=None, help="only sources whose name contains this")
    parser.add_argument("--json", type=Path, default=None, help="also write the rows here")
    args = parser.parse_args(argv)
    found, _ = all_sources(args.shared, ROOT / "datasets")
    chosen = [s for s in found if _held_out(s) and (not args.source or any(n in s.name for n in args.source))]
    policy = settings_from_env().policy()
    scores = LearnedScores(load_judge(), stage_with(args.stack), args.veto_below)
    report = run(chosen, make_embedder(EmbedderName.MINILM_ONNX), policy, scores)
    for line in lines(report, thresholds_of(policy)):
        print(line, flush=True)
    if args.json is not None:
        args.json.write_text(json.dumps([dataclasses.asdict(r) for r in report.rows], indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
