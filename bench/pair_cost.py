"""What a semantic hit costs in-process, in embeddings, with the pair model on the decision path (issue 18).

Replays a trace's test part through the gateway's own decision (`index.match.decide`, the shipped judge and pair
stage at the defaults; nearest earlier prompts by the default embedder, top K above the candidate floor) and
times, side by side in one run: the query's embedding (which every lookup pays), the judge on the candidates,
and each pair-model read. A semantic hit's cost is its embedding plus its judge and pair-model time, counted in
embeddings of the same run (the judge reuses the cosines the index computed, so it is not charged one). Also
prints how often the pair model ran, per request and per hit. Side by side: the default (no learned veto) and the
learned veto on at the bar it was fitted for.

    .venv/bin/python -m bench.pair_cost [--trace datasets/trace2.jsonl] [--part test] [--limit 400]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from eval.datasets import StreamRequest, load_stream
from index.embedding.embedder import Embedder, make_embedder
from index.judge.model import load_judge
from index.judge.pair_model import load_pair_stage
from index.match.decide import Deciders, decide
from index.match.learned import PairReader
from index.match.outcome import Candidate
from index.match.policy import LEARNED_VETO_BELOW, MatchPolicy
from index.settings import Settings

ROOT = Path(__file__).resolve().parents[1]


class TimedPair:
    """The pair stage with a stopwatch on each read (the seam the decision calls)."""

    def __init__(self, inner: PairReader) -> None:
        self.inner, self.version = inner, inner.version
        self.reads: list[float] = []

    def cut(self, max_false_hit_rate: float) -> float:
        return self.inner.cut(max_false_hit_rate)

    def bounds(self, judge_p: float, cosine: float) -> tuple[float, float]:
        return self.inner.bounds(judge_p, cosine)

    def probabilities(self, pairs: Sequence[tuple[str, str]], judge_p: Sequence[float], cosines: Sequence[float],
                      contexts: Sequence[tuple[str, str] | None] | None = None) -> np.ndarray:
        started = time.perf_counter()
        out = self.inner.probabilities(pairs, judge_p, cosines, contexts)
        self.reads.append((time.perf_counter() - started) * 1000)
        return np.asarray(out)


@dataclass
class Costs:
    """One replay's timings (ms) and counts."""

    embed_ms: list[float] = field(default_factory=list)
    decide_ms: list[float] = field(default_factory=list)
    hit_cost_ms: list[float] = field(default_factory=list)
    hit_reads: int = 0


def replay(requests: Sequence[StreamRequest], embedder: Embedder, policy: MatchPolicy, deciders: Deciders,
           timed: TimedPair) -> Costs:
    """Each request's embedding and decision over the earlier distinct prompts (exact repeats skipped)."""
    costs = Costs()
    prompts: list[str] = []
    vectors: list[np.ndarray] = []
    for request in requests:
        started = time.perf_counter()
        vector = np.asarray(embedder.embed([request.prompt])[0])
        costs.embed_ms.append((time.perf_counter() - started) * 1000)
        if request.prompt in prompts:
            continue  # an exact repeat: the exact tier answers it
        candidates: list[Candidate] = []
        if vectors:
            sims = np.stack(vectors) @ vector
            order = np.argsort(-sims)[: policy.judge_candidates]
            candidates = [Candidate(int(i), prompts[int(i)], float(sims[i])) for i in order
                          if sims[i] >= policy.min_similarity]
        reads_before = len(timed.reads)
        started = time.perf_counter()
        decision = decide(request.prompt, candidates, policy, deciders)
        spent = (time.perf_counter() - started) * 1000
        costs.decide_ms.append(spent)
        if decision.hit:
            costs.hit_reads += len(timed.reads) - reads_before
            costs.hit_cost_ms.append(costs.embed_ms[-1] + spent)
        prompts.append(request.prompt)
        vectors.append(vector)
    return costs


def line(name: str, costs: Costs, reads: Sequence[float]) -> str:
    embed = statistics.median(costs.embed_ms)
    hits = len(costs.hit_cost_ms)
    mean = statistics.fmean(costs.hit_cost_ms) / embed if hits else float("nan")
    p50 = statistics.median(costs.hit_cost_ms) / embed if hits else float("nan")
    return (f"{name:<24}{len(costs.decide_ms):>9}{hits:>6}{len(reads):>12}{costs.hit_reads / max(hits, 1):>10.2f}"
            f"{statistics.median(costs.decide_ms):>14.2f}{mean:>16.2f}{p50:>10.2f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trace", type=Path, default=ROOT / "datasets" / "trace2.jsonl")
    parser.add_argument("--part", default="test")
    parser.add_argument("--limit", type=int, default=400)
    args = parser.parse_args(argv)
    settings = Settings()
    embedder = make_embedder(settings.embedder)
    stage = load_pair_stage()
    if stage is None:
        raise SystemExit("no pair stage shipped (index/data/pair/metadata.json has no combination)")
    stage.warm()
    judge = load_judge(settings.judge_model)
    requests = [r for r in load_stream(args.trace) if not args.part or r.part == args.part][: args.limit]
    policies = {f"default (veto {settings.policy().veto_below:g})": settings.policy(),
                f"veto on (P < {LEARNED_VETO_BELOW:g})": replace(settings.policy(), veto_below=LEARNED_VETO_BELOW)}
    print(f"{args.trace.name} part {args.part or 'all'}; a hit's cost in embeddings of the same run (in-process, "
          "target <= 1.5)")
    print(f"{'decision':<24}{'lookups':>9}{'hits':>6}{'pair reads':>12}{'per hit':>10}{'decide p50 ms':>14}"
          f"{'hit mean ÷ emb':>16}{'p50 ÷ emb':>10}")
    for name, policy in policies.items():
        timed = TimedPair(stage)
        # Exploration off (the default of `Deciders`): every would-be hit is served.
        costs = replay(requests, embedder, policy, Deciders(judge=judge, pair=timed), timed)
        print(line(name, costs, timed.reads))
    print(f"one embedding p50 {statistics.median(costs.embed_ms):.2f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
