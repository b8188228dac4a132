"""What a semantic hit costs in-process, in embeddings, with the pair model on the decision path (issue 18).

Replays a trace's test part through the gateway's own decision (`index.match.decide`, the shipped judge and pair
stage at the defaults; nearest earlier prompts by the default embedder, top K above the candidate floor) and
times, side by side in one run: the query's embedding (which every lookup pays), the judge on the candidates,
and each pair-model read. A semantic hit's cost is its embedding plus its judge and pair-model time, counted in
embeddings of the same run (the judge reuses the cosines the index computed, so it is not charged one). Also
prints how often the pair model ran, per request and per hit.

    .venv/bin/python -m bench.pair_cost [--trace datasets/trace2.jsonl] [--part test] [--limit 400]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from eval.datasets import load_stream
from index.embedding.embedder import make_embedder
from index.judge.model import load_judge
from index.judge.pair_model import load_pair_stage
from index.match.decide import Deciders, decide
from index.match.learned import PairReader
from index.match.outcome import Candidate
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trace", type=Path, default=ROOT / "datasets" / "trace2.jsonl")
    parser.add_argument("--part", default="test")
    parser.add_argument("--limit", type=int, default=400)
    args = parser.parse_args(argv)
    settings = Settings()
    policy = settings.policy()
    embedder = make_embedder(settings.embedder)
    stage = load_pair_stage()
    if stage is None:
        raise SystemExit("no pair stage shipped (index/data/pair/metadata.json has no combination)")
    stage.warm()
    timed = TimedPair(stage)
    # Exploration off (the default of `Deciders`): every would-be hit is served.
    deciders = Deciders(judge=load_judge(settings.judge_model), pair=timed)
    requests = [r for r in load_stream(args.trace) if not args.part or r.part == args.part][: args.limit]
    prompts: list[str] = []
    vectors: list[np.ndarray] = []
    embed_ms: list[float] = []
    decide_ms: list[float] = []
    hits = hit_reads = 0
    hit_cost_ms: list[float] = []
    for request in requests:
        started = time.perf_counter()
        vector = np.asarray(embedder.embed([request.prompt])[0])
        embed_ms.append((time.perf_counter() - started) * 1000)
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
        decide_ms.append(spent)
        if decision.hit:
            hits += 1
            hit_reads += len(timed.reads) - reads_before
            hit_cost_ms.append(embed_ms[-1] + spent)
        prompts.append(request.prompt)
        vectors.append(vector)
    embed = statistics.median(embed_ms)
    semantic = len(decide_ms)
    read = statistics.median(timed.reads) if timed.reads else 0.0
    print(f"{args.trace.name} part {args.part or 'all'}: {semantic} semantic lookups, {hits} semantic hits; "
          f"pair model read {len(timed.reads)} candidates ({len(timed.reads) / max(semantic, 1):.2f} per lookup, "
          f"{hit_reads / max(hits, 1):.2f} per hit)")
    print(f"one embedding p50 {embed:.2f} ms; decision p50 {statistics.median(decide_ms):.2f} ms; "
          f"one pair-model read p50 {read:.2f} ms = {read / embed:.2f} embeddings")
    if hit_cost_ms:
        mean = statistics.fmean(hit_cost_ms) / embed
        print(f"a semantic hit costs on average {mean:.2f} embeddings in-process (target <= 1.5); "
              f"p50 {statistics.median(hit_cost_ms) / embed:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
