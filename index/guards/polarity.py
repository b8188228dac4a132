"""PolarityStage: veto a hit when one prompt negates or reverses the other.

"Is the API rate limited?" vs "Is the API not rate limited?" (a negation on one side only) and
"enable 2FA" vs "disable 2FA" (an antonym in the differing words) are vetoed; "Is X not allowed?" vs
"Is X disallowed?" flips twice (negation + antonym, next to each other) and passes.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from index.guards.lexicon import Lexicon, load
from index.guards.text import differing_spans, stem, words
from index.stages import StageResult

NEGATION_CUES = frozenset(
    {"not", "no", "never", "without", "none", "nobody", "nothing", "neither", "nor", "nowhere", "noone", "non"}
)  # "non" is what is left of "non-blocking" once hyphens split words
# Prefixes that negate a word: possible/impossible, install/uninstall, connect/disconnect.
_NEGATING_PREFIXES = ("non", "un", "in", "im", "il", "ir", "dis", "de")
_MIN_BASE = 4
# A negation cancels an antonym only when it governs it: "not allowed" vs "disallowed".
_CANCEL_WINDOW = 3


@dataclass(frozen=True)
class _Parsed:
    tokens: tuple[str, ...]
    stems: tuple[str, ...]
    # positions of negation cues that negate (not "whether or not", "not only", "no matter")
    negations: tuple[int, ...]


@dataclass(frozen=True)
class _Flip:
    q_word: str
    c_word: str
    q_index: int
    c_index: int


def _negations(tokens: tuple[str, ...]) -> tuple[int, ...]:
    found: list[int] = []
    for i, token in enumerate(tokens):
        if token not in NEGATION_CUES:
            continue
        before = tokens[i - 1] if i else ""
        after = tokens[i + 1] if i + 1 < len(tokens) else ""
        if before == "or" and token in {"not", "no"}:
            continue  # "whether or not", "yes or no"
        if (token, after) in {("not", "only"), ("no", "matter"), ("no", "doubt")}:
            continue
        if token == "no" and after[:1].isdigit():
            continue  # "no. 5"
        if token == "nor" and "neither" in tokens[:i]:
            continue  # "neither ... nor" is one negation
        found.append(i)
    return tuple(found)


class PolarityStage:
    """Rule stage: the two prompts must agree in negation and must not swap a word for its opposite."""

    name = "polarity"

    def __init__(self, lexicon: Lexicon | None = None) -> None:
        self._antonyms = (lexicon or load()).antonyms

    def check(self, query: str, cached: str) -> StageResult:
        q, c = self._parse(query), self._parse(cached)
        flips = self._flips(q, c)
        extra = len(q.negations) - len(c.negations)
        if not flips and extra == 0:
            return StageResult(self.name, passed=True, reason="same polarity")
        if len(flips) == 1 and abs(extra) == 1 and self._cancels(q, c, flips[0], extra):
            flip = flips[0]
            cue = self._extra_cue(q if extra > 0 else c, c if extra > 0 else q)
            return StageResult(
                self.name, passed=True, reason=f"double flip cancels: '{cue}' + {flip.q_word}/{flip.c_word}"
            )
        if flips:
            flip = flips[0]
            return StageResult(self.name, passed=False, reason=f"antonym: {flip.q_word}/{flip.c_word}")
        side, other, where = (q, c, "query") if extra > 0 else (c, q, "cached")
        cue = self._extra_cue(side, other)
        return StageResult(self.name, passed=False, reason=f"negation: '{cue}' only in {where}")

    def _parse(self, text: str) -> _Parsed:
        tokens = words(text)
        return _Parsed(tokens, tuple(stem(t) for t in tokens), _negations(tokens))

    def _flips(self, q: _Parsed, c: _Parsed) -> list[_Flip]:
        """Opposite word pairs between the differing spans, each word used once; moved words ignored."""
        q_only: list[int] = []
        c_only: list[int] = []
        for i1, i2, j1, j2 in differing_spans(q.stems, c.stems):
            q_only.extend(range(i1, i2))
            c_only.extend(range(j1, j2))
        moved = Counter(q.stems[i] for i in q_only) & Counter(c.stems[j] for j in c_only)
        q_only = _drop_moved(q_only, q.stems, moved)
        c_only = _drop_moved(c_only, c.stems, moved)
        flips: list[_Flip] = []
        used: set[int] = set()
        for i in q_only:
            if q.tokens[i] in NEGATION_CUES:
                continue
            for j in c_only:
                if j in used or c.tokens[j] in NEGATION_CUES:
                    continue
                if self._opposite(q.tokens[i], q.stems[i], c.tokens[j], c.stems[j]):
                    flips.append(_Flip(q.tokens[i], c.tokens[j], i, j))
                    used.add(j)
                    break
        return flips

    def _opposite(self, a: str, a_stem: str, b: str, b_stem: str) -> bool:
        if b_stem in self._antonyms.get(a_stem, ()) or b in self._antonyms.get(a, ()):
            return True
        return _prefix_negated(a, b) or _prefix_negated(b, a)

    def _cancels(self, q: _Parsed, c: _Parsed, flip: _Flip, extra: int) -> bool:
        """The extra negation sits just before its side's half of the antonym pair ("not allowed")."""
        side, index = (q, flip.q_index) if extra > 0 else (c, flip.c_index)
        if any(side.tokens[n] == "without" for n in side.negations):
            return False  # with/without is a reversal of its own, never a double negative
        return any(0 < index - n <= _CANCEL_WINDOW for n in side.negations)

    @staticmethod
    def _extra_cue(side: _Parsed, other: _Parsed) -> str:
        """The negation cue `side` has more of than `other` (for the reason)."""
        counts = Counter(side.tokens[n] for n in side.negations)
        counts.subtract(Counter(other.tokens[n] for n in other.negations))
        return max(counts, key=lambda cue: counts[cue])


def _drop_moved(indexes: list[int], stems: tuple[str, ...], moved: Counter[str]) -> list[int]:
    budget = Counter(moved)
    kept: list[int] = []
    for i in indexes:
        if budget[stems[i]] > 0:
            budget[stems[i]] -= 1
        else:
            kept.append(i)
    return kept


def _prefix_negated(word: str, base: str) -> bool:
    """`word` is `base` with a negating prefix: unlimited/limited, disconnect/connect."""
    return any(
        word == prefix + base or word == prefix + "-" + base
        for prefix in _NEGATING_PREFIXES
        if len(base) >= _MIN_BASE
    )
