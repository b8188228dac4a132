"""Veto rates of the rule stages on public labelled pairs (../shared/datasets), paraphrases vs negatives.

    python -m training.data.measure_guards_public [--root ../shared/datasets] [--limit 3000] [--min-similarity 0.8]

A good guard vetoes few true paraphrases ("false veto") and many negated / value-changed pairs. With
--min-similarity only pairs whose MiniLM cosine similarity reaches it are counted (the stages only ever
see such pairs). Prints one table to stdout; reads the data in place and copies nothing.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import io
import json
import random
import sys
import tarfile
import zipfile
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from index.guards.polarity import PolarityStage
from index.guards.values import ValueStage

csv.field_size_limit(10**7)


@dataclass(frozen=True)
class Pair:
    group: str
    a: str
    b: str
    same: bool  # True: may share an answer (paraphrase); False: must not


def checklist(root: Path) -> Iterator[Pair]:
    path = root / "checklist_qqp/checklist_qqp_export.tsv.gz"
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))
    origs: dict[tuple[str, str], dict[str, str]] = {}
    for row in rows:
        name, expected = row["test_name"], row["expected"]
        if row["test_type"] == "MFT" and expected in {"0", "1"}:
            if name.startswith("Order does matter for asymmetric"):
                continue  # stored with the wrong label in the released suite
            yield Pair(f"checklist MFT: {name[:60]}", row["q1"], row["q2"], expected == "1")
        elif name == "(q, paraphrase(q))" and row["q1"] != row["q2"]:
            yield Pair("checklist DIR paraphrase(q)", row["q1"], row["q2"], True)
        elif name.startswith("Change ") and "in one of" in name:
            key = (name, row["case_id"])
            if expected == "orig":
                origs[key] = row
            elif expected == "0_if_orig_dup" and key in origs:
                # The perturbed question against its unperturbed self isolates the value change.
                orig = origs[key]
                a = orig["q1"] if row["q2"] == orig["q2"] else orig["q2"]
                b = row["q1"] if row["q2"] == orig["q2"] else row["q2"]
                if a != b:
                    yield Pair(f"checklist DIR: {name[:50]}", a, b, False)


def langcache(root: Path) -> Iterator[Pair]:
    with open(root / "redis_langcache_eval/chatgpt.csv", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            a, b = row["sentence1"].replace("**", ""), row["sentence2"].replace("**", "")
            yield Pair("langcache chatgpt", a, b, row["label"].strip() == "1")


def cannot(root: Path) -> Iterator[Pair]:
    base = root / "cannot_components/datasets"
    with open(base / "antonym-substitution/processed/sem_anto_neg.tsv", encoding="utf-8") as handle:
        for row in csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE):
            yield Pair("cannot antonym-substitution", row["premise"], row["hypothesis"], row["label"] == "0")
    for sub in ("glue-diagnostic/processed/glue_diagnostic.tsv", "nan-nli/processed/nan_nli.tsv",
                "sentiment-labelled-sentences/processed/sentiment_labelled_sentences.tsv",
                "wikifactcheck-english/processed/wikifactcheck_english_0.tsv"):
        with open(base / sub, encoding="utf-8") as handle:
            for row in csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE):
                yield Pair(f"cannot {sub.split('/')[0]}", row["sentence"], row["negated"], False)


def paws(root: Path) -> Iterator[Pair]:
    with open(root / "paws_wiki/dev.tsv", encoding="utf-8") as handle:
        for line in handle:
            _id, a, b, label = line.rstrip("\n").split("\t")
            yield Pair("paws-wiki dev", a, b, label == "1")


def gptcache(root: Path) -> Iterator[Pair]:
    for item in json.loads((root / "gptcache_similar_qqp/mock_data.json").read_text(encoding="utf-8")):
        yield Pair("gptcache mock_data", item["origin"], item["similar"], True)
    with tarfile.open(root / "gptcache_similar_qqp/similiar_qqp_full.json.gz") as archive:
        member = next(m for m in archive.getmembers() if m.name.endswith(".json"))
        handle = archive.extractfile(member)
        assert handle is not None
        data = json.load(io.TextIOWrapper(handle, encoding="utf-8"))
    rows = data if isinstance(data, list) else data.get("data", [])
    for row in rows:
        yield Pair("gptcache qqp_full", row["text_a"], row["text_b"], str(row["label"]) == "1")
    clusters = json.loads((root / "gptcache_osschat_clusters/cluster_user_questions.json").read_text("utf-8"))
    for cluster in clusters:
        for i in range(len(cluster) - 1):
            yield Pair("gptcache osschat clusters", cluster[i], cluster[i + 1], True)


def cai(root: Path) -> Iterator[Pair]:
    for item in json.loads((root / "cai_semantic_equivalence/dataset.json").read_text(encoding="utf-8")):
        yield Pair("cai semantic-equivalence", item["prompt_A"], item["prompt_B"], True)


def breaking_nli(root: Path) -> Iterator[Pair]:
    with zipfile.ZipFile(root / "breaking_nli/breaking_nli_dataset.zip") as archive:
        for line in archive.read("data/dataset.jsonl").decode("utf-8").splitlines():
            row = json.loads(line)
            if row["gold_label"] in {"contradiction", "entailment"}:
                same = row["gold_label"] == "entailment"
                yield Pair(f"breaking-nli {row['category']}", row["sentence1"], row["sentence2"], same)


SOURCES = (checklist, langcache, cannot, paws, gptcache, cai, breaking_nli)


def local_dev(repo: Path) -> Iterator[Pair]:
    """Our own dev split, when present. pairs-test.jsonl is never read here."""
    path = repo / "datasets/pairs-dev.jsonl"
    if not path.exists():
        return
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            yield Pair(f"deja dev: {row.get('kind', '?')}", row["a"], row["b"], bool(row["same_answer"]))


def sample(pairs: list[Pair], limit: int, seed: int) -> list[Pair]:
    groups: dict[str, list[Pair]] = defaultdict(list)
    for pair in pairs:
        groups[pair.group].append(pair)
    rng = random.Random(seed)
    out: list[Pair] = []
    for items in groups.values():
        out.extend(rng.sample(items, limit) if len(items) > limit else items)
    return out


def similarities(pairs: list[Pair]) -> list[float]:
    from index.embedding.embedder import MiniLMEmbedder

    embedder = MiniLMEmbedder()
    a = embedder.embed([p.a for p in pairs])
    b = embedder.embed([p.b for p in pairs])
    return [float(x) for x in (a * b).sum(axis=1)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="veto rates of the rule stages on public pairs")
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[3] / "shared/datasets")
    parser.add_argument("--limit", type=int, default=3000, help="pairs per group at most (random sample)")
    parser.add_argument("--min-similarity", type=float, default=None)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--show", type=str, default="", help="print vetoes/passes of groups containing this")
    args = parser.parse_args(argv)
    pairs = [p for source in SOURCES for p in source(args.root)]
    pairs += list(local_dev(Path(__file__).resolve().parents[2]))
    pairs = sample(pairs, args.limit, args.seed)
    if args.min_similarity is not None:
        sims = similarities(pairs)
        pairs = [p for p, s in zip(pairs, sims, strict=True) if s >= args.min_similarity]
    report(pairs, args.show)
    return 0


def report(pairs: list[Pair], show: str) -> None:
    polarity, values = PolarityStage(), ValueStage()
    table: dict[tuple[str, bool], list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for pair in pairs:
        p = polarity.check(pair.a, pair.b)
        v = values.check(pair.a, pair.b)
        row = table[(pair.group, pair.same)]
        row[0] += 1
        row[1] += not p.passed
        row[2] += not v.passed
        row[3] += not (p.passed and v.passed)
        if show and show in pair.group:
            verdict = "VETO" if not (p.passed and v.passed) else "pass"
            print(f"[{verdict}] same={pair.same} | {pair.a} | {pair.b} | {p.reason} | {v.reason}", file=sys.stderr)
    print(f"{'group':62} {'label':9} {'n':>6} {'polarity':>9} {'values':>7} {'either':>7}")
    totals: dict[bool, list[int]] = {True: [0, 0, 0, 0], False: [0, 0, 0, 0]}
    for (group, same), (n, pv, vv, ev) in sorted(table.items()):
        label = "paraphr" if same else "negative"
        print(f"{group:62} {label:9} {n:6d} {pv / n:9.1%} {vv / n:7.1%} {ev / n:7.1%}")
        for k, x in enumerate((n, pv, vv, ev)):
            totals[same][k] += x
    for same, (n, pv, vv, ev) in totals.items():
        if n:
            label = "ALL paraphrases (false veto)" if same else "ALL negatives (caught)"
            print(f"{label:62} {'':9} {n:6d} {pv / n:9.1%} {vv / n:7.1%} {ev / n:7.1%}")


if __name__ == "__main__":
    raise SystemExit(main())
