"""Two values swapped across a relation that has a direction ("from svn to git" / "from git to svn", "split a
monolith into microservices" / "split microservices into a monolith", "low to high" / "high to low", "older
than" / "younger than" is not this: that is `index.guards.contrast`): both prompts hold the same content words,
two of them changed places, and in each prompt a directional preposition stands between them. They ask
opposite things.

Other reorderings keep the question: a clause moved to the front, an adverb moved ("quickly make money" / "make
money quickly"), a search-style query ("python memory leak in requests" / "memory leak in python requests"), a
swap inside a coordination ("X and Y" / "Y and X"). Pure function of the two prompts; microseconds per pair.
"""

from __future__ import annotations

import re

from index.guards.form import content, rotated
from index.guards.text import normalize, stem, word_set

# Prepositions whose two sides play different parts (source and target, before and after, more and less).
DIRECTIONAL = word_set("to from into onto than over under before after above below towards toward until")
_WORD = re.compile(r"[a-z0-9]+")


def swapped_words(query: str, cached: str) -> tuple[str, str] | None:
    """The first pair of content words that changed places across a directional preposition (query's,
    cached's), else None."""
    left, right = content(query), content(cached)
    if left == right or len(left) < 2 or sorted(left) != sorted(right) or rotated(left, right):
        return None
    a, b = next((x, y) for x, y in zip(left, right, strict=True) if x != y)
    if _across(query, a, b) and _across(cached, b, a):
        return a, b
    return None


def _across(text: str, first: str, second: str) -> bool:
    """In `text`, a directional preposition stands between the word stemming to `first` and the later one
    stemming to `second`."""
    words = _WORD.findall(normalize(text))
    stems = [stem(w) for w in words]
    if first not in stems or second not in stems:
        return False
    i = stems.index(first)
    later = [j for j in range(i + 1, len(stems)) if stems[j] == second]
    return bool(later) and any(w in DIRECTIONAL for w in words[i + 1 : later[0]])
