"""Recipe: the learned veto's stack, refitted on real public pairs (`python -m training.veto`).

The learned veto (removed from the product, kept here: `training.judge.learned`) vetoed a candidate above the
cosine threshold when P(same answer) < its bar (0.6), where P is the logistic stack
(`training.judge.pair_calibration.Combination`) of the judge's P, the pair model's P and the cosine.
This recipe refits the stack's four numbers on the pairs of `training.veto_data` whose cosine reaches `--floor`
(the only pairs a veto ever reads), each source weighted alike and ours a minority, with the judge read as for a
lone candidate (rank and margin are not features of the veto: they move with how full the cache is). It prints
the fit, the pairs used and the time it took (`--out FILE` also writes them as JSON). Nothing is written beside
the pair model: the refit did not earn a place (docs/learned-veto.md); to try one, pass its four numbers to
`python -m training.veto_check --stack`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from training.judge.pair_model import PAIR_CLIP
from training.veto_data import TrainingPair, VetoData, held_out, training_pairs

ROOT = Path(__file__).resolve().parent.parent
FLOOR = 0.80
OURS_SHARE = 0.2  # the weight our generated pairs carry in all, at most
Floats = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Scored:
    """The stack's inputs and labels for the pairs at or above the floor, and each pair's source."""

    judge_p: Floats
    pair_p: Floats
    cosine: Floats
    labels: npt.NDArray[np.int8]
    sources: tuple[str, ...]


def _logit(p: Floats) -> Floats:
    q = np.clip(p, 1e-4, 1 - 1e-4)
    return np.asarray(np.log(q / (1 - q)))


def stack_inputs(judge_p: Floats, pair_p: Floats, cosine: Floats) -> Floats:
    """The stack's columns as `Combination.probability` computes them (the pair P clipped as at run time)."""
    return np.column_stack([_logit(judge_p), _logit(np.clip(pair_p, PAIR_CLIP, 1 - PAIR_CLIP)), cosine])


def score(pairs: list[TrainingPair], floor: float) -> Scored:
    """Embed, keep the pairs at or above `floor`, and read the judge (as a lone candidate) and the pair model."""
    from eval.embedding import EmbedderName, make_embedder
    from training.judge.features import JudgeInput
    from training.judge.model import load_judge
    from training.judge.pair_model import PairModel

    texts = sorted({t for p in pairs for t in (p.cached, p.query)})
    vectors = make_embedder(EmbedderName.MINILM_ONNX).embed(texts)
    row = {t: i for i, t in enumerate(texts)}
    cos = np.array([float(vectors[row[p.cached]] @ vectors[row[p.query]]) for p in pairs])
    kept = [i for i, c in enumerate(cos) if c >= floor]
    chosen = [pairs[i] for i in kept]
    judge = load_judge()
    judge_p = judge.probabilities([JudgeInput(p.query, p.cached, float(cos[i])) for i, p in zip(kept, chosen,
                                                                                             strict=True)])
    pair_p = PairModel().probabilities([(p.query, p.cached) for p in chosen])
    labels = np.array([int(p.same_answer) for p in chosen], dtype=np.int8)
    return Scored(judge_p, pair_p, cos[kept], labels, tuple(p.source for p in chosen))


def weights(sources: tuple[str, ...]) -> Floats:
    """Each source weighs alike, our generated pairs at most `OURS_SHARE` of the total."""
    names = sorted(set(sources))
    ours = [n for n in names if n.startswith("our ")]
    share = {n: (OURS_SHARE / len(ours) if n in ours else (1 - OURS_SHARE * bool(ours)) / (len(names) - len(ours)))
             for n in names}
    counts = {n: sources.count(n) for n in names}
    w = np.array([share[s] / counts[s] for s in sources]) * len(sources)
    return np.asarray(w, dtype=np.float64)


def fit(scored: Scored, use_pair: bool = True) -> dict[str, float]:
    """The stack's weights and bias (logistic regression, source-balanced); without the pair model its weight is 0."""
    from sklearn.linear_model import LogisticRegression

    x = stack_inputs(scored.judge_p, scored.pair_p, scored.cosine)
    if not use_pair:
        x[:, 1] = 0.0
    model = LogisticRegression(C=1.0, max_iter=1000).fit(x, scored.labels, sample_weight=weights(scored.sources))
    coef = model.coef_[0]
    return {"judge": float(coef[0]), "pair": float(coef[1]) if use_pair else 0.0, "cosine": float(coef[2]),
            "bias": float(model.intercept_[0])}


def summary(scored: Scored) -> dict[str, dict[str, int]]:
    """Pairs at or above the floor per source: how many, how many same-answer."""
    out: dict[str, dict[str, int]] = {}
    for source in sorted(set(scored.sources)):
        mask = np.array([s == source for s in scored.sources])
        out[source] = {"pairs": int(mask.sum()), "same_answer": int(scored.labels[mask].sum())}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.veto", description=__doc__)
    parser.add_argument("--shared", type=Path, default=ROOT.parent / "shared" / "datasets")
    parser.add_argument("--datasets", type=Path, default=ROOT / "datasets")
    parser.add_argument("--paws", type=int, default=2000, help="PAWS-Wiki dev pairs sampled (0 = none)")
    parser.add_argument("--ours", type=int, default=300, help="our generated pairs sampled (0 = none)")
    parser.add_argument("--floor", type=float, default=FLOOR, help="cosine a pair needs to be fitted on")
    parser.add_argument("--no-pair", action="store_true", help="fit the stack without the pair model")
    parser.add_argument("--out", type=Path, default=None, help="also write the fit record here (JSON)")
    args = parser.parse_args(argv)
    start = time.monotonic()
    pairs = [p for p in training_pairs(VetoData(args.shared, args.datasets, args.paws, args.ours)) if not held_out(p)]
    scored = score(pairs, args.floor)
    stack = fit(scored, use_pair=not args.no_pair)
    record = {"stack": stack, "floor": args.floor, "pairs": summary(scored), "pairs_read": len(pairs),
              "seconds": round(time.monotonic() - start, 1), "command": "python -m training.veto " + " ".join(
                  argv if argv is not None else sys.argv[1:])}
    text = json.dumps(record, indent=1)
    print(text)
    if args.out is not None:
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
