"""How two words are related in WordNet 3.0 (same word, synonym, broader, antonym, sibling), from the
package table data/wordnet_graph.tsv.gz (built by training/data/wordnet_graph.py), loaded on first use.
"""

from __future__ import annotations

import gzip
import re
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache
from importlib import resources
from typing import Protocol

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


class _Lookup(Protocol):
    """What WordNet reads of a table: a key's values, or `default`; membership; a key that must be there."""

    def get(self, key: str, default: tuple[str, ...] = ()) -> tuple[str, ...]: ...

    def __getitem__(self, key: str) -> tuple[str, ...]: ...

    def __contains__(self, key: object) -> bool: ...


class WordNet:
    """Lemmas, hypernym and antonym links and irregular forms; words are looked up lower-cased, a multi-word
    lemma with '_' or spaces (turn_on, "turn on")."""

    def __init__(self, lemmas: _Lookup, hypernyms: _Lookup, antonyms: _Lookup, exceptions: _Lookup) -> None:
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


class _Table:
    """One kind of the table (`L` lemma -> synsets, `H` synset -> hypernyms, `A` synset -> antonyms, `X` form ->
    bases): each key's values kept as the line wrote them, split when asked for."""

    def __init__(self, rows: dict[str, str]) -> None:
        self._rows = rows

    def __len__(self) -> int:
        return len(self._rows)

    def get(self, key: str, default: tuple[str, ...] = ()) -> tuple[str, ...]:
        found = self._rows.get(key)
        return default if found is None else tuple(found.split(" "))

    def __getitem__(self, key: str) -> tuple[str, ...]:
        return tuple(self._rows[key].split(" "))

    def __contains__(self, key: object) -> bool:
        return key in self._rows


# One line of a kind's block: `<kind>\t<key>\t<value> <value>...`.
_LINE = re.compile(r"^[LHAX]\t([^\t\n]*)\t([^\n]*)$", re.MULTILINE)


def _parse(text: str) -> WordNet:
    """The four tables of the unpacked file, whose lines are grouped by kind (training/data/wordnet_graph.py
    writes them so; comment lines start with '#'). Each block is read by one regular expression into one dict,
    in C: 0.1 s, where splitting every line into tuples in Python took 0.4 s."""
    tables: dict[str, _Table] = {}
    for kind in "LHAX":
        start = 0 if text.startswith(kind + "\t") else text.find("\n" + kind + "\t") + 1
        rows = dict(_LINE.findall(text, start, _block_end(text, kind, start))) if start > 0 or \
            text.startswith(kind + "\t") else {}
        tables[kind] = _Table(rows)
    return WordNet(tables["L"], tables["H"], tables["A"], tables["X"])


def _block_end(text: str, kind: str, start: int) -> int:
    """Where the block of `kind` that begins at `start` ends: the first later line of another kind."""
    others = [found for other in "LHAX" if other != kind
              if (found := text.find("\n" + other + "\t", start)) >= 0]
    return min(others) + 1 if others else len(text)


@lru_cache(maxsize=1)
def load_wordnet() -> WordNet:
    """The package's WordNet table, read once on first use (unpacked and indexed in place: tens of ms)."""
    with resources.files("index.guards").joinpath("data", "wordnet_graph.tsv.gz").open("rb") as packed:
        return _parse(gzip.decompress(packed.read()).decode("utf-8"))


def relation(a: str, b: str) -> Relation:
    """How two words are related, from the shared table (loaded on the first call)."""
    return load_wordnet().relation(a, b)
