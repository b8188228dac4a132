"""Does the learned veto depend on how full the cache is? (`python -m training.veto_density`)

Scores the same labelled pairs (LangCache and our pairs at cosine >= 0.85) with the shipped judge as a lone
candidate, and as if the cache held near neighbours (rank 0 with a shrinking margin over the next candidate, rank
1 and 2 just below the best), and counts the same-answer pairs the judge alone would veto below 0.6. A veto that
reads rank and margin vetoes more right answers as the cache fills, which is why the guarded rule reads every
candidate as a lone one (`training.judge.learned.learned_probability`).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from eval.embedding import EmbedderName, make_embedder
from eval.sources import langcache, ours
from eval.sweep import score_pairs
from training.judge.features import MISSING, JudgeInput
from training.judge.model import load_judge

ROOT = Path(__file__).resolve().parent.parent
PLACES = ((0, MISSING), (0, 0.10), (0, 0.03), (0, 0.01), (0, 0.0), (1, -0.005), (2, -0.01))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.veto_density", description=__doc__)
    parser.add_argument("--shared", type=Path, default=ROOT.parent / "shared" / "datasets")
    parser.add_argument("--floor", type=float, default=0.85)
    parser.add_argument("--bar", type=float, default=0.6)
    args = parser.parse_args(argv)
    pairs = [p for s in langcache(args.shared, 0) for p in s.pairs]
    pairs += [p for s in ours(ROOT / "datasets", 0) if s.name == "our pairs" for p in s.pairs]
    scored = [s for s in score_pairs(pairs, make_embedder(EmbedderName.MINILM_ONNX))
              if s.similarity is not None and s.similarity >= args.floor and s.context_a is None]
    same = np.array([s.pair.same_answer for s in scored])
    print(f"{len(scored)} pairs at cosine >= {args.floor}, {int(same.sum())} same-answer")
    judge = load_judge()
    for rank, margin in PLACES:
        p = judge.probabilities([JudgeInput(s.pair.b.prompt, s.pair.a.prompt, s.similarity, rank, margin)
                                 for s in scored if s.similarity is not None])
        vetoed = p < args.bar
        print(f"rank {rank}, margin {margin:+.3f}: same-answer vetoed {int((vetoed & same).sum())}, "
              f"different vetoed {int((vetoed & ~same).sum())}, mean P {p.mean():.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
