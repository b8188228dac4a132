"""An action and its opposite, read from the words' own form: when one prompt has a content word that the other
lacks, and the other has the same word under an opposing prefix ("pin" / "unpin", "install" / "uninstall",
"compress" / "decompress", "encrypt" / "decrypt", "upload" / "download", "include" / "exclude"), the two ask
opposite things. English builds these opposites productively, so the check covers words no list holds.

Pure function of the two prompts; the words compared are the content words of `index.guards.form`.
"""

from __future__ import annotations

from functools import lru_cache
from itertools import product

from index.guards.form import content

# Prefixes that negate or reverse a stem, alone ("" <-> prefix) or against each other.
NEGATING = ("un", "de", "dis", "non", "in", "im", "il", "ir", "anti", "mis")
OPPOSED_PAIRS = (("en", "de"), ("in", "de"), ("in", "ex"), ("im", "ex"), ("up", "down"), ("in", "out"),
                 ("over", "under"), ("pre", "post"), ("inc", "dec"), ("max", "min"), ("on", "off"))
# The stem left after a prefix must be a word, not a fragment ("in" + "k" is not "ink"'s opposite).
MIN_STEM = 3


_PREFIXES = frozenset(p for pair in OPPOSED_PAIRS for p in pair) | frozenset(NEGATING)


@lru_cache(maxsize=16384)
def _bases(word: str) -> frozenset[tuple[str, str]]:
    """(prefix, rest) readings of `word`, including the bare word with no prefix."""
    out = {("", word)}
    for prefix in _PREFIXES:
        if word.startswith(prefix) and len(word) - len(prefix) >= MIN_STEM:
            out.add((prefix, word[len(prefix):]))
    return frozenset(out)


# Every candidate of every request pairs its words with the request's: the same word pairs recur.
@lru_cache(maxsize=65536)
def _opposed(left: str, right: str) -> bool:
    for (p, a), (q, b) in product(_bases(left), _bases(right)):
        if a != b or p == q:
            continue
        if (p == "" and q in NEGATING) or (q == "" and p in NEGATING):
            return True
        if (p, q) in OPPOSED_PAIRS or (q, p) in OPPOSED_PAIRS:
            return True
    return False


def opposed(left: str, right: str) -> bool:
    """Are the two words opposites by their prefixes ("enable" / "disable", "upload" / "download")?"""
    return _opposed(left, right)


def opposed_words(query: str, cached: str) -> tuple[str, str] | None:
    """A pair of words, one only in each prompt, that are opposites by their prefixes; None when there is none."""
    left, right = content(query), content(cached)
    only_left = [w for w in dict.fromkeys(left) if w not in right]
    only_right = [w for w in dict.fromkeys(right) if w not in left]
    for a, b in product(only_left, only_right):
        if _opposed(a, b):
            return a, b
    return None
