"""A changed slot: what changed between two prompts that share their frame, read from WordNet and the grammar."""

from __future__ import annotations

import pytest

from index.guards.slots import (
    ADDED,
    COORDINATOR,
    DROPPED,
    QUANTIFIER,
    REFERENT,
    ROLES,
    TENSE,
    VOICE,
    changed_slot,
)
from index.guards.wordnet import Relation


@pytest.mark.parametrize(("a", "b", "relation"), [
    ("What are the side effects of the flu vaccine for adults?",
     "What are the side effects of the flu vaccine for kids?", Relation.UNRELATED),
    ("What is the wholesale price of coffee beans?", "What is the retail price of coffee beans?", Relation.ANTONYM),
    ("Can I paint the kitchen walls with latex?", "Can I paint the bathroom walls with latex?", Relation.SIBLING),
    ("Is Justin kidnapping Jason?", "Is Jason kidnapping Justin?", ROLES),
    ("If Jack and Leah were married, would her family be happy?",
     "If Jack and Leah were married, would Jack's family be happy?", REFERENT),
    ("Is Daniel Cruz an accountant or an organizer?", "Is Daniel Cruz an accountant and an organizer?", COORDINATOR),
    ("Is Nathan Russell a journalist?", "Was Nathan Russell a journalist?", TENSE),
    ("Did Scott buy the newspaper?", "Was Scott bought by the newspaper?", VOICE),
    ("Should I take ibuprofen before or after eating?", "Should I take ibuprofen after eating?", DROPPED),
    ("Do some crystals grow as large as baseballs?", "Do all crystals grow as large as baseballs?", QUANTIFIER),
    ("Is Madison Smith an artist?", "Is Madison Smith an aspiring artist?", ADDED),
], ids=["unrelated-swap", "antonym", "sibling", "roles", "referent", "coordinator", "tense", "voice",
        "dropped-alternative", "quantifier", "modifier"])
def test_a_changed_slot_is_named_by_what_changed(a: str, b: str, relation: str) -> None:
    found = changed_slot(a, b)
    assert found is not None and found.relation == relation


@pytest.mark.parametrize(("a", "b"), [
    ("How do I fix a leaky faucet?", "How do I repair a leaky faucet?"),
    ("How do I change my email address?", "How do I update my email address?"),
    ("How do I merge two dictionaries in Python?", "How do I merge two dicts in Python?"),
    ("What does HTTP 404 mean?", "What does the HTTP 404 error mean?"),
    ("What is the capital of France?", "What's the capital city of France?"),
    ("Does Nicholas love Megan?", "Is Megan loved by Nicholas?"),
    ("What's the difference between a virus and bacteria?", "What is the difference between bacteria and a virus?"),
    ("How do I undo the last git commit?", "How can I undo my last commit in git?"),
], ids=["synonym", "broader", "clipped", "noun-added-after", "noun-added", "passive", "coordination-order",
        "compound-order"])
def test_a_rewording_changes_no_slot(a: str, b: str) -> None:
    assert changed_slot(a, b) is None


def test_alternatives_and_scope_changes_are_told_apart() -> None:
    sibling = changed_slot("Can I paint the kitchen walls with latex?", "Can I paint the bathroom walls with latex?")
    dropped = changed_slot("Should I take ibuprofen before or after eating?", "Should I take ibuprofen after eating?")
    unrelated = changed_slot("What are the side effects of the flu vaccine for adults?",
                             "What are the side effects of the flu vaccine for kids?")
    assert sibling is not None and sibling.alternative and not sibling.scope
    assert dropped is not None and dropped.scope
    assert unrelated is not None and not unrelated.alternative and not unrelated.scope
