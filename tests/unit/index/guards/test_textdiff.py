"""Bounded word alignment: difflib's answer for ordinary prompts, a linear and conservative one for long ones."""

from __future__ import annotations

import random
from difflib import SequenceMatcher

import pytest

from index.guards.textdiff import MAX_ALIGNED, opcodes, ratio

WORDS = ["the", "a", "key", "rate", "limit", "server", "client", "enable", "disable", "not"]


def tokens(n: int, seed: int) -> tuple[str, ...]:
    rng = random.Random(seed)
    return tuple(rng.choice(WORDS) for _ in range(n))


@pytest.mark.parametrize("seed", range(5))
def test_short_sequences_get_difflibs_exact_answer(seed: int) -> None:
    a, b = tokens(60, seed), tokens(55, seed + 100)
    matcher = SequenceMatcher(None, a, b, autojunk=False)
    assert opcodes(a, b) == matcher.get_opcodes()
    assert ratio(a, b) == pytest.approx(matcher.ratio())


def test_long_near_duplicates_align_around_the_changed_word() -> None:
    a = tokens(20 * MAX_ALIGNED, 1)
    b = (*a[:5000], "unlimited", *a[5001:])
    assert opcodes(a, b) == [("equal", 0, 5000, 0, 5000), ("replace", 5000, 5001, 5000, 5001),
                             ("equal", 5001, len(a), 5001, len(b))]
    assert ratio(a, b) == pytest.approx(2 * (len(a) - 1) / (2 * len(a)))


def test_long_middle_counts_as_one_differing_block() -> None:
    a, b = tokens(3 * MAX_ALIGNED, 2), tokens(3 * MAX_ALIGNED, 3)
    a, b = ("same", *a, "end"), ("same", *b, "end")
    assert opcodes(a, b) == [("equal", 0, 1, 0, 1), ("replace", 1, len(a) - 1, 1, len(b) - 1),
                             ("equal", len(a) - 1, len(a), len(b) - 1, len(b))]
    # conservative: never more alike than difflib says
    assert ratio(a, b) <= SequenceMatcher(None, a, b, autojunk=False).ratio()


@pytest.mark.parametrize("a, b, expected", [
    pytest.param(("x",) * 500, ("x",) * 500 + ("y",), [("equal", 0, 500, 0, 500), ("insert", 500, 500, 500, 501)],
                 id="insert"),
    pytest.param(("x",) * 501, ("x",) * 500, [("equal", 0, 500, 0, 500), ("delete", 500, 501, 500, 500)],
                 id="delete"),
])
def test_long_insertions_and_deletions(a: tuple[str, ...], b: tuple[str, ...],
                                       expected: list[tuple[str, int, int, int, int]]) -> None:
    assert opcodes(a, b) == expected
