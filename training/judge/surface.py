"""Surface features of a prompt pair for the feature-based verifier candidate (no model, pure functions).

The caller supplies the MiniLM cosine and, optionally, the rule stages' verdicts; everything else is
computed here from word alignment, so the same code serves training and inference.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import lru_cache

from index.guards.textdiff import opcodes

_WORD = re.compile(r"[a-z0-9]+(?:['.][a-z0-9]+)*")
_NUMBER = re.compile(r"^\d+(?:\.\d+)*$")
_CAPITALISED = re.compile(r"\b[A-Z][a-zA-Z0-9]+\b")
NEGATION_CUES = frozenset(
    {"not", "no", "never", "none", "nobody", "nothing", "nowhere", "neither", "nor", "without", "cannot"}
)
QUESTION_WORDS = frozenset({"what", "how", "why", "when", "where", "who", "which", "whom", "whose"})

FEATURE_NAMES: tuple[str, ...] = (
    "cosine",
    "log_len_a",
    "log_len_b",
    "len_ratio",
    "jaccard",
    "align_ratio",
    "replaced_tokens",
    "inserted_tokens",
    "replace_spans",
    "negation_count_diff",
    "negation_parity_differs",
    "numbers_only_one_side",
    "number_mismatch",
    "capitalised_only_one_side",
    "question_word_differs",
)
GUARD_FEATURE_NAMES: tuple[str, ...] = ("polarity_passed", "values_passed")


@dataclass(frozen=True)
class GuardSignals:
    """The rule stages' verdicts on the pair (1.0 passed, 0.0 vetoed)."""

    polarity_passed: float
    values_passed: float


@lru_cache(maxsize=4096)  # a cached prompt meets many queries; tuples are immutable, so sharing is safe
def words(text: str) -> tuple[str, ...]:
    """Lowercase word tokens with `n't` split off as `not`, so "isn't" and "is not" align."""
    lowered = text.lower().replace("’", "'").replace("can't", "can not").replace("won't", "will not")
    lowered = re.sub(r"(\w)n't\b", r"\1 not", lowered)
    return tuple(_WORD.findall(lowered))


def _negations(tokens: tuple[str, ...]) -> int:
    return sum(1 for token in tokens if token in NEGATION_CUES)


def _first_question_word(tokens: tuple[str, ...]) -> str:
    return next((token for token in tokens if token in QUESTION_WORDS), "")


def _alignment(a: tuple[str, ...], b: tuple[str, ...]) -> tuple[float, float, float, float]:
    """(ratio, replaced tokens, inserted+deleted tokens, replace spans) of a word-level diff (bounded work:
    `index.guards.textdiff`)."""
    replaced = inserted = spans = matched = 0
    for tag, i1, i2, j1, j2 in opcodes(a, b):
        if tag == "equal":
            matched += i2 - i1
        if tag == "replace":
            replaced += max(i2 - i1, j2 - j1)
            spans += 1
        elif tag in ("insert", "delete"):
            inserted += (i2 - i1) + (j2 - j1)
    total = len(a) + len(b)
    return (2.0 * matched / total if total else 1.0), float(replaced), float(inserted), float(spans)


def pair_features(a: str, b: str, cosine: float, guards: GuardSignals | None = None) -> tuple[float, ...]:
    """Feature vector in `FEATURE_NAMES` order, followed by `GUARD_FEATURE_NAMES` when `guards` is given."""
    wa, wb = words(a), words(b)
    set_a, set_b = set(wa), set(wb)
    union = set_a | set_b
    ratio, replaced, inserted, spans = _alignment(wa, wb)
    nums_a = {token for token in wa if _NUMBER.match(token)}
    nums_b = {token for token in wb if _NUMBER.match(token)}
    caps_a = {match.lower() for match in _CAPITALISED.findall(a)[1:]}
    caps_b = {match.lower() for match in _CAPITALISED.findall(b)[1:]}
    neg_a, neg_b = _negations(wa), _negations(wb)
    values = (
        cosine,
        math.log1p(len(wa)),
        math.log1p(len(wb)),
        min(len(wa), len(wb)) / max(len(wa), len(wb), 1),
        len(set_a & set_b) / max(len(union), 1),
        ratio,
        replaced,
        inserted,
        spans,
        float(abs(neg_a - neg_b)),
        float(neg_a % 2 != neg_b % 2),
        float(len(nums_a ^ nums_b)),
        float(bool(nums_a) and bool(nums_b) and nums_a != nums_b),
        float(len((caps_a - set_b) | (caps_b - set_a))),
        float(_first_question_word(wa) != _first_question_word(wb)),
    )
    if guards is None:
        return values
    return (*values, guards.polarity_passed, guards.values_passed)
