"""ValueStage: veto a hit when the prompts differ in a value slot: a number, unit, date, version,
quoted string, identifier or named thing ("Python 3.11" vs "3.12", "annual" vs "monthly" plans).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from index.guards.extract import Extractor, Value
from index.guards.lexicon import Lexicon, load
from index.guards.stages import StepResult
from index.guards.terms import TermCheck
from index.guards.text import CACHE_SIZE, words

_WORD = re.compile(r"[\w.+#$€£¥%°-]+")
_INITIALS_SKIP = frozenset({"of", "the", "and", "for", "a", "an", "to", "in", "on", "&"})
# Value families that can stand in one another's role; all others are names of things.
_ROLE_GROUP = {"number": "amount", "ordinal": "amount", "time": "amount", "date": "amount", "unit": "unit"}


@dataclass(frozen=True)
class ValueFindings:
    """Value differences of a pair: unmatched strong values (of which `numeric`: numbers, ordinals, times,
    dates, units), unmatched weak ones, a role swap, a swapped unknown term, values seen on both sides."""

    strong: int
    numeric: int
    weak: int
    role_swap: bool
    term_swap: bool
    values: int
    reason: str
    passed: bool

    def result(self, stage: str) -> StepResult:
        return StepResult(stage, passed=self.passed, reason=self.reason)


@dataclass(frozen=True)
class _Side:
    values: tuple[Value, ...]
    # lowercase surface words, used to forgive a value the other prompt spells without its cue
    # (a name written in lowercase, a name inside a headline-cased prompt)
    words: frozenset[str]
    tokens: tuple[str, ...]
    # marker -> the first value after it
    roles: tuple[tuple[str, Value], ...]
    # the acronyms used
    acronyms: frozenset[str]

    def spells(self, acronym: str) -> bool:
        """Some run of content words here has `acronym` as initials ("paid time off" -> "pto")."""
        content = [t for t in self.tokens if t not in _INITIALS_SKIP and t[:1].isalpha()]
        initials = "".join(w[0] for w in content)
        return len(acronym) >= 2 and acronym in initials


class ValueStage:
    """Rule stage: the two prompts must carry the same multiset of value slots.

    Each prompt becomes a multiset of canonical values (see `extract`); they are compared as multisets, so
    reordering passes ("convert 5 km to miles" / "how many miles is 5 kilometers"). A strong value (number,
    quantity, date, time, quoted text, code, a listed or capitalised name) missing on either side vetoes; a
    weak one (plan or fare tier, period, unit without a number, ordinal, acronym, tool) vetoes only against
    another unmatched value of its family ("annual" vs "monthly"). Two more checks: the same values in
    swapped roles ("km to miles" vs "miles to km"), and a one-for-one swap of words outside the English
    vocabulary ("on proxmox" vs "on vmware", see `terms`).
    """

    name = "values"

    def __init__(self, lexicon: Lexicon | None = None, cache_size: int = CACHE_SIZE) -> None:
        """`cache_size` prompts keep their analysis (LRU); 0 analyses every prompt afresh."""
        lex = lexicon or load()
        self._extractor = Extractor(lex)
        self._terms = TermCheck(lex)
        # A cached prompt is checked against many queries: analyse each text once (bounded, thread-safe).
        self._side = lru_cache(maxsize=cache_size)(self._uncached_side)

    def check(self, query: str, cached: str) -> StepResult:
        return self.findings(query, cached).result(self.name)

    def findings(self, query: str, cached: str) -> ValueFindings:
        """The value slots that differ between the prompts (`check` reads the verdict)."""
        q, c = self._side(query), self._side(cached)
        only_q, only_c = _loosely_paired(_unmatched(q, c), _unmatched(c, q))
        strong = [v for v in (*only_q, *only_c) if v.strong]
        weak = [v for v in (*only_q, *only_c) if not v.strong]
        role = _role_swap(q, c)
        term = self._terms.difference(q.tokens, c.tokens)
        reason = _strong_difference(only_q, only_c) or _weak_difference(only_q, only_c) or role or term
        return ValueFindings(
            strong=len(strong),
            numeric=sum(1 for v in strong if v.family in _ROLE_GROUP),
            weak=len(weak),
            role_swap=bool(role),
            term_swap=bool(term),
            values=len(q.values) + len(c.values),
            reason=reason or f"{len(q.values)} values match",
            passed=not reason,
        )

    def _uncached_side(self, text: str) -> _Side:
        analysis = self._extractor.analyze(text)
        tokens = words(text)
        lowered = frozenset(tokens) | {w.lower() for w in _WORD.findall(text)}
        acronyms = frozenset(v.canonical for v in analysis.values if v.source == "acronym")
        return _Side(analysis.values, lowered, tokens, analysis.roles, acronyms)


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
    plain = _WORD.findall(value.surface.lower().replace("-", " "))
    if value.family in {"name", "quote"} and plain and all(w in other.words for w in plain):
        return True
    if value.source == "acronym":
        return other.spells(value.canonical)
    content = [w for w in plain if w not in _INITIALS_SKIP]
    return len(content) >= 2 and "".join(w[0] for w in content) in other.acronyms


def _loosely_paired(only_q: list[Value], only_c: list[Value]) -> tuple[list[Value], list[Value]]:
    """Drop pairs that differ only in spelling a unit or an ordinal: "$300,000" / "300k",
    "World War II" / "the Second World War"."""
    rest_c = list(only_c)
    rest_q: list[Value] = []
    for value in only_q:
        partner = next((v for v in rest_c if _loose_match(value, v)), None)
        if partner is None:
            rest_q.append(value)
        else:
            rest_c.remove(partner)
    return rest_q, rest_c


def _loose_match(a: Value, b: Value) -> bool:
    amount = _amount(a)
    if amount is None or amount != _amount(b):
        return False
    # the same number, once with a unit and once without, or once as an ordinal
    return a.family != b.family or (" " in a.canonical) != (" " in b.canonical)


def _amount(value: Value) -> str | None:
    """The bare number of a number, quantity ("5 km" -> "5") or ordinal; None for other values."""
    if value.family in {"number", "ordinal"}:
        return value.canonical.split(" ", 1)[0]
    return None


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
