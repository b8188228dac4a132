"""Features of one (request, cached candidate) pair for the judge, shared by training and inference.

Everything here is a pure function of the two prompts, their contexts, the similarities the index already
computed and the entry's label history; nothing embeds. The rule stages contribute what they found (kind and
count of polarity and value differences), never a veto.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from index.guards.alignment import AlignmentStage
from index.guards.polarity import PolarityFindings, PolarityStage
from index.guards.text import FUNCTION_WORDS, stem
from index.guards.text import words as _rule_words
from index.guards.textdiff import opcodes, ratio
from index.guards.values import ValueFindings, ValueStage
from training.judge.surface import FEATURE_NAMES as SURFACE_NAMES
from training.judge.surface import pair_features

MISSING = float("nan")  # the model treats NaN as "not applicable" (no context, single candidate)
_QUESTION_WORDS = frozenset({"what", "how", "why", "when", "where", "who", "which", "whom", "whose", "is", "are",
                             "can", "do", "does", "should", "could", "would", "will"})


@dataclass(frozen=True)
class EntryHistory:
    """How often a cached entry was served and how its served answers were judged (labels of any source)."""

    served: int = 0
    same: int = 0
    different: int = 0

    def __post_init__(self) -> None:
        if min(self.served, self.same, self.different) < 0:
            raise ValueError("history counts must be >= 0")


@dataclass(frozen=True)
class JudgeInput:
    """One candidate for one request. Similarities are cosine similarities in [-1, 1]; `rank` counts from 0
    (most similar first); `margin` is this candidate's similarity minus the best other candidate's (NaN when
    it is the only one). Conversations add the two relevant contexts and their similarity."""

    query: str
    cached: str
    similarity: float
    rank: int = 0
    margin: float = MISSING
    query_context: str | None = None
    cached_context: str | None = None
    context_similarity: float | None = None
    history: EntryHistory = field(default_factory=EntryHistory)


_PAIR_NAMES = ("similarity", "rank", "margin", "top_candidate")
_RULE_NAMES = (
    "polarity_flips", "polarity_cancelled", "polarity_extra_negations", "polarity_negations", "polarity_veto",
    "values_strong", "values_numeric", "values_weak", "values_role_swap", "values_term_swap", "values_count",
    "values_veto",
)
_ALIGN_NAMES = (
    "content_only_query", "content_only_cached", "content_diff_share", "longest_diff_span", "diff_spans",
    "char_ratio", "query_terse", "cached_terse", "terse_differs", "query_question_mark", "cached_question_mark",
)
_CONTEXT_NAMES = (
    "has_context", "context_similarity", "context_same", "context_align_ratio", "context_swap",
    "context_polarity_veto", "context_values_strong", "context_values_veto",
)
_HISTORY_NAMES = ("history_served", "history_same", "history_different", "history_different_share")
FEATURE_NAMES: tuple[str, ...] = (
    *_PAIR_NAMES, *SURFACE_NAMES[1:], *_RULE_NAMES, *_ALIGN_NAMES, *_CONTEXT_NAMES, *_HISTORY_NAMES,
)


class _Rules:
    """The rule stages whose findings become features; built once (word lists load on first use)."""

    def __init__(self) -> None:
        self.polarity = PolarityStage()
        self.values = ValueStage()
        self.alignment = AlignmentStage()


@lru_cache(maxsize=1)
def _rules() -> _Rules:
    return _Rules()


def _rule_features(polarity: PolarityFindings, values: ValueFindings) -> tuple[float, ...]:
    return (
        float(polarity.flips), float(polarity.cancelled), float(polarity.extra_negations),
        float(polarity.negations), float(not polarity.passed),
        float(values.strong), float(values.numeric), float(values.weak), float(values.role_swap),
        float(values.term_swap), float(values.values), float(not values.passed),
    )


@lru_cache(maxsize=4096)
def rule_words(text: str) -> tuple[str, ...]:
    return _rule_words(text)


@lru_cache(maxsize=4096)
def _content(text: str) -> tuple[str, ...]:
    return tuple(stem(w) for w in rule_words(text) if w not in FUNCTION_WORDS)


def _terse(text: str, tokens: tuple[str, ...]) -> bool:
    """Search-style: no question mark and not opening with a question word or auxiliary."""
    return "?" not in text and (not tokens or tokens[0] not in _QUESTION_WORDS)


def _alignment_features(query: str, cached: str) -> tuple[float, ...]:
    qc, cc = _content(query), _content(cached)
    only_q = set(qc) - set(cc)
    only_c = set(cc) - set(qc)
    union = set(qc) | set(cc)
    spans = [
        (i2 - i1, j2 - j1)
        for tag, i1, i2, j1, j2 in opcodes(qc, cc)
        if tag != "equal"
    ]
    qt, ct = rule_words(query), rule_words(cached)
    q_terse, c_terse = _terse(query, qt), _terse(cached, ct)
    return (
        float(len(only_q)), float(len(only_c)), len(only_q | only_c) / max(len(union), 1),
        float(max((max(a, b) for a, b in spans), default=0)), float(len(spans)),
        min(len(query), len(cached)) / max(len(query), len(cached), 1),
        float(q_terse), float(c_terse), float(q_terse != c_terse),
        float("?" in query), float("?" in cached),
    )


def _context_features(item: JudgeInput, rules: _Rules) -> tuple[float, ...]:
    if item.query_context is None or item.cached_context is None:
        return (0.0, *([MISSING] * (len(_CONTEXT_NAMES) - 1)))
    qx, cx = item.query_context, item.cached_context
    similarity = MISSING if item.context_similarity is None else item.context_similarity
    if qx == cx:
        return (1.0, similarity, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0)
    align = ratio(rule_words(qx), rule_words(cx))
    values = rules.values.findings(qx, cx)
    return (
        1.0, similarity, 0.0, align, float(not rules.alignment.check(qx, cx).passed),
        float(not rules.polarity.findings(qx, cx).passed), float(values.strong), float(not values.passed),
    )


def _history_features(history: EntryHistory) -> tuple[float, ...]:
    judged = history.same + history.different
    # Smoothed share of "different" labels: an entry with no labels reads as an even prior, not as zero.
    return (
        float(history.served), float(history.same), float(history.different),
        (history.different + 0.5) / (judged + 1.0),
    )


def judge_features(item: JudgeInput) -> np.ndarray:
    """The feature vector of one candidate, in `FEATURE_NAMES` order (float64; NaN = not applicable)."""
    rules = _rules()
    surface = pair_features(item.query, item.cached, item.similarity)[1:]
    row = (
        item.similarity, float(item.rank), item.margin, float(item.rank == 0),
        *surface,
        *_rule_features(rules.polarity.findings(item.query, item.cached),
                        rules.values.findings(item.query, item.cached)),
        *_alignment_features(item.query, item.cached),
        *_context_features(item, rules),
        *_history_features(item.history),
    )
    return np.asarray(row, dtype=np.float64)


def feature_matrix(items: list[JudgeInput] | tuple[JudgeInput, ...]) -> np.ndarray:
    """Rows of `judge_features`, shape (len(items), len(FEATURE_NAMES))."""
    if not items:
        return np.zeros((0, len(FEATURE_NAMES)), dtype=np.float64)
    return np.stack([judge_features(item) for item in items])
