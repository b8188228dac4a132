"""Evaluate the pair model per source beside the judge, fit their combination, and write it to the metadata.

Sources, each reported separately (ROC-AUC; at each scorer's bar: same-answer served, must-not served, and
wrong / served):
- minimal: datasets/minimal-pairs.jsonl, 35 plain rewordings and 30 minimal contrasts (ours, never fitted on);
- pairs: datasets/pairs-dev.jsonl (the judge's calibration groups) by kind, and pairs-test.jsonl;
- conv: conv-dev (judge calibration groups) and conv-test, as the gateway compares them (last message and
  relevant context; the pair model scores both and the lower counts);
- stream, trace2: each request of a trace against its most similar earlier prompt (rank 0, floor 0.5), dev
  part (judge calibration families) and test part, labelled by intent;
- public: held-out pairs of PAWS, CANNOT, Breaking NLI, Redis LangCache (training/pair_data.py's calib split).
Every single-turn pair is scored as a lone candidate (a cold cache: no rank or margin).

The combination is a logistic stack of (logit judge P, logit pair P, cosine) fitted on the calib split of our
own sources; its bar is the lowest whose wrong / served stays within the budget on EACH realistic calib
source (pairs, conv, stream, trace2). Test splits are only reported.

    python -m training.eval_pair_model [--write] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import math
import random
import time
from collections import defaultdict
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from training import judge_data as tv
from training import pair_data
from training import train_judge as tj

ROOT = Path(__file__).resolve().parents[1]

REALISTIC = ("pairs", "conv", "stream", "trace2")
BUDGET = 0.02
BUDGET_GRID = (0.005, 0.01, 0.02, 0.03, 0.05, 0.1, 0.2)  # the bars stored per budget (Combination.cut)
MIN_SERVED = 5  # a source serving fewer than this at a bar cannot show a rate; it does not block the bar
CACHE = Path("/tmp/deja-pair-eval-embeddings-default.npz")


class RuntimeVectors(tj.Vectors):
    """Vectors from the gateway's default embedder (Settings().embedder): the stack and its bars are fitted on
    the cosines and judge inputs the gateway will compute."""

    def need(self, texts: set[str]) -> None:
        todo = sorted(texts - self.known.keys())
        if not todo:
            return
        from index.embedding.embedder import make_embedder
        from index.settings import Settings

        embedder = make_embedder(Settings().embedder)
        for start in range(0, len(todo), 1024):
            chunk = todo[start : start + 1024]
            self.known.update(zip(chunk, embedder.embed(chunk), strict=True))
            tj.progress(f"embedded {min(start + 1024, len(todo))}/{len(todo)} texts")
            self.save()


@dataclass(frozen=True)
class Row:
    item: tj.JudgeInput
    label: int
    source: str
    kind: str
    split: str  # calib (held out from judge and pair model) | test | train (in the judge's training) | public


def _lone(item: tj.JudgeInput) -> tj.JudgeInput:
    return replace(item, rank=0, margin=tj.MISSING)


def pair_rows(inputs: tv.Inputs, vectors: tj.Vectors) -> list[Row]:
    rows: list[Row] = []
    minimal = tv.load_dev(inputs, ROOT / "datasets" / "minimal-pairs.jsonl")
    dev = tv.assign_groups(tv.load_dev(inputs, ROOT / "datasets" / "pairs-dev.jsonl"))
    test = tv.load_dev(inputs, ROOT / "datasets" / "pairs-test.jsonl")
    vectors.need({t for ex in minimal + dev + test for t in (ex.a, ex.b)})
    for examples, source, split_of in ((minimal, "minimal", lambda g: "test"), (dev, "pairs", pair_data.judge_split),
                                       (test, "pairs", lambda g: "test")):
        for ex in examples:
            sim = float(vectors[ex.a] @ vectors[ex.b])
            rows.append(Row(tj.JudgeInput(ex.b, ex.a, sim), ex.label, source, ex.kind, split_of(ex.group)))
    return rows


def conv_rows(inputs: tv.Inputs, vectors: tj.Vectors) -> list[Row]:
    rows: list[Row] = []
    for name, test in (("conv-dev.jsonl", False), ("conv-test.jsonl", True)):
        for r in tj.conversation_rows(inputs, ROOT / "datasets" / name, vectors):
            split = "test" if test else pair_data.judge_split(r.group)
            rows.append(Row(r.item, r.label, "conv", r.kind, split))
    return rows


def trace_rows(inputs: tv.Inputs, vectors: tj.Vectors) -> list[Row]:
    """Each request against its most similar earlier distinct prompt at or above the floor (dev and test parts)."""
    from eval.datasets import load_stream

    rows: list[Row] = []
    for name, intents in (("stream", "intents.json"), ("trace2", "trace2-intents.json")):
        path = ROOT / "datasets" / f"{name}.jsonl"
        inputs.read_bytes(path)
        family = tj.families(ROOT / "datasets" / intents)
        requests = list(load_stream(path))
        vectors.need({r.prompt for r in requests})
        for part in ("dev", "test"):
            seen: dict[str, str] = {}
            for request in (r for r in requests if r.part == part):
                if seen and request.prompt not in seen:
                    prompts = list(seen)
                    sims = np.stack([vectors[p] for p in prompts]) @ vectors[request.prompt]
                    best = int(np.argmax(sims))
                    if sims[best] >= tj.FLOOR:
                        item = tj.JudgeInput(request.prompt, prompts[best], float(sims[best]))
                        group = f"trace:{family.get(request.intent, request.intent)}"
                        split = "test" if part == "test" else pair_data.judge_split(group)
                        rows.append(Row(item, int(seen[prompts[best]] == request.intent), name,
                                        "trace", split))
                seen.setdefault(request.prompt, request.intent)
    return rows


def public_rows(vectors: tj.Vectors, per_source: int) -> list[Row]:
    data = pair_data.build(pair_data.Plan())
    rng = random.Random(pair_data.SEED)
    by_source: dict[str, list[tv.Example]] = defaultdict(list)
    for ex in data.calib:
        if ex.source in ("paws_wiki", "cannot", "breaking_nli", "redis_langcache"):
            by_source[ex.source].append(ex)
    picked = [ex for src in sorted(by_source) for ex in tv._cap(by_source[src], per_source, rng)]
    vectors.need({t for ex in picked for t in (ex.a, ex.b)})
    return [Row(tj.JudgeInput(ex.b, ex.a, float(vectors[ex.a] @ vectors[ex.b])), ex.label, ex.source, ex.kind,
                "public") for ex in picked]


# --------------------------------------------------------------------------- scoring
def pair_scores(model: object, rows: list[Row]) -> np.ndarray:
    """Pair-model P for each row; a conversation counts the lower of its prompts' and its contexts' P."""
    pairs = [(r.item.query, r.item.cached) for r in rows]
    p = model.probabilities(pairs)  # type: ignore[attr-defined]
    ctx = [i for i, r in enumerate(rows) if r.item.query_context and r.item.cached_context]
    if ctx:
        pc = model.probabilities([(rows[i].item.query_context, rows[i].item.cached_context) for i in ctx])  # type: ignore[attr-defined]
        p[ctx] = np.minimum(p[ctx], pc)
    return np.asarray(p)


def fit_stack(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, float]:
    from sklearn.linear_model import LogisticRegression

    lr = LogisticRegression(C=1.0, max_iter=1000).fit(x, y)
    return lr.coef_[0], float(lr.intercept_[0])


def features(judge_p: np.ndarray, pair_p: np.ndarray, cos: np.ndarray) -> np.ndarray:
    """The stack's inputs as `training.judge.pair_model.Combination` computes them (the pair P clipped)."""
    from training.judge.pair_model import PAIR_CLIP

    def logit(p: np.ndarray) -> np.ndarray:
        q = np.clip(p, 1e-4, 1 - 1e-4)
        return np.asarray(np.log(q / (1 - q)))

    return np.column_stack([logit(judge_p), logit(np.clip(pair_p, PAIR_CLIP, 1 - PAIR_CLIP)), cos])


def per_source_bar(p: np.ndarray, y: np.ndarray, sources: np.ndarray, budget: float) -> float:
    """Lowest bar at which wrong / served <= budget on every realistic source (sources serving < MIN_SERVED pass)."""
    for bar in np.unique(np.round(p, 4)):
        ok = True
        for source in REALISTIC:
            m = (sources == source) & (p >= bar)
            if m.sum() >= MIN_SERVED and (y[m] == 0).mean() > budget:
                ok = False
                break
        if ok:
            return float(bar)
    return 1.0


def auc(p: np.ndarray, y: np.ndarray) -> float:
    from sklearn.metrics import roc_auc_score

    return round(float(roc_auc_score(y, p)), 3) if len(set(y.tolist())) == 2 else float("nan")


def rates(p: np.ndarray, y: np.ndarray, bar: float) -> dict[str, float]:
    served = p >= bar
    same, diff = y == 1, y == 0
    return {
        "same_served": round(float(served[same].mean()), 3) if same.any() else float("nan"),
        "diff_served": round(float(served[diff].mean()), 3) if diff.any() else float("nan"),
        "wrong_per_served": round(float((y[served] == 0).mean()), 3) if served.any() else 0.0,
        "n_same": int(same.sum()), "n_diff": int(diff.sum()),
    }


def table(rows: list[Row], scores: dict[str, np.ndarray], bars: dict[str, float]) -> dict[str, object]:
    y = np.array([r.label for r in rows])
    keys: dict[str, np.ndarray] = {}
    for r_source in sorted({(r.source, r.split) for r in rows}):
        keys[f"{r_source[0]}/{r_source[1]}"] = np.array([(r.source, r.split) == r_source for r in rows])
    for split in ("calib", "test"):
        for kind in sorted({r.kind for r in rows if r.source == "pairs"}):
            m = np.array([r.source == "pairs" and r.split == split and r.kind in (kind, "paraphrase") for r in rows])
            keys[f"pairs/{split}/{kind}"] = m
    out: dict[str, object] = {}
    for key, m in keys.items():
        out[key] = {name: {"auc": auc(s[m], y[m]), **rates(s[m], y[m], bars.get(name, 0.5))}
                    for name, s in scores.items()}
    return out


def print_table(results: dict[str, object], names: list[str]) -> None:
    print(f"{'source/split':34} " + " | ".join(f"{n:>26}" for n in names))
    print(f"{'':34} " + " | ".join(f"{'AUC  same  diff  wr/srv':>26}" for _ in names))
    for key, cells in results.items():
        line = []
        for n in names:
            c = cells[n]  # type: ignore[index]
            line.append(f"{c['auc']:5.3f} {c['same_served']:5.2f} {c['diff_served']:5.2f} {c['wrong_per_served']:6.3f}")
        n_same, n_diff = cells[names[0]]["n_same"], cells[names[0]]["n_diff"]  # type: ignore[index]
        print(f"{key + f' ({n_same}/{n_diff})':34} " + " | ".join(f"{x:>26}" for x in line))


def timing(model: object, judge: object, rows: list[Row], n: int = 60) -> dict[str, float]:
    sample = [r for r in rows if r.split == "test"][:n]
    started = time.perf_counter()
    for r in sample:
        model.probabilities([(r.item.query, r.item.cached)])  # type: ignore[attr-defined]
    one = (time.perf_counter() - started) / len(sample) * 1000
    started = time.perf_counter()
    for i in range(0, len(sample), 5):
        model.probabilities([(r.item.query, r.item.cached) for r in sample[i : i + 5]])  # type: ignore[attr-defined]
    five = (time.perf_counter() - started) / len(sample) * 1000
    started = time.perf_counter()
    for r in sample:
        judge.probabilities([_lone(r.item)])  # type: ignore[attr-defined]
    judge_ms = (time.perf_counter() - started) / len(sample) * 1000
    return {"pair_ms_per_pair_alone": round(one, 2), "pair_ms_per_pair_batch5": round(five, 2),
            "judge_ms_per_candidate": round(judge_ms, 3)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", type=Path, default=None,
                        help="pair-model folder (default: training/judge/models/pair)")
    parser.add_argument("--write", action="store_true", help="write the fitted combination into the metadata")
    parser.add_argument("--public-per-source", type=int, default=80)
    parser.add_argument("--trace-per-split", type=int, default=150, help="requests per trace and part (CPU cost)")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--sample", type=int, default=0, help="score only N random rows (a smoke test)")
    args = parser.parse_args(argv)
    import torch

    from training.judge.model import load_judge
    from training.judge.pair_model import METADATA_FILE, PairModel, trained_pair_dir

    torch.set_num_threads(2)
    inputs, vectors = tv.Inputs(), RuntimeVectors(CACHE)
    rng = random.Random(pair_data.SEED)
    traces = trace_rows(inputs, vectors)
    by_part: dict[tuple[str, str], list[Row]] = defaultdict(list)
    for r in traces:
        by_part[(r.source, "test" if r.split == "test" else "dev")].append(r)
    rows = pair_rows(inputs, vectors) + conv_rows(inputs, vectors)
    rows += [r for key in sorted(by_part) for r in tv._cap(by_part[key], args.trace_per_split, rng)]
    rows += public_rows(vectors, args.public_per_source)
    rows = [replace(r, item=_lone(r.item)) if r.source != "conv" else r for r in rows]
    if args.sample:
        rows = random.Random(0).sample(rows, min(args.sample, len(rows)))
    tj.progress(f"{len(rows)} rows; scoring")
    judge, model = load_judge(), PairModel(args.model)
    y = np.array([r.label for r in rows])
    cos = np.array([r.item.similarity for r in rows])
    judge_p = judge.probabilities([r.item for r in rows])
    tj.progress("judge scored")
    pair_p = pair_scores(model, rows)
    tj.progress("scored")
    x = features(judge_p, pair_p, cos)
    own = np.array([r.split == "calib" and r.source in REALISTIC for r in rows])
    sources = np.array([r.source for r in rows])
    w, b = fit_stack(x[own], y[own])
    combo_p = 1 / (1 + np.exp(-(x @ w + b)))
    bars = {"judge": judge.cut(BUDGET),
            "pair": per_source_bar(pair_p[own], y[own], sources[own], BUDGET),
            "combined": per_source_bar(combo_p[own], y[own], sources[own], BUDGET),
            "cosine": per_source_bar(cos[own], y[own], sources[own], BUDGET)}
    scores = {"cosine": cos, "judge": judge_p, "pair": pair_p, "combined": combo_p}
    results = table(rows, scores, bars)
    print_table(results, list(scores))
    cost = timing(model, judge, rows)
    grid = [(budget, per_source_bar(combo_p[own], y[own], sources[own], budget)) for budget in BUDGET_GRID]
    combination = {"weights": {"judge": float(w[0]), "pair": float(w[1]), "cosine": float(w[2])}, "bias": b,
                   "min_probability": round(bars["combined"], 4), "budget": BUDGET,
                   "bars": [[budget, round(bar, 4)] for budget, bar in grid],
                   "bar_rule": f"lowest bar with wrong/served <= {BUDGET} on each of {list(REALISTIC)} (calib split)",
                   "fitted_on": "judge-calibration groups of pairs-dev, conv-dev and the dev parts of stream/trace2",
                   "calib_pairs": int(own.sum())}
    print(json.dumps({"bars": bars, "combination": combination, "cost": cost}, indent=1))
    if args.write:
        folder = args.model or trained_pair_dir()
        meta = json.loads((folder / METADATA_FILE).read_text(encoding="utf-8"))
        meta["combination"] = combination
        meta["evaluation"] = {"bars": bars, "cost": cost, "results": results}
        (folder / METADATA_FILE).write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
    if args.json:
        args.json.write_text(json.dumps({"bars": bars, "results": results, "cost": cost}, indent=1,
                                        default=lambda v: None if isinstance(v, float) and math.isnan(v) else v))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
