"""ValueStage: veto a hit when the prompts differ in a value slot (number, unit, date, name, code ...).

"Convert 5 km to miles" and "how many miles is 5 kilometers" carry the same values and pass;
"5 km" vs "5 miles", "Python 3.11" vs "3.12" or "annual" vs "monthly" plans do not.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from index.guards.extract import Extractor, Value
from index.guards.lexicon import Lexicon, load
from index.guards.text import words
from index.stages import StageResult

_WORD = re.compile(r"[\w.+#$€£¥%°-]+")


@dataclass(frozen=True)
class _Side:
    values: tuple[Value, ...]
    # lowercase surface words, used to forgive a value the other prompt spells without its cue
    # (a name written in lowercase, a name inside a headline-cased prompt)
    words: frozenset[str]
    # marker -> key of the first value after it
    roles: tuple[tuple[str, tuple[str, str]], ...]


class ValueStage:
    """Rule stage: the two prompts must carry the same multiset of value slots."""

    name = "values"

    def __init__(self, lexicon: Lexicon | None = None) -> None:
        self._extractor = Extractor(lexicon or load())

    def check(self, query: str, cached: str) -> StageResult:
        q, c = self._side(query), self._side(cached)
        only_q, only_c = _unmatched(q, c), _unmatched(c, q)
        reason = _strong_difference(only_q, only_c) or _weak_difference(only_q, only_c) or _role_swap(q, c)
        if reason:
            return StageResult(self.name, passed=False, reason=reason)
        return StageResult(self.name, passed=True, reason=f"{len(q.values)} values match")

    def _side(self, text: str) -> _Side:
        analysis = self._extractor.analyze(text)
        lowered = frozenset(words(text)) | {w.lower() for w in _WORD.findall(text)}
        return _Side(analysis.values, lowered, analysis.roles)


def _unmatched(side: _Side, other: _Side) -> list[Value]:
    """Values of `side` that `other` lacks, as multisets of keys; forgiven if `other` spells them plainly."""
    missing = Counter(v.key for v in side.values) - Counter(v.key for v in other.values)
    out: list[Value] = []
    for value in side.values:
        if missing[value.key] <= 0:
            continue
        missing[value.key] -= 1
        plain = value.surface.lower().replace("-", " ").split()
        if value.family == "name" and plain and all(w in other.words for w in plain):
            continue
        out.append(value)
    return out


def _describe(value: Value) -> str:
    return f"'{value.surface}'" if value.family in {"name", "quote"} else value.surface


def _strong_difference(only_q: Sequence[Value], only_c: Sequence[Value]) -> str:
    for side, other, where in ((only_q, only_c, "query"), (only_c, only_q, "cached")):
        strong = [v for v in side if v.strong]
        if not strong:
            continue
        first = strong[0]
        counterpart = next((v for v in other if v.family == first.family), None)
        if counterpart is None:
            return f"{first.family}: {_describe(first)} only in {where}"
        pair = (first, counterpart) if where == "query" else (counterpart, first)
        return f"{first.family}: {_describe(pair[0])} vs {_describe(pair[1])}"
    return ""


def _weak_difference(only_q: Sequence[Value], only_c: Sequence[Value]) -> str:
    """Weak values (plan names, units without a number, ordinals) veto only when both prompts differ."""
    for value in only_q:
        counterpart = next((v for v in only_c if v.family == value.family), None)
        if counterpart is not None:
            return f"{value.family}: {_describe(value)} vs {_describe(counterpart)}"
    return ""


def _role_swap(q: _Side, c: _Side) -> str:
    """Same values, but a marker points at a different one of them: "km to miles" vs "miles to km"."""
    c_roles = dict(c.roles)
    q_keys = {v.key for v in q.values}
    c_keys = {v.key for v in c.values}
    for marker, key in q.roles:
        other = c_roles.get(marker)
        if other is not None and other != key and key in c_keys and other in q_keys:
            return f"order: '{marker} {key[1]}' vs '{marker} {other[1]}'"
    return ""
