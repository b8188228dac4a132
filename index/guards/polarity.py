"""PolarityStage: veto a hit when one prompt negates or reverses the other ("Is the API rate limited?"
vs "Is the API not rate limited?", "enable 2FA" vs "disable 2FA"), while double flips cancel.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from itertools import pairwise

from index.guards.lexicon import Lexicon, load
from index.guards.stages import StepResult
from index.guards.text import CACHE_SIZE, FUNCTION_WORDS, differing_spans, stem, words

NEGATION_CUES = frozenset(
    {"not", "no", "never", "without", "none", "nobody", "nothing", "neither", "nor", "nowhere", "noone", "non"}
)  # "non" is what is left of "non-blocking" once hyphens split words
# Prefixes that negate a word: possible/impossible, install/uninstall, connect/disconnect.
_NEGATING_PREFIXES = frozenset({"non", "un", "in", "im", "il", "ir", "dis", "de"})
_MIN_BASE = 4
# A negation cancels an antonym only when it governs it: "not allowed" vs "disallowed".
_CANCEL_WINDOW = 4
_STRONG, _WEAK = 2, 1
_NONE: frozenset[str] = frozenset()
_SHORT_PROMPT = 16
# Verbs that carry a negation ("refuse to X" ~ "not X"): counted like "not", so "avoid giving" and
# "refuse to provide" agree, while "Should AI refuse X?" vs "Should AI do X?" does not.
_ALWAYS_NEGATING = frozenset(stem(w) for w in ("prevent", "avoid", "withhold", "omit", "except", "unable", "absent",
                                                "absence", "lack", "lacking"))
# Words that negate only before the next one: "other than X", "fail to X", "rather than X".
_NEGATING_BEFORE = frozenset({("other", "than"), ("fail", "to"), ("failed", "to"), ("fails", "to"),
                              ("rather", "than"), ("instead", "of"), ("separate", "from"), ("different", "from")})
# "but" negates after a word for everything: "anything but X", "anywhere but X", "all but X".
_BUT_AFTER = frozenset({"anything", "anywhere", "anyone", "anybody", "everything", "everywhere", "everyone", "all"})
# Only before "to": "decline to answer" negates, "my card was declined" reports a state.
_NEGATING_WITH_TO = frozenset(stem(w) for w in ("refuse", "decline"))
_NEGATING_WITH_FROM = frozenset(stem(w) for w in ("stop", "keep", "block", "ban", "prohibit", "forbid", "bar"))
_FROM_WINDOW = 4
_DEGREE_WORDS = frozenset({"more", "less", "most", "least", "fewer", "fewest"})


@dataclass(frozen=True)
class PolarityFindings:
    """Polarity differences of a pair: opposite word pairs left (`flips`) and cancelled (double flips),
    unmatched negations (`extra_negations`), negation cues on both sides, and the verdict's reason."""

    flips: int
    cancelled: int
    extra_negations: int
    negations: int
    reason: str

    @property
    def passed(self) -> bool:
        return self.flips == 0 and self.extra_negations == 0

    def result(self, stage: str) -> StepResult:
        return StepResult(stage, passed=self.passed, reason=self.reason)


@dataclass(frozen=True)
class _Parsed:
    tokens: tuple[str, ...]
    stems: tuple[str, ...]
    # positions of negation cues that negate (not "whether or not", "not only", "no matter")
    negations: tuple[int, ...]
    # per token, what it negates by prefix: "unlimited" -> {"limited"}
    prefix_bases: tuple[frozenset[str], ...]


@dataclass(frozen=True)
class _Flip:
    q_word: str
    c_word: str
    q_index: int
    c_index: int


def _negating_verb(tokens: tuple[str, ...], i: int) -> bool:
    """ "prevent X", "avoid X", or "stop/keep/block X from doing": a negation carried by a verb."""
    key = stem(tokens[i])
    if key in _ALWAYS_NEGATING or tuple(tokens[i:i + 2]) in _NEGATING_BEFORE:
        return True
    if tokens[i] == "but" and i > 0 and tokens[i - 1] in _BUT_AFTER:
        return True
    if key in _NEGATING_WITH_TO:
        return tokens[i + 1 : i + 2] == ("to",)
    if key not in _NEGATING_WITH_FROM:
        return False
    window = tokens[i + 1 : i + 2 + _FROM_WINDOW]
    return any(t == "from" and nxt.endswith("ing") for t, nxt in pairwise(window))


def _negations(tokens: tuple[str, ...]) -> tuple[int, ...]:
    found: list[int] = []
    for i, token in enumerate(tokens):
        if token not in NEGATION_CUES:
            if _negating_verb(tokens, i):
                found.append(i)
            continue
        before = tokens[i - 1] if i else ""
        after = tokens[i + 1] if i + 1 < len(tokens) else ""
        if token in {"not", "no"} and (before == "or" or tokens[max(i - 2, 0) : i] == ("or", "why")):
            continue  # "whether or not", "yes or no", "why or why not"
        if (token, after) in {("not", "only"), ("no", "matter"), ("no", "doubt")}:
            continue
        if token == "no" and after[:1].isdigit():
            continue  # "no. 5"
        if token == "nor" and "neither" in tokens[:i]:
            continue  # "neither ... nor" is one negation
        found.append(i)
    return tuple(found)


class PolarityStage:
    """Rule stage: the two prompts must agree in negation and must not swap a word for its opposite.

    Both prompts are tokenised (contractions expanded: can't -> can not) and stemmed, then aligned with
    difflib. Two signals, combined by parity:
    - negation count: cues (not, no, never, without, nobody ...; prevent/avoid/except/unable/lack; "refuse
      to"; "stop X from doing"; "other than", "anything but", "rather than") counted per prompt, so
      a "not" that only moved in a paraphrase cancels out;
    - opposites among the words that differ: WordNet antonyms and hand-written reversals (enable/disable,
      with/without, upload/download), a negating prefix (limited/unlimited). Noisy pairs (indirect WordNet
      antonyms, on/off) must sit in the same aligned block, and in long prompts every pair must.
    One extra negation right before one opposite ("not allowed" / "disallowed"), or a degree word right before
    one ("more patient" / "less impatient"), flips twice and passes; anything else that flips vetoes.
    """

    name = "polarity"

    def __init__(self, lexicon: Lexicon | None = None, cache_size: int = CACHE_SIZE) -> None:
        """`cache_size` prompts keep their analysis (LRU); 0 analyses every prompt afresh."""
        lex = lexicon or load()
        self._antonyms = lex.antonyms
        self._indirect = lex.indirect_antonyms
        # A cached prompt is checked against many queries: parse each text once (bounded, thread-safe).
        self._parse = lru_cache(maxsize=cache_size)(self._uncached_parse)

    def check(self, query: str, cached: str) -> StepResult:
        return self.findings(query, cached).result(self.name)

    def findings(self, query: str, cached: str) -> PolarityFindings:
        """What differs in polarity between the prompts (`check` reads the verdict)."""
        q, c = self._parse(query), self._parse(cached)
        flips = self._flips(q, c)
        extra = len(q.negations) - len(c.negations)
        negations = len(q.negations) + len(c.negations)
        if not flips and extra == 0:
            return PolarityFindings(0, 0, 0, negations, "same polarity")
        cancelled = _stacked_degree(flips)
        flips = [f for f in flips if f not in cancelled]
        if len(flips) == 1 and abs(extra) == 1 and self._cancels(q, c, flips[0], extra):
            cue = self._extra_cue(q if extra > 0 else c, c if extra > 0 else q)
            cancelled.append(flips.pop())
            extra = 0
            note = f"'{cue}' + "
        else:
            note = ""
        if flips:
            flip = flips[0]
            reason = f"antonym: {flip.q_word}/{flip.c_word}"
        elif extra:
            side, other, where = (q, c, "query") if extra > 0 else (c, q, "cached")
            reason = f"negation: '{self._extra_cue(side, other)}' only in {where}"
        else:
            pairs = ", ".join(f"{f.q_word}/{f.c_word}" for f in cancelled)
            reason = f"double flip cancels: {note}{pairs}"
        return PolarityFindings(len(flips), len(cancelled), abs(extra), negations, reason)

    def _uncached_parse(self, text: str) -> _Parsed:
        tokens = words(text)
        bases = tuple(_prefix_bases(t) for t in tokens)
        return _Parsed(tokens, tuple(stem(t) for t in tokens), _negations(tokens), bases)

    def _flips(self, q: _Parsed, c: _Parsed) -> list[_Flip]:
        """Opposite word pairs between the differing spans, each word used once; moved words ignored.

        A pair from the direct lexicon counts anywhere in the differing words; a noisier pair (indirect,
        or a function word such as on/off) only inside one aligned block.
        """
        blocks = differing_spans(q.stems, c.stems)
        q_block = {i: n for n, (i1, i2, _, _) in enumerate(blocks) for i in range(i1, i2)}
        c_block = {j: n for n, (_, _, j1, j2) in enumerate(blocks) for j in range(j1, j2)}
        moved = Counter(q.stems[i] for i in q_block) & Counter(c.stems[j] for j in c_block)
        q_only = _drop_moved(list(q_block), q.stems, moved)
        c_only = _drop_moved(list(c_block), c.stems, moved)
        # In short prompts a reordered opposite is still an opposite; in long ones an opposite outside
        # its aligned block is more often another clause ("the last 30 days" vs "my first attempt").
        short = max(len(q.tokens), len(c.tokens)) <= _SHORT_PROMPT
        flips: list[_Flip] = []
        used: set[int] = set()
        for i in q_only:
            if i in q.negations:
                continue
            direct = self._antonyms.get(q.stems[i], _NONE)
            indirect = self._indirect.get(q.stems[i], _NONE)
            for j in c_only:
                if j in used or j in c.negations:
                    continue
                if c.stems[j] in direct or c.tokens[j] in q.prefix_bases[i] or q.tokens[i] in c.prefix_bases[j]:
                    function_word = q.tokens[i] in FUNCTION_WORDS or c.tokens[j] in FUNCTION_WORDS
                    strength = _WEAK if function_word else _STRONG
                elif c.stems[j] in indirect:
                    strength = _WEAK
                else:
                    continue
                if (strength == _STRONG and short) or q_block[i] == c_block[j]:
                    flips.append(_Flip(q.tokens[i], c.tokens[j], i, j))
                    used.add(j)
                    break
        return flips

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


def _stacked_degree(flips: list[_Flip]) -> list[_Flip]:
    """"more patient" vs "less impatient": a degree flip right before another flip cancels it."""
    cancelled: list[_Flip] = []
    for flip in flips:
        if flip.q_word not in _DEGREE_WORDS or flip in cancelled:
            continue
        for other in flips:
            if other is not flip and other not in cancelled and (
                other.q_index == flip.q_index + 1 and other.c_index == flip.c_index + 1
            ):
                cancelled.extend((flip, other))
                break
    return cancelled


def _drop_moved(indexes: list[int], stems: tuple[str, ...], moved: Counter[str]) -> list[int]:
    budget = Counter(moved)
    kept: list[int] = []
    for i in indexes:
        if budget[stems[i]] > 0:
            budget[stems[i]] -= 1
        else:
            kept.append(i)
    return kept


def _prefix_bases(word: str) -> frozenset[str]:
    """The words `word` negates by a prefix: unlimited -> limited, disconnect -> connect."""
    return frozenset(
        word[len(prefix) :]
        for prefix in _NEGATING_PREFIXES
        if word.startswith(prefix) and len(word) - len(prefix) >= _MIN_BASE
    )
