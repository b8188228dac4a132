"""ONNX int8 vs torch MiniLM, decision by decision: each labelled pair of the dev sets decided by the default
decision (guarded) and by the cosine rule at its default threshold under
both backends' vectors, side by side in one run, with every pair whose decision flips listed.

    .venv/bin/python -m bench.embedder_decisions [--datasets datasets/pairs-dev.jsonl,datasets/conv-dev.jsonl]

Each comparable pair is offered to the gateway's Matcher as one candidate (multi-turn pairs with their contexts).
`python -m eval replay --stream datasets/trace2.jsonl --part dev --embedder minilm|minilm-onnx` gives the trace
side (README, "Embedder backends").
"""

from __future__ import annotations

import argparse
from pathlib import Path

from eval.datasets import load_pairs
from eval.product import matcher_for
from eval.sweep import ScoredPair, decide_pair, score_pairs
from index.embedding.embedder import Embedder, MiniLMEmbedder, OnnxMiniLMEmbedder
from index.guards.registry import build_stages
from index.match.decide import Deciders
from index.match.policy import DEFAULT_GUARDED_MIN_SIMILARITY, DEFAULT_MIN_SIMILARITY, MatchPolicy

ROOT = Path(__file__).resolve().parents[1]
STAGES = ("polarity", "values")


def decisions(scored: tuple[ScoredPair, ...], deciders: Deciders) -> tuple[list[bool], list[bool]]:
    """(guarded hit, cosine-rule hit at its default threshold, before veto stages) per pair."""
    matcher = matcher_for(MatchPolicy(DEFAULT_GUARDED_MIN_SIMILARITY, stages=STAGES), deciders)
    guarded = []
    for item in scored:
        decision = decide_pair(matcher, item, 0)
        guarded.append(decision is not None and decision.hit)
    cosine = [s.similarity is not None and s.similarity >= DEFAULT_MIN_SIMILARITY for s in scored]
    return guarded, cosine


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", default="datasets/pairs-dev.jsonl,datasets/conv-dev.jsonl")
    args = parser.parse_args()
    deciders = Deciders(build_stages(STAGES))
    models: dict[str, Embedder] = {"torch": MiniLMEmbedder(threads=1), "onnx": OnnxMiniLMEmbedder(threads=1)}
    print(f"{'dataset':<18}{'pairs':>6}  {'rule':<8}{'torch hits':>11}{'wrong':>6}{'onnx hits':>10}{'wrong':>6}"
          f"{'flips':>6}")
    for name in args.datasets.split(","):
        pairs = load_pairs(ROOT / name)
        runs = {label: decisions(score_pairs(pairs, model), deciders) for label, model in models.items()}
        for rule, column in (("guarded", 0), ("cosine", 1)):
            t, o = runs["torch"][column], runs["onnx"][column]
            wrong_t = sum(hit and not pair.same_answer for hit, pair in zip(t, pairs, strict=True))
            wrong_o = sum(hit and not pair.same_answer for hit, pair in zip(o, pairs, strict=True))
            flips = [pair for a, b, pair in zip(t, o, pairs, strict=True) if a != b]
            print(f"{Path(name).name:<18}{len(pairs):>6}  {rule:<8}{sum(t):>11}{wrong_t:>6}{sum(o):>10}{wrong_o:>6}"
                  f"{len(flips):>6}")
            for pair in flips:
                print(f"    flip ({'same' if pair.same_answer else 'different'} answer, {pair.kind}): "
                      f"{pair.a.prompt[:60]!r} / {pair.b.prompt[:60]!r}")
    print(f"guarded: cosine >= {DEFAULT_GUARDED_MIN_SIMILARITY} and its steps; cosine rule: {DEFAULT_MIN_SIMILARITY}")


if __name__ == "__main__":
    main()
