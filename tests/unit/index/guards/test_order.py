"""Values swapped across a directional preposition are a different question; other reorderings are not."""

from __future__ import annotations

import pytest

from index.guards.order import swapped_words


@pytest.mark.parametrize(("query", "cached"), [
    ("threads about migrating from svn to git", "threads about migrating from git to svn"),
    ("split monolith into microservices pitfalls", "split microservices into monolith pitfalls"),
    ("sort numbers low to high in python", "sort numbers high to low in python"),
    ("How do I convert Celsius to Fahrenheit?", "How do I convert Fahrenheit to Celsius?"),
], ids=["from-to", "into", "low-high", "convert"])
def test_values_swapped_across_a_direction_are_found(query: str, cached: str) -> None:
    assert swapped_words(query, cached) is not None


@pytest.mark.parametrize(("query", "cached"), [
    ("how to quickly make money ?", "how to make money quickly ?"),  # an adverb moved
    ("python memory leak in requests", "memory leak in python requests"),  # search-style, no direction
    ("difference between TCP and UDP", "difference between UDP and TCP"),  # a coordination
    ("On Windows 11, how do I take a screenshot?", "How do I take a screenshot on Windows 11?"),  # a rotation
    ("How do I reset my password?", "How can I reset my password?"),  # the same order
    ("convert USD to EUR", "convert USD to GBP"),  # another value, not a swap (the values stage's job)
], ids=["adverb", "search-style", "coordination", "rotation", "same-order", "other-value"])
def test_other_reorderings_are_not_swaps(query: str, cached: str) -> None:
    assert swapped_words(query, cached) is None
