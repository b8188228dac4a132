"""Vetoes no decision mode overrides, checked before any similarity feature is computed: a pair longer than the
decision reads (`DEJA_MAX_DECISION_CHARS`), and words that differ only by their accents ("año" / "ano",
"schön" / "schon", "pâte" / "pâté"), which name different things however close their embeddings are.

Both checks are linear in the length of the two texts. The step `safety` of `index.match.steps` calls
`pair_veto` in every mode, before any step that could serve, so a pair vetoed here is never served.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

from index.request.keys import DEFAULT_MAX_DECISION_CHARS
from index.request.textnorm import matching_text

LENGTH_STAGE = "length"
ACCENT_STAGE = "accents"
_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class Veto:
    """Which check vetoed the pair (a stage name in the decision log) and why."""

    stage: str
    reason: str


def _fold(word: str) -> str:
    """The word without its combining marks: "pâté" -> "pate"."""
    return "".join(c for c in unicodedata.normalize("NFD", word) if not unicodedata.combining(c))


@lru_cache(maxsize=4096)
def _accented_words(text: str) -> frozenset[str]:
    return frozenset(_WORD.findall(matching_text(text).lower()))


def accent_swap(a: str, b: str) -> tuple[str, str] | None:
    """A word of `a` and a word of `b` that differ only by accents, each missing from the other text, if any."""
    words_a, words_b = _accented_words(a), _accented_words(b)
    only_b: dict[str, str] = {}
    for word in words_b - words_a:
        only_b.setdefault(_fold(word), word)
    for word in words_a - words_b:
        other = only_b.get(_fold(word))
        if other is not None:
            return word, other
    return None


def veto(query: str, cached: str, max_chars: int = DEFAULT_MAX_DECISION_CHARS) -> Veto | None:
    """Why `cached` may never serve `query` whatever their similarity, or None."""
    if max(len(query), len(cached)) > max_chars:
        # Only entries written before the cap (or under a larger one) get here: requests past it are exact-only.
        return Veto(LENGTH_STAGE, f"prompt longer than {max_chars} characters")
    swap = accent_swap(query, cached)
    if swap is not None:
        return Veto(ACCENT_STAGE, f"accent changes the word: '{swap[0]}' vs '{swap[1]}'")
    return None


def pair_veto(query: str, cached: str, query_context: str | None, cached_context: str | None,
              max_chars: int = DEFAULT_MAX_DECISION_CHARS) -> Veto | None:
    """`veto` over the prompts, then over the two relevant contexts of a conversation when they differ."""
    found = veto(query, cached, max_chars)
    if found is None and query_context is not None and cached_context is not None and query_context != cached_context:
        inner = veto(query_context, cached_context, max_chars)
        found = None if inner is None else Veto(f"{inner.stage}@context", inner.reason)
    return found
