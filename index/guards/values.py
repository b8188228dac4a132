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
_INITIALS_SKIP = frozenset({"of", "the", "and", "for", "a", "an", "to", "in", "on", "&"})
_MAX_ACRONYM = 6
# Value families that can stand in one another's role; all others are names of things.
_ROLE_GROUP = {"number": "amount", "ordinal": "amount", "time": "amount", "date": "amount", "unit": "unit"}


@dataclass(frozen=True)
class _Side:
    values: tuple[Value, ...]
    # lowercase surface words, used to forgive a value the other prompt spells without its cue
    # (a name written in lowercase, a name inside a headline-cased prompt)
    words: frozenset[str]
    # marker -> the first value after it
    roles: tuple[tuple[str, Value], ...]
    # initials of each run of 2-6 content words ("paid time off" -> "pto"), and the acronyms used
    initials: frozenset[str]
    acronyms: frozenset[str]


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
        tokens = words(text)
        lowered = frozenset(tokens) | {w.lower() for w in _WORD.findall(text)}
        acronyms = frozenset(v.canonical for v in analysis.values if v.source == "acronym")
        return _Side(analysis.values, lowered, analysis.roles, _initials(tokens), acronyms)


def _unmatched(side: _Side, other: _Side) -> list[Value]:
    """Values of `side` that `other` lacks, as multisets of keys; forgiven if `other` spells them plainly."""
    missing = Counter(v.key for v in side.values) - Counter(v.key for v in other.values)
    out: list[Value] = []
    for value in side.values:
        if missing[value.key] <= 0:
            continue
        missing[value.key] -= 1
        if not _forgiven(value, other):
            out.append(value)
    return out


def _forgiven(value: Value, other: _Side) -> bool:
    """`other` carries the value without the cue that made it one here: a lowercase or quoted spelling,
    a headline-cased prompt, or an acronym for the words ("NZ" / "New Zealand", "PTO" / "paid time off")."""
    plain = value.surface.lower().replace("-", " ").split()
    if value.family in {"name", "quote"} and plain and all(w in other.words for w in plain):
        return True
    if value.source == "acronym":
        return value.canonical in other.initials
    content = [w for w in plain if w not in _INITIALS_SKIP]
    return len(content) >= 2 and "".join(w[0] for w in content) in other.acronyms


def _initials(tokens: tuple[str, ...]) -> frozenset[str]:
    content = [t for t in tokens if t not in _INITIALS_SKIP and t[:1].isalpha()]
    return frozenset(
        "".join(w[0] for w in content[i : i + n])
        for n in range(2, _MAX_ACRONYM + 1)
        for i in range(len(content) - n + 1)
    )


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
    for marker, value in q.roles:
        other = c_roles.get(marker)
        if other is None or other.key == value.key or value.key not in c_keys or other.key not in q_keys:
            continue
        if _ROLE_GROUP.get(other.family, "named") != _ROLE_GROUP.get(value.family, "named"):
            continue  # "in Ontario" vs "in two weeks": different slots, not a swap
        if marker != "than" and value.source == other.source == "case":
            continue  # "Is Ann married to Bob" = "Is Bob married to Ann": unknown names, symmetric verbs
        return f"order: '{marker} {value.surface}' vs '{marker} {other.surface}'"
    return ""
