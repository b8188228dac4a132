"""How two words are related in WordNet 3.0 (same word, synonym, broader, antonym, sibling), from the
package table data/wordnet_graph.tsv.gz (built by training/data/wordnet_graph.py), loaded on first use.
"""

from __future__ import annotations

import gzip
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache
from importlib import resources

# Morphy's detachment rules: (suffix, replacement) per part of speech, tried on the inflected word.
_RULES: dict[str, tuple[tuple[str, str], ...]] = {
    "n": (("s", ""), ("ses", "s"), ("xes", "x"), ("zes", "z"), ("ches", "ch"), ("shes", "sh"), ("men", "man"),
          ("ies", "y")),
    "v": (("s", ""), ("ies", "y"), ("es", "e"), ("es", ""), ("ed", "e"), ("ed", ""), ("ing", "e"), ("ing", "")),
    "a": (("er", ""), ("est", ""), ("er", "e"), ("est", "e")),
}
_BROADER_STEPS = 3
# Senses of each lemma (most frequent first) that siblings are looked for among.
_COMMON_SENSES = 2
_SIBLING_STEPS = 1
_CACHE_SIZE = 65536
_EMPTY: frozenset[str] = frozenset()


class Relation(StrEnum):
    SAME = "same"  # the same word or the same base form (dogs/dog, geese/goose)
    SYNONYM = "synonym"  # they share a synset (fix/repair)
    BROADER = "broader"  # one is a hypernym of the other, within 3 steps either way (update -> change)
    ANTONYM = "antonym"  # a synset of one is an antonym of a synset of the other (buy/sell)
    SIBLING = "sibling"  # they share a hypernym within 2 steps of both (car/truck)
    UNRELATED = "unrelated"  # both known, none of the above
    UNKNOWN = "unknown"  # either word is not in WordNet


@dataclass(frozen=True, slots=True)
class _Word:
    bases: tuple[str, ...]  # in morphy's order: the word, its irregular bases, the regular rules
    synsets: frozenset[str]
    antonyms: frozenset[str]
    common: frozenset[str]  # the synsets of each base's most frequent senses


def _normal(word: str) -> str:
    return "_".join(word.strip().lower().replace("-", " ").split())


class WordNet:
    """Lemmas, hypernym and antonym links and irregular forms; words are looked up lower-cased, a multi-word
    lemma with '_' or spaces (turn_on, "turn on")."""

    def __init__(self, lemmas: dict[str, tuple[str, ...]], hypernyms: dict[str, tuple[str, ...]],
                 antonyms: dict[str, tuple[str, ...]], exceptions: dict[str, tuple[str, ...]]) -> None:
        self._lemmas = lemmas
        self._hypernyms = hypernyms
        self._antonyms = antonyms
        self._exceptions = exceptions
        # Bounded caches: they hold self, which lives as long as load_wordnet's cache anyway.
        self._word = lru_cache(maxsize=_CACHE_SIZE)(self._compute_word)
        self._relation = lru_cache(maxsize=_CACHE_SIZE)(self._compute_relation)
        self._ancestors = lru_cache(maxsize=_CACHE_SIZE)(self._compute_ancestors)
        self._broader = lru_cache(maxsize=_CACHE_SIZE)(self._compute_broader)
        self._near = lru_cache(maxsize=_CACHE_SIZE)(self._compute_near)
        self._opposed = lru_cache(maxsize=_CACHE_SIZE)(self._compute_opposed)

    def __contains__(self, word: str) -> bool:
        return bool(self.base_forms(word))

    def base_forms(self, word: str) -> tuple[str, ...]:
        """The lemmas `word` may be a form of, morphy-like: itself, its irregular bases, the regular rules."""
        return self._word(_normal(word)).bases

    def synsets(self, word: str) -> tuple[str, ...]:
        """Synset ids (n02084071) of every base form of `word`, most frequent sense of each lemma first."""
        out: dict[str, None] = {}
        for base in self.base_forms(word):
            out.update(dict.fromkeys(self._lemmas[base]))
        return tuple(out)

    def relation(self, a: str, b: str) -> Relation:
        """The closest relation between two words, checked as SAME, SYNONYM, ANTONYM, BROADER, SIBLING."""
        return self._relation(_normal(a), _normal(b))

    def _forms(self, word: str) -> tuple[str, ...]:
        forms = dict.fromkeys((word,) if word in self._lemmas else ())
        forms.update(dict.fromkeys(self._exceptions.get(word, ())))
        for pos, rules in _RULES.items():
            for suffix, ending in rules:
                if word.endswith(suffix) and len(word) > len(suffix):
                    base = word[: -len(suffix)] + ending
                    if any(s[0] == pos for s in self._lemmas.get(base, ())):
                        forms[base] = None
        return tuple(forms)

    def _up(self, synsets: frozenset[str], steps: int) -> frozenset[str]:
        """Every synset 1 to `steps` hypernym links above one of `synsets`: the union of each one's ancestors,
        memoised per synset (words share senses, and the union runs in C)."""
        out: set[str] = set()
        for synset in synsets:
            out |= self._ancestors(synset, steps)
        return frozenset(out)

    def _compute_ancestors(self, synset: str, steps: int) -> frozenset[str]:
        parents = self._hypernyms.get(synset, ())
        if steps <= 1 or not parents:
            return frozenset(parents)
        out = set(parents)
        for parent in parents:
            out |= self._ancestors(parent, steps - 1)
        return frozenset(out)

    def _compute_word(self, word: str) -> _Word:
        bases = self._forms(word)
        synsets = frozenset(s for base in bases for s in self._lemmas[base])
        antonyms = frozenset(a for s in synsets for a in self._antonyms.get(s, ()))
        # Siblings by the most frequent senses only: every sense of a common word reaches half the lexicon
        # ("turn" and "enable" share a hypernym through rare senses), its usual senses say what it names.
        common = frozenset(s for base in bases for s in self._lemmas[base][:_COMMON_SENSES])
        return _Word(bases, synsets, antonyms, common)

    def _compute_broader(self, word: str) -> frozenset[str]:
        """Hypernyms within `_BROADER_STEPS` of every sense (read only once a pair is neither the same word, nor
        synonyms, nor antonyms: the ancestors are most of the cost of a relation)."""
        return self._up(self._word(word).synsets, _BROADER_STEPS)

    def _compute_near(self, word: str) -> frozenset[str]:
        """Hypernyms within `_SIBLING_STEPS` of the most frequent senses."""
        return self._up(self._word(word).common, _SIBLING_STEPS)

    def opposed(self, a: str, b: str) -> bool:
        """Whether `relation(a, b)` is ANTONYM, without reading the hypernyms the other relations need."""
        return self._opposed(_normal(a), _normal(b))

    def _compute_opposed(self, a: str, b: str) -> bool:
        if a == b:
            return False
        wa, wb = self._word(a), self._word(b)
        if not wa.synsets or not wb.synsets or not set(wa.bases).isdisjoint(wb.bases) or wa.synsets & wb.synsets:
            return False
        return bool(wa.antonyms & wb.synsets or wb.antonyms & wa.synsets)

    def _compute_relation(self, a: str, b: str) -> Relation:
        if a == b:
            return Relation.SAME
        wa, wb = self._word(a), self._word(b)
        if not wa.synsets or not wb.synsets:
            return Relation.UNKNOWN
        if not set(wa.bases).isdisjoint(wb.bases):
            return Relation.SAME
        if wa.synsets & wb.synsets:
            return Relation.SYNONYM
        if wa.antonyms & wb.synsets or wb.antonyms & wa.synsets:
            return Relation.ANTONYM
        if self._broader(a) & wb.synsets or self._broader(b) & wa.synsets:
            return Relation.BROADER
        if self._near(a) & self._near(b):
            return Relation.SIBLING
        return Relation.UNRELATED


def _parse(lines: Iterable[str]) -> WordNet:
    tables: dict[str, dict[str, tuple[str, ...]]] = {"L": {}, "H": {}, "A": {}, "X": {}}
    ids: dict[str, str] = {}  # one string object per synset id, shared by every table
    for line in lines:
        if line.startswith("#"):
            continue
        kind, key, values = line.rstrip("\n").split("\t")
        if kind == "X":
            tables["X"][key] = tuple(values.split(" "))
        else:
            tables[kind][ids.setdefault(key, key) if kind != "L" else key] = tuple(
                ids.setdefault(v, v) for v in values.split(" "))
    return WordNet(tables["L"], tables["H"], tables["A"], tables["X"])


@lru_cache(maxsize=1)
def load_wordnet() -> WordNet:
    """The package's WordNet table, read once on first use (about 0.4 s and 40 MB)."""
    with resources.files("index.guards").joinpath("data", "wordnet_graph.tsv.gz").open("rb") as raw, \
            gzip.open(raw, "rt", encoding="utf-8") as lines:
        return _parse(lines)


def relation(a: str, b: str) -> Relation:
    """How two words are related, from the shared table (loaded on the first call)."""
    return load_wordnet().relation(a, b)
