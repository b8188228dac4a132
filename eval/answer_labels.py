"""How often answer comparison (`index.match.answers`) labels right, on real answers with known truth: the system
turns of the Schema-Guided Dialogue dev dialogues (`../shared/datasets/sgd_dialogues`, read in place), whose acts
say what each answer carries.

- **same answer**: two system turns of different dialogues with the same acts and the same values (one offer of one
  restaurant at one time, one confirmation of one booking), worded differently: a cached answer that would have
  served;
- **contrasting answer**: two system turns with the same acts on the same slots but another value in one of them
  (another restaurant offered, another time confirmed): answers that look alike and would have served the wrong
  thing, the blind spot of an embedding.

Each pair is compared as a gateway compares a cached answer with a fresh one: the fresh answer, the cached one, and
a second fresh answer (another turn with the fresh one's acts and values: how much the upstream's answers vary)
when one exists. Reported per split (`eval.sources.split_of` of the service family, so families stay apart) with
the contrast check on and off: labelled same, different, none, and the two errors (a contrasting answer labelled
same: what lets a wrong hit count as right; a same answer labelled different)."""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eval.sgd import canonical_values, dialogues
from eval.sources import split_of
from index.embedding.embedder import Embedder
from index.match import answers
from index.match.answers import compare_answers

SAME, CONTRASTING = "same answer", "contrasting answer"


@dataclass(frozen=True)
class AnswerPair:
    """A fresh answer, a cached one, and (when there is one) a second fresh answer; `same`: the truth."""

    kind: str
    split: str
    fresh: str
    cached: str
    second: str | None
    same: bool


@dataclass
class Tally:
    """Labels given to one kind of pair, by split."""

    same: int = 0
    different: int = 0
    none: int = 0
    examples: list[str] = field(default_factory=list)

    @property
    def labelled(self) -> int:
        return self.same + self.different

    @property
    def total(self) -> int:
        return self.labelled + self.none


def _system_turns(shared: Path) -> Iterator[tuple[str, str, tuple[Any, ...], tuple[Any, ...]]]:
    """(family, utterance, acts with values, acts without values) of every system turn that carries a value."""
    canon = canonical_values(shared)
    for dialogue in dialogues(shared):
        family = str(dialogue["services"][0]).split("_")[0]
        for turn in dialogue["turns"]:
            if turn["speaker"] != "SYSTEM":
                continue
            acts = [(frame["service"], action["act"], action.get("slot", ""),
                     tuple(sorted(canon.get(v.lower(), v.lower()) for v in action.get("values") or ())))
                    for frame in turn["frames"] for action in frame.get("actions", ())]
            if not any(values for *_, values in acts):
                continue
            full = tuple(sorted(acts))
            shape = tuple(sorted(a[:3] for a in acts))
            yield family, turn["utterance"], full, shape


def pairs(shared: Path, seed: int = 0, limit: int = 600) -> list[AnswerPair]:
    """Up to `limit` pairs of each kind, families kept within one split."""
    by_acts: dict[tuple[Any, ...], list[tuple[str, str]]] = {}
    by_shape: dict[tuple[Any, ...], dict[tuple[Any, ...], list[tuple[str, str]]]] = {}
    for family, text, full, shape in _system_turns(shared):
        by_acts.setdefault(full, []).append((family, text))
        by_shape.setdefault(shape, {}).setdefault(full, []).append((family, text))
    rng = random.Random(seed)
    same: list[AnswerPair] = []
    for group in by_acts.values():
        texts = list(dict.fromkeys(t for _, t in group))
        if len(texts) < 2:
            continue
        fresh, cached, *rest = rng.sample(texts, len(texts))
        same.append(AnswerPair(SAME, split_of(group[0][0]), fresh, cached, rest[0] if rest else None, True))
    contrasting: list[AnswerPair] = []
    for variants in by_shape.values():
        fulls = sorted(variants, key=repr)
        for one, other in itertools.pairwise(fulls):
            family = variants[one][0][0]
            if split_of(family) != split_of(variants[other][0][0]):
                continue
            fresh_texts = list(dict.fromkeys(t for _, t in variants[one]))
            fresh = rng.choice(fresh_texts)
            second = next((t for t in fresh_texts if t != fresh), None)
            cached = rng.choice([t for _, t in variants[other]])
            contrasting.append(AnswerPair(CONTRASTING, split_of(family), fresh, cached, second, False))
    rng.shuffle(same)
    rng.shuffle(contrasting)
    return [*same[:limit], *contrasting[:limit]]


def measure(items: Sequence[AnswerPair], embedder: Embedder, min_similarity: float, contrast: bool = True
            ) -> dict[tuple[str, str], Tally]:
    """Labels per (kind, split), with the contrast check on or (as before it) off."""
    tallies: dict[tuple[str, str], Tally] = {}
    original = answers.contrast
    if not contrast:
        answers.contrast = lambda fresh, cached: None
    try:
        for pair in items:
            tally = tallies.setdefault((pair.kind, pair.split), Tally())
            agreement = compare_answers(pair.fresh, pair.cached, embedder, min_similarity, pair.second)
            if agreement.same is None:
                tally.none += 1
            elif agreement.same:
                tally.same += 1
                if not pair.same and len(tally.examples) < 3:
                    tally.examples.append(agreement.detail)
            else:
                tally.different += 1
    finally:
        answers.contrast = original
    return tallies


def errors(tallies: Mapping[tuple[str, str], Tally]) -> dict[str, float | None]:
    """Over every split: the share of labelled contrasting answers labelled same (false same), of labelled same
    answers labelled different (false different), and of each kind left without a label."""
    def total(kind: str) -> Tally:
        out = Tally()
        for (k, _), t in tallies.items():
            if k == kind:
                out.same, out.different, out.none = out.same + t.same, out.different + t.different, out.none + t.none
        return out

    same, contrasting = total(SAME), total(CONTRASTING)
    return {
        "false_same": contrasting.same / contrasting.labelled if contrasting.labelled else None,
        "false_different": same.different / same.labelled if same.labelled else None,
        "unlabelled_same": same.none / same.total if same.total else None,
        "unlabelled_contrasting": contrasting.none / contrasting.total if contrasting.total else None,
    }
