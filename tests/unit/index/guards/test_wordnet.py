"""WordNet relations between two words, from the package's table (base forms, synsets, hypernyms, antonyms)."""

from __future__ import annotations

import pytest

from index.guards.wordnet import Relation, load_wordnet, relation


@pytest.mark.parametrize(("a", "b", "expected"), [
    ("dogs", "dog", Relation.SAME),  # a regular plural
    ("geese", "goose", Relation.SAME),  # the noun exception list
    ("ran", "run", Relation.SAME),  # the verb exception list
    ("happier", "happy", Relation.SAME),  # an adjective rule
    ("Dog", "DOGS", Relation.SAME),  # case is ignored
    ("turn on", "turn_on", Relation.SAME),  # a multi-word lemma, either spelling
    ("fix", "repair", Relation.SYNONYM),
    ("start", "begin", Relation.SYNONYM),
    ("purchase", "buy", Relation.SYNONYM),
    ("buy", "sell", Relation.ANTONYM),
    ("hot", "cold", Relation.ANTONYM),
    ("increase", "decrease", Relation.ANTONYM),
    ("purchase", "sell", Relation.ANTONYM),  # the pointer is lexical (buy/sell), mapped to the synset
    ("change", "update", Relation.BROADER),  # update's hypernym chain reaches change
    ("update", "change", Relation.BROADER),  # either direction
    ("dog", "canine", Relation.BROADER),
    ("delete", "remove", Relation.BROADER),
    ("car", "truck", Relation.SIBLING),
    ("dogs", "cats", Relation.UNRELATED),  # siblings: usual senses, one step up
    ("banana", "apple", Relation.SIBLING),
    ("banana", "democracy", Relation.UNRELATED),
    ("monthly", "yearly", Relation.UNRELATED),
    ("xyzzyq", "dog", Relation.UNKNOWN),
    ("dog", "xyzzyq", Relation.UNKNOWN),
], ids=["plural", "noun-exception", "verb-exception", "adjective-rule", "case", "multi-word", "fix-repair",
        "start-begin", "purchase-buy", "buy-sell", "hot-cold", "increase-decrease", "synset-antonym",
        "change-update", "update-change", "dog-canine", "delete-remove", "car-truck", "dogs-cats", "banana-apple",
        "unrelated", "adjectives-unrelated", "unknown-first", "unknown-second"])
def test_relation(a: str, b: str, expected: Relation) -> None:
    assert relation(a, b) is expected


@pytest.mark.parametrize(("a", "b"), [("buy", "sell"), ("car", "truck"), ("change", "update"), ("dogs", "dog")],
                         ids=["antonym", "sibling", "broader", "same"])
def test_relation_is_symmetric(a: str, b: str) -> None:
    assert relation(a, b) is relation(b, a)


def test_identical_words_are_the_same_even_when_unknown() -> None:
    assert relation("xyzzyq", "XYZZYQ") is Relation.SAME


@pytest.mark.parametrize(("word", "bases"), [
    ("dogs", ("dog",)),
    ("geese", ("goose",)),
    ("boxes", ("box",)),
    ("women", ("woman",)),
    ("repaired", ("repair",)),
    ("running", ("running", "run")),  # itself a lemma (a noun) first, then the verb it inflects
    ("xyzzyq", ()),
], ids=["s", "exception", "xes", "men", "ed", "lemma-and-ing", "unknown"])
def test_base_forms(word: str, bases: tuple[str, ...]) -> None:
    assert load_wordnet().base_forms(word) == bases


def test_synsets_come_most_frequent_sense_first() -> None:
    wordnet = load_wordnet()
    assert wordnet.synsets("dogs")[0] == "n02084071"
    assert wordnet.synsets("xyzzyq") == ()
    assert "dog" in wordnet
    assert "xyzzyq" not in wordnet


def test_loaded_once() -> None:
    assert load_wordnet() is load_wordnet()
