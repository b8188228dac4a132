"""Single-turn contrast pairs (must-not swaps and same-answer rewrites) from public sets read in place under `--shared`:
CheckList QQP (MIT; Quora's terms), CANNOT and SemAntoNeg (CC BY-SA 4.0), Breaking NLI (CC BY-SA 4.0, SNLI
premises), CondaQA (Apache-2.0). Nothing here is copied into the repository; each source splits dev/test by a hash.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import random
import re
import zipfile
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from itertools import chain, zip_longest
from pathlib import Path

from eval.datasets import Conversation, DatasetError, LabeledPair
from eval.sources import CHECKLIST, Origin, Source, split_of

CANNOT = "cannot_components/datasets"
SEMANTONEG = "cannot_components/datasets/antonym-substitution/processed/sem_anto_neg.tsv"
BREAKING = "breaking_nli/breaking_nli_dataset.zip"
CONDAQA = "condaqa/condaqa_dev.json"
SAMPLE = 600
MAX_PROMPT = 4000
NEGATION_CUE = re.compile(r"\b(?:not|no|never|cannot|none|nobody|nothing|neither|nor|nowhere)\b|n't", re.IGNORECASE)
# CheckList MFT test names -> kind slugs. "Order does matter for asymmetric relations" is stored with label 1 in the
# released suite (a bug: "Is A punching B?" vs "Is B punching A?"), so it is read as must-not; the yes/no halves of
# "Order does not matter for comparison" ("Are A cheaper than B?" / "Are B cheaper than A?") flip the answer, so
# they are must-not too and its mixed-form rows are skipped; reflexivity (q, q) has identical sides and is dropped.
CHECKLIST_SLUGS = {
    "A or B is not the same as A and B": "or_vs_and", "A or B is not the same as C and D": "or_vs_other_and",
    "Different animals": "animal", "Modifier: adj": "adjective_modifier", "different adjectives": "adjective",
    "Do you have to X your dog before Y it != Do you have to X your dog after Y it.": "before_after_pet",
    "How can I become a X person != How can I become a person who is not X": "negation_person",
    "How can I become more X != How can I become less X": "more_less",
    "Is it {ok, dangerous, ...} to {smoke, rest, ...} after != before": "before_after_time",
    "Is it {ok, dangerous, ...} to {smoke, rest, ...} in country != Is it {ok, dangerous, ...} not to "
    "{smoke, rest, ...} in country": "negation_country",
    "Is person X != Did person use to be X": "tense_used_to", "Is person X != Is person becoming X": "tense_becoming",
    "Preamble is relevant (different injuries)": "body_part", "Simple coref: he and she": "coref_pronoun",
    "Simple coref: his and her": "coref_possessive",
    "What are things a {noun} should worry about != should not worry about.": "negation_should",
    "What was person's life before becoming X != What was person's life after becoming X": "before_after_life",
    "same adjectives, different people": "person", "same adjectives, different people v2": "first_name",
    "same adjectives, different people v3": "last_name",
    "traditional SRL: wrong active / passive swap": "wrong_passive",
    "traditional SRL: wrong active / passive swap with people": "wrong_passive_people",
    "Order does matter for asymmetric relations": "asymmetric_order",
    "Order does not matter for comparison": "comparison_order",
    "A and / or B is the same as B and / or A": "or_and_order",
    "How can I become a X person == How can I become a person who is not antonym(X)": "not_antonym",
    "How can I become more X = How can I become less antonym(X)": "less_antonym",
    "How can I become more {synonym}?": "synonym", "Irrelevant modifiers - animals": "filler_animals",
    "Irrelevant modifiers - people": "filler_people", "Irrelevant preamble with different examples.": "other_preamble",
    "Order does not matter for symmetric relations": "symmetric_order",
    "Who do X think - Who is the ... according to X": "according_to",
    "a {nationality} {profession} = a {profession} and {nationality}": "nationality_order",
    "traditional SRL: active / passive swap": "passive", "traditional SRL: active / passive swap with people":
    "passive_people",
}
FLIPPED = frozenset({"Order does matter for asymmetric relations", "Order does not matter for comparison"})
# Breaking NLI: entailments that keep the meaning (the rest are hypernyms: "carrot" -> "vegetable", not the same).
BREAKING_SAME = {"synonyms": "synonym", "cardinals": "number_format", "ordinals": "number_format"}
CONDAQA_EDITS = {1: "paraphrase", 2: "scope", 3: "affirmative"}

Keyed = tuple[str, LabeledPair]


def _pair(pid: str, a: str, b: str, same: bool, kind: str) -> LabeledPair:
    return LabeledPair(pid, Conversation.of(a), Conversation.of(b), kind, same)


def _norm(text: str) -> str:
    return " ".join(text.split()).casefold()


def _round_robin(groups: Sequence[Sequence[LabeledPair]]) -> list[LabeledPair]:
    return [p for p in chain.from_iterable(zip_longest(*groups)) if p is not None]


def _sample(pairs: Sequence[LabeledPair], seed: int, n: int = SAMPLE) -> tuple[LabeledPair, ...]:
    """At most `n` pairs, must-not and same-answer alternating, each class round-robin over its kinds (so a
    rare kind keeps all its pairs and a large one is capped); seeded, independent of the input order."""
    rng = random.Random(seed)
    by_kind: dict[tuple[bool, str], list[LabeledPair]] = defaultdict(list)
    for pair in sorted(pairs, key=lambda p: p.id):
        by_kind[(pair.same_answer, pair.kind)].append(pair)
    for key in sorted(by_kind):
        rng.shuffle(by_kind[key])
    classes = [_round_robin([by_kind[k] for k in sorted(by_kind) if k[0] is same]) for same in (False, True)]
    return tuple(_round_robin(classes)[:n])


def _parts(name: str, keyed: Iterable[Keyed], seed: int) -> list[Source]:
    """Drop pairs with equal sides and repeats (either order), split by each key's hash, sample each part."""
    seen: set[frozenset[str]] = set()
    by_part: dict[str, list[LabeledPair]] = {"dev": [], "test": []}
    for key, pair in keyed:
        a, b = _norm(pair.a.prompt), _norm(pair.b.prompt)
        if a == b or frozenset((a, b)) in seen:
            continue
        seen.add(frozenset((a, b)))
        by_part[split_of(key)].append(pair)
    return [Source(name, Origin.PUBLIC, part, pairs=_sample(rows, seed)) for part, rows in by_part.items()]


def _cue_changed(a: str, b: str) -> bool:
    """Whether the two differ in explicit negation cues ("not", "n't", "never", ...)."""
    return len(NEGATION_CUE.findall(a)) != len(NEGATION_CUE.findall(b))


def _slug(test_name: str) -> str:
    return CHECKLIST_SLUGS.get(test_name) or re.sub(r"[^a-z0-9]+", "_", test_name.lower()).strip("_")[:40]


def _checklist_pair(i: int, row: dict[str, str]) -> LabeledPair | None:
    name, q1, q2 = row["test_name"], row["q1"], row["q2"]
    same = row["expected"] == "1" and name not in FLIPPED
    if name == "Order does not matter for comparison" and q1.split()[:1] != q2.split()[:1]:
        return None  # "Are A cheaper than B?" vs "What is cheaper, A or B?": a yes/no against a choice
    return _pair(f"clc-{i}", q1, q2, same, ("same:" if same else "") + _slug(name))


def checklist_contrasts(shared: Path, seed: int) -> list[Source]:
    """CheckList QQP's labelled (MFT) tests: 0 = must-not (negation, name/number/tense/role swaps), 1 = same."""
    keyed: list[Keyed] = []
    with gzip.open(shared / CHECKLIST, "rt", encoding="utf-8") as handle:
        for i, row in enumerate(csv.DictReader(io.StringIO(handle.read()), delimiter="\t")):
            if row.get("test_type") != "MFT" or row.get("expected") not in ("0", "1"):
                continue
            pair = _checklist_pair(i, row)
            if pair is not None:
                keyed.append((row["q1"] + "\x00" + row["q2"], pair))
    return _parts("CheckList contrasts", keyed, seed)


def _tsv(path: Path) -> list[list[str]]:
    with path.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))
    return rows[1:]


def cannot_negations(shared: Path, seed: int) -> list[Source]:
    """CANNOT's processed parts (sentence, negated sentence): all must-not; `negation` where a negation cue changed,
    `negation_rewrite` where it was negated by rewording (antonyms, other words). Its paraphrase half (label 0)
    lives only in the full cannot_dataset file, absent here, so this source has no same-answer pairs."""
    files = sorted(p for p in (shared / CANNOT).glob("*/processed/*.tsv") if p.name != "sem_anto_neg.tsv")
    if not files:
        raise FileNotFoundError(shared / CANNOT)
    keyed: list[Keyed] = []
    for path in files:
        for i, row in enumerate(_tsv(path)):
            if len(row) == 2 and row[0].strip() and row[1].strip():
                kind = "negation" if _cue_changed(row[0], row[1]) else "negation_rewrite"
                keyed.append((row[0], _pair(f"cannot-{path.stem}-{i}", row[0], row[1], False, kind)))
    return _parts("CANNOT negations", keyed, seed)


def semantoneg(shared: Path, seed: int) -> list[Source]:
    """SemAntoNeg as CANNOT processed it: 0 = paraphrase by antonym plus negation ("not X" / "antonym(X)"), 1 = not
    a paraphrase: negation only ("not X" / "X") or antonym only ("not X" / "not antonym(X)")."""
    keyed: list[Keyed] = []
    for i, row in enumerate(_tsv(shared / SEMANTONEG)):
        if len(row) != 3 or row[2] not in ("0", "1"):
            continue
        a, b, same = row[0], row[1], row[2] == "0"
        kind = "antonym_negation_paraphrase" if same else "negation" if _cue_changed(a, b) else "antonym"
        keyed.append((a, _pair(f"san-{i}", a, b, same, kind)))
    return _parts("SemAntoNeg", keyed, seed)


def breaking_nli(shared: Path, seed: int) -> list[Source]:
    """Breaking NLI: an SNLI premise with one word replaced. Contradictions are must-not (kind = category);
    meaning-keeping entailments (synonyms, "two" / "2") are same-answer; neutrals and hypernyms are skipped.
    Split by premise, so every variant of a sentence lies in one part."""
    with zipfile.ZipFile(shared / BREAKING) as archive:
        lines = archive.read("data/dataset.jsonl").decode("utf-8").splitlines()
    keyed: list[Keyed] = []
    for line in filter(str.strip, lines):
        row = json.loads(line)
        a, b, label, category = str(row["sentence1"]), str(row["sentence2"]), row["gold_label"], str(row["category"])
        if label == "contradiction":
            keyed.append((a, _pair(f"bnli-{row['pairID']}", a, b, False, category)))
        elif label == "entailment" and category in BREAKING_SAME:
            keyed.append((a, _pair(f"bnli-{row['pairID']}", a, b, True, BREAKING_SAME[category])))
    return _parts("Breaking NLI", keyed, seed)


def _condaqa_pair(anchor: dict[str, object], edit: dict[str, object]) -> LabeledPair | None:
    kind = CONDAQA_EDITS[int(str(edit["PassageEditID"]))]
    same = anchor["label"] == edit["label"]
    if same != (kind == "paraphrase"):
        return None  # a paraphrase edit whose answer moved (noise), or a scope/affirmative edit that kept it
    a, b = (f"{row['sentence1']}\n\n{row['sentence2']}" for row in (anchor, edit))
    if max(len(a), len(b)) >= MAX_PROMPT:
        return None
    return _pair(f"condaqa-{anchor['SampleID']}-{edit['PassageEditID']}", a, b, same, kind)


def condaqa_edits(shared: Path, seed: int) -> list[Source]:
    """CondaQA (dev): passage + question against the same question over an edited passage. Edit 1 (paraphrase)
    keeps the answer: same. Edits 2 (scope) and 3 (affirmative) are must-not where the answer changed. The anchor
    is the original passage (edit 0), else its paraphrase; split by passage id."""
    groups: dict[tuple[str, str], dict[int, dict[str, object]]] = defaultdict(dict)
    for line in filter(str.strip, (shared / CONDAQA).read_text(encoding="utf-8").splitlines()):
        row = json.loads(line)
        groups[(str(row["PassageID"]), str(row["QuestionID"]))][int(row["PassageEditID"])] = row
    keyed: list[Keyed] = []
    for (passage, _), edits in sorted(groups.items()):
        anchor_id = 0 if 0 in edits else 1
        if anchor_id not in edits:
            continue
        for edit_id in sorted(edits.keys() - {0, anchor_id}):
            pair = _condaqa_pair(edits[anchor_id], edits[edit_id])
            if pair is not None:
                keyed.append((f"condaqa-{passage}", pair))
    return _parts("CondaQA edits", keyed, seed)


Loader = Callable[[Path, int], list[Source]]
CONTRAST_LOADERS: tuple[tuple[str, Loader], ...] = (
    ("CheckList contrasts", checklist_contrasts), ("CANNOT negations", cannot_negations),
    ("SemAntoNeg", semantoneg), ("Breaking NLI", breaking_nli), ("CondaQA edits", condaqa_edits),
)


def contrast_sources(shared: Path, seed: int = 0) -> tuple[list[Source], list[str]]:
    """Every contrast source present, and a note for each whose files are absent or unreadable."""
    found: list[Source] = []
    missing: list[str] = []
    for name, loader in CONTRAST_LOADERS:
        try:
            found.extend(loader(shared, seed))
        except (OSError, KeyError, ValueError, csv.Error, zipfile.BadZipFile, DatasetError) as exc:
            missing.append(f"{name}: not read ({type(exc).__name__}: {exc})")
    return found, missing
