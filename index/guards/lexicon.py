"""Word lists of the rule stages, read once from the package data (never from system paths); see
data/: WordNet-derived antonyms.tsv and english_words.txt.gz (WORDNET_LICENSE.txt), hand-written
reversals.tsv, units.tsv, entities.tsv and common_terms.txt.
"""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from index.guards.text import FUNCTION_WORDS, stem


@dataclass(frozen=True)
class Unit:
    """A unit alias resolved: canonical symbol, dimension, and whether it counts only after a number."""

    canonical: str
    dimension: str
    after_number_only: bool


@dataclass(frozen=True)
class Entity:
    """A named thing from a category list (a language, a country, a plan name ...)."""

    kind: str
    canonical: str


@dataclass(frozen=True)
class Lexicon:
    """Everything the rule stages look up, keyed the way they look it up."""

    # stem -> stems of its opposites: WordNet direct antonyms and the hand-written reversals
    antonyms: dict[str, frozenset[str]]
    # stem -> stems of indirect opposites (an adjective satellite vs its head's antonym): noisier
    indirect_antonyms: dict[str, frozenset[str]]
    units: dict[str, Unit]
    # lowercase term (space-joined words) -> entity, for terms that match any casing
    entities: dict[str, Entity]
    # exact-case term -> entity, for terms that are also common words (Turkey, May, Go)
    cased_entities: dict[str, Entity]
    # longest entity term, in words, and the lowercase first words of multi-word terms
    max_entity_words: int
    entity_starts: frozenset[str]
    # lowercase first words of multi-word unit aliases ("square feet", "degrees celsius")
    unit_starts: frozenset[str]
    # every single-word WordNet lemma and irregular form: what is not in it is likely a name
    english: frozenset[str]


def _rows(name: str) -> Iterator[list[str]]:
    text = resources.files("index.guards").joinpath("data", name).read_text(encoding="utf-8")
    for line in text.splitlines():
        if line and not line.startswith("#"):
            yield line.split("\t")


def _key(word: str) -> str | None:
    """The stem a lexicon word is looked up by, or None when stripping would alias a function word
    (fore -> "for"): such an entry would fire on every "for"."""
    key = stem(word)
    if key in _LIGHT_VERBS or (key != word and key in FUNCTION_WORDS):
        return None
    return key


# Verbs so general that WordNet's opposites for them (have/lack, give/take, keep/lose) mostly fire on
# paraphrases that merely rephrase around them.
_LIGHT_VERBS = frozenset({stem(w) for w in ("be", "have", "do", "get", "make", "take", "give", "go", "come",
                                              "keep", "put", "set", "let")})


def _antonyms() -> tuple[dict[str, frozenset[str]], dict[str, frozenset[str]]]:
    direct: dict[str, set[str]] = {}
    indirect: dict[str, set[str]] = {}
    # ~100k word slots name ~20k distinct words: stem each once (start-up time, measured with bench.startup).
    keys: dict[str, str | None] = {}
    for name in ("antonyms.tsv", "reversals.tsv"):
        for word, opposite, *tag in _rows(name):
            a = keys[word] if word in keys else keys.setdefault(word, _key(word))
            b = keys[opposite] if opposite in keys else keys.setdefault(opposite, _key(opposite))
            if a is None or b is None or a == b:  # two words with one key cannot be told apart
                continue
            table = indirect if tag == ["indirect"] else direct
            table.setdefault(a, set()).add(b)
            table.setdefault(b, set()).add(a)
    return (
        {key: frozenset(values) for key, values in direct.items()},
        {key: frozenset(values - direct.get(key, set())) for key, values in indirect.items()},
    )


def _units() -> dict[str, Unit]:
    units: dict[str, Unit] = {}
    for alias, canonical, dimension, where in _rows("units.tsv"):
        units[alias.replace("-", " ")] = Unit(canonical, dimension, where == "num")
    return units


@lru_cache(maxsize=1)
def load() -> Lexicon:
    """The lexicon, read once per process; the returned value is never mutated."""
    entities: dict[str, Entity] = {}
    cased: dict[str, Entity] = {}
    longest = 1
    for kind, term, canonical in _rows("entities.tsv"):
        key = " ".join(term.replace("-", " ").split())
        target = cased if key != key.lower() else entities
        target.setdefault(key, Entity(kind, canonical))
        longest = max(longest, len(key.split()))
    direct, indirect = _antonyms()
    units = _units()
    starts = frozenset(key.split()[0].lower() for key in (*entities, *cased) if " " in key)
    unit_starts = frozenset(key.split()[0] for key in units if " " in key) | {"degree", "degrees", "deg", "°"}
    return Lexicon(direct, indirect, units, entities, cased, longest, starts, unit_starts, _english())


def _english() -> frozenset[str]:
    data = resources.files("index.guards").joinpath("data")
    words = set(gzip.decompress(data.joinpath("english_words.txt.gz").read_bytes()).decode("utf-8").split())
    for line in data.joinpath("common_terms.txt").read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            words.update(line.split())
    return frozenset(words)
