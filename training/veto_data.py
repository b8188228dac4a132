"""The labelled pairs the learned veto is fitted on: real public pairs whose licence lets a shipped model learn from
them, held out by source and part, with our own generated pairs only as a minority.

Used: PAWS-Wiki `dev.tsv` (its licence: "may be freely used for any purpose"; `test.tsv` is the panel's held-out
part), Redis LangCache (MIT; only the panel's dev part by `eval.sources.split_of`, the test part held out) and our
`datasets/pairs-dev.jsonl`. Never used: GPTCache's QQP pairs and the CheckList QQP suite (Quora's terms: evaluation
only, no shipped weights), the OSSChat clusters (no licence: test only), ComQA and other WikiAnswers data (the
final check), STS-B and SICK (share-alike / non-commercial).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

from eval.datasets import LabeledPair, load_pairs
from eval.sources import langcache, split_of

PAWS_TRAIN = "paws_wiki/dev.tsv"
OURS_TRAIN = "pairs-dev.jsonl"


@dataclass(frozen=True)
class TrainingPair:
    """One labelled single-turn pair and the source it came from (the unit of hold-out and of weighting)."""

    source: str
    cached: str
    query: str
    same_answer: bool


@dataclass(frozen=True)
class VetoData:
    """Where the pairs lie and how many to take of each source (0 = none)."""

    shared: Path
    datasets: Path
    paws: int = 2000
    ours: int = 300
    seed: int = 0


def _paws(shared: Path, n: int, seed: int) -> list[TrainingPair]:
    rows = []
    for line in (shared / PAWS_TRAIN).read_text(encoding="utf-8").splitlines():
        fields = line.split("\t")
        if len(fields) == 4 and fields[3] in ("0", "1"):
            rows.append(TrainingPair("PAWS-Wiki dev", fields[1], fields[2], fields[3] == "1"))
    random.Random(seed).shuffle(rows)
    return rows[:n]


def _single(pair: LabeledPair, source: str) -> TrainingPair | None:
    if len(pair.a.messages) != 1 or len(pair.b.messages) != 1:
        return None
    return TrainingPair(source, pair.a.prompt, pair.b.prompt, pair.same_answer)


def _langcache(shared: Path, seed: int) -> list[TrainingPair]:
    dev = [s for s in langcache(shared, seed) if s.part == "dev"]
    return [t for s in dev for p in s.pairs if (t := _single(p, "Redis LangCache dev")) is not None]


def _ours(datasets: Path, n: int, seed: int) -> list[TrainingPair]:
    rows = [t for p in load_pairs(datasets / OURS_TRAIN) if (t := _single(p, "our pairs dev")) is not None]
    random.Random(seed).shuffle(rows)
    return rows[:n]


def training_pairs(data: VetoData) -> list[TrainingPair]:
    """Every training pair, source by source (PAWS dev, LangCache dev, then ours as a minority)."""
    pairs = _paws(data.shared, data.paws, data.seed) if data.paws else []
    pairs += _langcache(data.shared, data.seed)
    pairs += _ours(data.datasets, data.ours, data.seed) if data.ours else []
    return pairs


def held_out(pair: TrainingPair) -> bool:
    """True for a pair in a part the panel tests on (never trained on): a safety net for the loaders above."""
    return pair.source.startswith("Redis LangCache") and split_of(pair.cached + "\x00" + pair.query) != "dev"
