"""Unknown terms swapped one for one ("set up X on proxmox" vs "... on vmware"): a word outside the
English vocabulary is most often a product, tool or library name, so such a swap names another thing.
"""

from __future__ import annotations

from collections.abc import Iterator

from index.guards.lexicon import Lexicon
from index.guards.text import FUNCTION_WORDS, stem
from index.guards.textdiff import opcodes

_MAX_BLOCK = 2  # replaced runs longer than this are rephrasing, not a slot swap
_TYPO_DISTANCE = 2
_SUFFIXES = ("s", "es", "ed", "d", "ing", "er", "ers", "est", "ly", "ies", "ied", "ier", "iest")
_PREFIXES = ("re", "pre", "un", "de", "dis", "non", "sub", "over", "under", "multi", "co", "auto", "mis", "inter")


class TermCheck:
    """Finds a one-for-one swap of unknown (non-dictionary) words between two token sequences."""

    def __init__(self, lexicon: Lexicon) -> None:
        self._lex = lexicon

    def difference(self, a: tuple[str, ...], b: tuple[str, ...]) -> str:
        for x, y in _swaps(a, b):
            if x in b and y in a:
                continue  # the two words trade places: a reordering, which the role check judges
            if self._different_terms(x, y):
                return f"term: '{x}' vs '{y}'"
        return ""

    def _different_terms(self, x: str, y: str) -> bool:
        if not (x.isalpha() and y.isalpha()) or x in FUNCTION_WORDS or y in FUNCTION_WORDS:
            return False
        if self._known(x) and self._known(y):
            return False
        if stem(x) == stem(y) or _abbreviates(x, y) or _abbreviates(y, x):
            return False
        if _distance(x, y) <= _TYPO_DISTANCE:
            return False
        entity_x, entity_y = self._lex.entities.get(x), self._lex.entities.get(y)
        return not (entity_x is not None and entity_y is not None and entity_x == entity_y)

    def _known(self, word: str) -> bool:
        """In the vocabulary, allowing regular inflections and common prefixes (recompute, preprocess)."""
        bases = [word] + [word.removeprefix(p) for p in _PREFIXES if word.startswith(p) and len(word) > len(p) + 3]
        return any(self._known_inflected(base) for base in bases)

    def _known_inflected(self, word: str) -> bool:
        english = self._lex.english
        if word in english:
            return True
        for suffix in _SUFFIXES:
            base = word.removesuffix(suffix)
            if base == word or len(base) < 2:
                continue
            candidates = (base, base + "e", base + "y", base[:-1] if base[-1:] == base[-2:-1] else base)
            if any(c in english for c in candidates):
                return True
        return False


def _swaps(a: tuple[str, ...], b: tuple[str, ...]) -> Iterator[tuple[str, str]]:
    """Word pairs of equal-length replaced runs (at most _MAX_BLOCK words), position by position."""
    for tag, i1, i2, j1, j2 in opcodes(a, b):
        if tag == "replace" and i2 - i1 == j2 - j1 <= _MAX_BLOCK:
            yield from zip(a[i1:i2], b[j1:j2], strict=True)


def _abbreviates(short: str, long: str) -> bool:
    """cfg/config, db/database, pls/please, repo/repository: same first letter, letters in order."""
    if len(short) >= len(long) or short[0] != long[0]:
        return False
    rest = iter(long)
    return all(ch in rest for ch in short)


def _distance(x: str, y: str) -> int:
    """Levenshtein distance, stopping early once it exceeds the typo allowance."""
    if abs(len(x) - len(y)) > _TYPO_DISTANCE:
        return _TYPO_DISTANCE + 1
    previous = list(range(len(y) + 1))
    for i, cx in enumerate(x, 1):
        current = [i]
        for j, cy in enumerate(y, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (cx != cy)))
        previous = current
    return previous[-1]
