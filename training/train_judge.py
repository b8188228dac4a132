"""Train the judge prior into training/judge/models/judge/ (docs/learned-veto.md: the product no longer ships it).

Labelled pairs come from our dev splits (`datasets/pairs-dev.jsonl`, `datasets/conv-dev.jsonl`), licence-cleared
public sets read at run time from ../shared/datasets (never copied into the repo) and hard pairs generated
from them (antonym, negation, number and entity edits; the loaders of training/judge_data.py). Each pair
becomes a `JudgeInput` as the gateway would build it: MiniLM cosine of the prompts (and, for conversations,
of the relevant contexts), and a rank and margin among the other cached prompts of the same source. Pairs are
split by connected group into train / calibration; the calibration pairs the judge would see (cosine at or
above the candidate floor) are kept beside the model for `Judge.cut`.

    nice -n 10 python -m training.train_judge         # ~10 min on 2 shared cores (embeddings cached in /tmp)

Test splits (pairs-test, conv-test) and the stream trace are never read here.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from eval.datasets import load_pairs
from eval.sweep import comparable_keys
from index.request.keys import ContextMatch
from training import judge_data as tv
from training.judge.features import FEATURE_NAMES, MISSING, JudgeInput, feature_matrix
from training.judge.fit import TrainingPlan, calibrate, train
from training.judge.model import (
    CONFIDENCE,
    Calibration,
    Judge,
    false_hit_upper,
    save_judge,
    trained_judge_dir,
    version_of,
)

ROOT = Path(__file__).resolve().parents[1]

SEED = 20261201
PAIRS_DEV = ROOT / "datasets" / "pairs-dev.jsonl"
CONV_DEV = ROOT / "datasets" / "conv-dev.jsonl"
CACHE = Path("/tmp/deja-judge-embeddings.npz")
TRACES = [ROOT / "datasets" / "stream.jsonl", ROOT / "datasets" / "trace2.jsonl"]
# Candidates below this cosine never reach the judge (the default candidate floor in judge mode).
FLOOR = 0.5
POOL = 3000
LONE_SHARE = 0.3
MAX_RANK = 5  # the judge never sees a deeper candidate (DEJA_JUDGE_CANDIDATES)
# Sets read, with the licence each source states. Left out: SICK (CC BY-NC-SA), negation_minpairs (XNLI,
# CC BY-NC), STS-B (research parts), osschat clusters (no licence), and the QQP-derived sets (CheckList QQP,
# GPTCache QQP): Quora released QQP for non-commercial use.
LICENSES = {
    "dev": "ours, MIT (datasets/pairs-dev.jsonl, written by the Deja team)",
    "conv": "ours, MIT (datasets/conv-dev.jsonl, written by the Deja team)",
    "trace": "ours, MIT (dev parts of datasets/stream.jsonl and datasets/trace2.jsonl, written by the Deja team)",
    # The public sets both scripts read, with the licences judge_data.py states for them.
    **{name: tv.LICENSES[name] for name in ("gptcache_mock", "paws_wiki", "cannot", "breaking_nli",
                                            "redis_langcache", "cai_equivalence", "synthetic")},
}
# Our own data speaks for the traffic the judge will see; public sets are many but of another style.
WEIGHTS = {"dev": 4.0, "conv": 4.0, "trace": 4.0}
# Our own held-out pairs (written as traffic is: chat prompts, search-style queries, twins) set the budget cut;
# the probability map is fitted on every held-out pair.
OWN = frozenset({"dev", "conv", "trace"})


@dataclass(frozen=True)
class Row:
    """One labelled candidate: the judge's input, its label, where it came from and its split group."""

    item: JudgeInput
    label: int
    source: str
    kind: str
    group: str


def progress(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


class Vectors:
    """MiniLM vectors of texts, cached on disk between runs (embedding is the slow part)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.known: dict[str, np.ndarray] = {}
        if path.exists():
            data = np.load(path, allow_pickle=False)
            self.known = dict(zip(data["texts"].tolist(), data["vectors"], strict=True))
        self._embedder: object | None = None

    def need(self, texts: set[str]) -> None:
        todo = sorted(texts - self.known.keys())
        if not todo:
            return
        from index.embedding.embedder import MiniLMEmbedder

        embedder = MiniLMEmbedder()
        for start in range(0, len(todo), 1024):
            chunk = todo[start : start + 1024]
            self.known.update(zip(chunk, embedder.embed(chunk), strict=True))
            progress(f"embedded {min(start + 1024, len(todo))}/{len(todo)} texts")
            self.save()

    def save(self) -> None:
        texts = list(self.known)
        np.savez(self.path, texts=np.array(texts), vectors=np.stack([self.known[t] for t in texts]))

    def __getitem__(self, text: str) -> np.ndarray:
        return self.known[text or " "]


def gptcache_mock(inputs: tv.Inputs) -> list[tv.Example]:
    """GPTCache's LLM-paraphrased pairs (positives only); its QQP file is not read."""
    mock = json.loads(inputs.read_text(tv.SHARED / "gptcache_similar_qqp" / "mock_data.json"))
    return [ex for rec in mock if (ex := tv.make_pair(rec["origin"], rec["similar"], 1, "gptcache_mock", "paraphrase"))]


def public_examples(inputs: tv.Inputs, rng: random.Random, args: argparse.Namespace) -> list[tv.Example]:
    rows = tv.load_dev(inputs, args.dev) + gptcache_mock(inputs)
    rows += tv.load_paws(inputs, rng, args.paws)
    rows += tv.load_cannot(inputs, rng, args.cannot)
    rows += tv.load_breaking_nli(inputs, rng, args.breaking)
    rows += tv.load_small_sets(inputs)
    return [ex for ex in rows if ex.source in LICENSES]


def single_turn(examples: list[tv.Example], lex: tv.Lexicon, rng: random.Random, bases: int) -> list[tv.Example]:
    grouped = tv.assign_groups(examples)
    return grouped + tv.generate(tv.generation_bases(grouped, rng, bases), lex, rng)


def _rank_margin(query: np.ndarray, cached: str, pool: list[str], matrix: np.ndarray,
                 vectors: Vectors, query_text: str) -> tuple[int, float]:
    """Rank of `cached` among the pool for this query, and its margin over the best other pool prompt."""
    sims = matrix @ query
    own = float(vectors[cached] @ query)
    others = np.array([s for text, s in zip(pool, sims, strict=True) if text not in (cached, query_text)])
    if others.size == 0:
        return 0, MISSING
    return int((others > own).sum()), own - float(others.max())


def single_rows(examples: list[tv.Example], vectors: Vectors, rng: random.Random) -> list[Row]:
    """Each pair as (query = b, cached = a), with rank and margin among its source's cached prompts."""
    by_source: dict[str, list[tv.Example]] = defaultdict(list)
    for ex in examples:
        by_source[ex.source].append(ex)
    rows: list[Row] = []
    for source, group in sorted(by_source.items()):
        cached = sorted({ex.a for ex in group})
        pool = cached if len(cached) <= POOL else rng.sample(cached, POOL)
        matrix = np.stack([vectors[t] for t in pool])
        for ex in group:
            q = vectors[ex.b]
            similarity = float(vectors[ex.a] @ q)
            rank, margin = _rank_margin(q, ex.a, pool, matrix, vectors, ex.b)
            if rng.random() < LONE_SHARE:  # as if the only candidate above the floor (and as a pair sweep sees it)
                rank, margin = 0, MISSING
            item = JudgeInput(ex.b, ex.a, similarity, min(rank, MAX_RANK), margin)
            rows.append(Row(item, ex.label, source, ex.kind, ex.group or f"{source}:{ex.a}"))
    return rows


def conversation_rows(inputs: tv.Inputs, path: Path, vectors: Vectors) -> list[Row]:
    """conv-dev pairs as the gateway's semantic tier compares them (last message + relevant context)."""
    inputs.read_bytes(path)
    rows: list[Row] = []
    keyed = [(pair, comparable_keys(pair, ContextMatch.SEMANTIC)) for pair in load_pairs(path)]
    vectors.need({t or " " for _, keys in keyed if keys for k in keys for t in (k.prompt, k.context_text or "")})
    for pair, keys in keyed:
        if keys is None:
            continue  # the gateway finds no candidate (another system prompt, tools): nothing to judge
        a, b = keys
        similarity = float(vectors[a.prompt] @ vectors[b.prompt])
        context_similarity = None
        if a.context_text is not None and b.context_text is not None:
            context_similarity = float(vectors[a.context_text] @ vectors[b.context_text])
        item = JudgeInput(b.prompt, a.prompt, similarity, 0, MISSING, b.context_text, a.context_text,
                          context_similarity)
        rows.append(Row(item, int(pair.same_answer), "conv", pair.kind, f"conv:{pair.id}"))
    return rows


def families(intents: Path) -> dict[str, str]:
    """Intent -> its family (near-twin intents share one), so twins fall in one split."""
    records = json.loads(intents.read_text())
    return {rec["id"]: rec.get("family") or min(rec["id"], rec.get("twin_of") or rec["id"]) for rec in records}


def trace_rows(inputs: tv.Inputs, path: Path, vectors: Vectors, family: dict[str, str], k: int = 5) -> list[Row]:
    """The dev part of a replay trace as a gateway meets it: each request against the top K earlier distinct
    prompts at or above the floor (ranks and margins as `training.judge.learned` computes them), labelled by intent.
    Test parts are never read (their intents are disjoint: the traces split by intent family)."""
    from eval.datasets import load_stream
    from training.judge.learned import margins

    inputs.read_bytes(path)
    requests = [r for r in load_stream(path) if r.part == "dev"]
    vectors.need({r.prompt for r in requests})
    seen: list[tuple[str, str]] = []  # (prompt, intent) of earlier distinct prompts
    rows: list[Row] = []
    for request in requests:
        if seen and request.prompt not in {p for p, _ in seen}:
            matrix = np.stack([vectors[p] for p, _ in seen])
            sims = matrix @ vectors[request.prompt]
            top = [int(i) for i in np.argsort(-sims)[:k] if sims[i] >= FLOOR]
            for rank, (i, margin) in enumerate(zip(top, margins([float(sims[i]) for i in top]), strict=True)):
                prompt, intent = seen[i]
                item = JudgeInput(request.prompt, prompt, float(sims[i]), rank, margin)
                rows.append(Row(item, int(intent == request.intent), "trace", "trace",
                                f"trace:{family.get(request.intent, request.intent)}"))
        if request.prompt not in {p for p, _ in seen}:
            seen.append((request.prompt, request.intent))
    return rows


def intent_rows(inputs: tv.Inputs, trace: Path, intents: Path, vectors: Vectors, k: int = 5) -> list[Row]:
    """Every wording of the trace's dev intents against its K nearest wordings of other dev intents' and its own
    (as if all were cached), labelled by intent: paraphrases of many styles and near-twin intents."""
    from eval.datasets import load_stream
    from training.judge.learned import margins

    inputs.read_bytes(intents)
    dev = {r.intent for r in load_stream(trace) if r.part == "dev"}
    records = [rec for rec in json.loads(intents.read_text()) if rec["id"] in dev]
    family = families(intents)
    texts = [(w, rec["id"]) for rec in records for w in dict.fromkeys(rec["wordings"])]
    vectors.need({w for w, _ in texts})
    matrix = np.stack([vectors[w] for w, _ in texts])
    rows: list[Row] = []
    for i, (wording, intent) in enumerate(texts):
        sims = matrix @ vectors[wording]
        sims[i] = -2.0
        top = [int(j) for j in np.argsort(-sims)[:k] if sims[j] >= FLOOR and texts[j][0] != wording]
        for rank, (j, margin) in enumerate(zip(top, margins([float(sims[j]) for j in top]), strict=True)):
            item = JudgeInput(wording, texts[j][0], float(sims[j]), rank, margin)
            rows.append(Row(item, int(texts[j][1] == intent), "trace", "intents", f"trace:{family[intent]}"))
    return rows


def split_of(row: Row) -> str:
    """train / calib by a hash of the row's group; our own data gives half to calibration (it sets the cut)."""
    h = int(hashlib.sha256(f"{SEED}:{row.group}".encode()).hexdigest()[:12], 16) / 16**12
    return "train" if h < (0.5 if row.source in OWN else 0.75) else "calib"


def auc(p: np.ndarray, y: np.ndarray) -> float:
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(y, p)) if len(set(y.tolist())) == 2 else float("nan")


def own_cut(judge: Judge, own: np.ndarray) -> Judge:
    """Keep only our own held-out pairs as the calibration data behind `Judge.cut`."""
    cal = judge.calibration
    assert cal.features is not None
    judge.calibration = Calibration(cal.probabilities[own], cal.labels[own], cal.confidence, cal.features[own])
    judge.metadata["calibration_pairs"] = int(own.sum())
    judge.metadata["calibration_sources"] = sorted(OWN)
    judge.version = version_of(judge)
    return judge


def report(judge: Judge, calib: list[Row], x: np.ndarray) -> dict[str, object]:
    """Calibration-split numbers: AUC of cosine and judge, and what each budget's cut serves."""
    y = np.array([r.label for r in calib])
    p = judge.probabilities_of(x)
    cos = np.array([r.item.similarity for r in calib])
    gated = cos >= FLOOR
    out: dict[str, object] = {"auc_cosine": auc(cos, y), "auc_judge": auc(p, y),
                              "auc_judge_gated": auc(p[gated], y[gated]), "budgets": {}}
    for budget in (0.01, 0.02, 0.05):
        bar = judge.cut(budget)
        served, wrong = judge.calibration.served_at(bar)
        same = int(judge.calibration.labels.sum())
        out["budgets"][str(budget)] = {  # type: ignore[index]
            "bar": bar, "served": served, "false_hits": wrong, "same_served": (served - wrong) / max(same, 1),
            "upper": false_hit_upper(wrong, served, CONFIDENCE),
        }
    by_source: dict[str, dict[str, float]] = {}
    bar = judge.cut(0.02)
    for source in sorted({r.source for r in calib}):
        m = np.array([r.source == source for r in calib]) & gated
        same, diff = m & (y == 1), m & (y == 0)
        by_source[source] = {"same_served": float((p[same] >= bar).mean()) if same.any() else float("nan"),
                             "false_served": float((p[diff] >= bar).mean()) if diff.any() else float("nan"),
                             "pairs": int(m.sum())}
    out["by_source_at_0.02"] = by_source
    return out


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=trained_judge_dir())
    parser.add_argument("--dev", type=Path, default=PAIRS_DEV)
    parser.add_argument("--conv", type=Path, default=CONV_DEV)
    parser.add_argument("--paws", type=int, default=3000)
    parser.add_argument("--cannot", type=int, default=2500)
    parser.add_argument("--breaking", type=int, default=1500)
    parser.add_argument("--generate-bases", type=int, default=1500)
    parser.add_argument("--cache", type=Path, default=CACHE, help="embedding cache file")
    parser.add_argument("--own-cut", action="store_true", help="set the cut on our own held-out pairs only")
    parser.add_argument("--traces", type=Path, nargs="*", default=TRACES, help="traces whose dev part is used")
    return parser.parse_args(argv)


def build_rows(args: argparse.Namespace, inputs: tv.Inputs, vectors: Vectors) -> list[Row]:
    rng = random.Random(SEED)
    from transformers import AutoTokenizer

    from index.embedding.embedder import bundled_model_path

    vocab = set(AutoTokenizer.from_pretrained(str(bundled_model_path())).get_vocab())
    lex = tv.load_lexicon(inputs, vocab)
    examples = single_turn(public_examples(inputs, rng, args), lex, rng, args.generate_bases)
    vectors.need({t for ex in examples for t in (ex.a, ex.b)})
    rows = single_rows(examples, vectors, rng) + conversation_rows(inputs, args.conv, vectors)
    for trace in args.traces:
        intents = trace.with_name("intents.json" if trace.name == "stream.jsonl" else f"{trace.stem}-intents.json")
        rows += trace_rows(inputs, trace, vectors, families(intents))
        rows += intent_rows(inputs, trace, intents, vectors)
    return rows


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.time()
    inputs = tv.Inputs()
    vectors = Vectors(args.cache)
    rows = build_rows(args, inputs, vectors)
    parts: dict[str, list[Row]] = {"train": [], "calib": []}
    for row in rows:
        parts[split_of(row)].append(row)
    progress(f"{len(parts['train'])} train / {len(parts['calib'])} calibration pairs; computing features")
    x_train = feature_matrix([r.item for r in parts["train"]])
    y_train = np.array([r.label for r in parts["train"]], dtype=np.int8)
    w_train = np.array([WEIGHTS.get(r.source, 1.0) for r in parts["train"]])
    calib_all = parts["calib"]
    x_calib_all = feature_matrix([r.item for r in calib_all])
    forest = train(x_train, y_train, w_train, SEED, TrainingPlan())
    gated = np.array([r.item.similarity >= FLOOR for r in calib_all])
    calib = [r for r, g in zip(calib_all, gated, strict=True) if g]
    y_calib = np.array([r.label for r in calib], dtype=np.int8)
    counts = Counter((r.source, split, r.label) for split, part in parts.items() for r in part)
    table = {s: {f"{sp}_{'same' if lab else 'diff'}": n for (src, sp, lab), n in sorted(counts.items()) if src == s}
             for s in sorted({r.source for r in rows})}
    meta = {
        "command": "python -m training.train_judge " + " ".join(argv if argv is not None else sys.argv[1:]),
        "seed": SEED, "candidate_floor": FLOOR, "confidence": CONFIDENCE, "features": list(FEATURE_NAMES),
        "plan": TrainingPlan().__dict__, "weights": WEIGHTS, "versions": tv.versions(),
        "data": {"files": {tv.relative(k): v for k, v in sorted(inputs.hashes.items())},
                 "licenses": {k: v for k, v in LICENSES.items() if k in table}, "pairs": table},
        "calibration_pairs": len(calib),
    }
    judge = calibrate(forest, x_calib_all[gated], y_calib, metadata=meta)
    if args.own_cut:
        judge = own_cut(judge, np.array([r.source in OWN for r in calib]))
    judge.metadata["metrics"] = report(judge, calib_all, x_calib_all)
    judge.metadata["train_seconds"] = round(time.time() - started, 1)
    print(json.dumps(judge.metadata["metrics"], indent=1))
    save_judge(judge, args.out)
    progress(f"saved {judge.version} to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
