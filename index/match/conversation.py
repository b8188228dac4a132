"""The context rule of conversations: a cached answer serves a follow-up only when the two relevant contexts
(user and assistant turns) are the same situation: the same values, the same options in the same order, no roles
swapped, and the same content words up to form (case, punctuation, contractions) and up to words WordNet calls
the same (cancel/delete). A sentence that carries nothing (no strong value, no bare answer, no pronoun standing for
what was said, no offer or request) and that nothing takes up (none of its content words said anywhere else in
either thread or in the question) may stand in one thread and not the other: small talk drops out by what it
carries, not by a list of its words. The step `context` of `index.match.steps` reads it.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache

from index.guards.extract import Extractor, Value
from index.guards.form import FREE_WORDS
from index.guards.lexicon import Lexicon, load
from index.guards.numbers import canonical, parse_words
from index.guards.order import swapped_words
from index.guards.polarity import NEGATION_CUES
from index.guards.stages import StepResult
from index.guards.text import CACHE_SIZE, FUNCTION_WORDS, normalize, stem
from index.guards.textdiff import ratio
from index.guards.wordnet import Relation, load_wordnet
from index.request.context import STOPWORDS, actions, commits, refers_back, sentences

# `Decision.vetoed_by` of each context difference.
VALUE = "context:value"
OPTION_ORDER = "context:option-order"
CONTENT = "context:content"
ROLES = "context:roles"
ACTION = "context:action"
# From this share of aligned content words on, a content word that differs between two contexts vetoes: the two are
# one text with an edit. Below it the two tell the thread in their own words, and what they must share is what the
# answer depends on beyond the values, options and roles compared always: the actions offered or asked for.
DEFAULT_MIN_ALIGNED = 0.5
# Relations that make a word said in one thread and not the other the same word said otherwise. Broader and
# sibling words are not: "the mug" and "the bowl" are two items, "include" and "add" two actions.
_SAME_WORD = frozenset({Relation.SAME, Relation.SYNONYM})

_TOKEN = re.compile(r"[a-z0-9]+(?:[.,'][a-z0-9]+)*")
_WORD_HYPHEN = re.compile(r"(?<=[a-z])-(?=[a-z])")
_LISTED = re.compile(r"^\s*(?:\d{1,2}[.)]|[-*•])\s+(.+)$")
# An inline list of three or more: "A, B or C", "A, B, and C".
_ITEM = r"(?:[^,.:;!?\n]|\.(?=\d))+"  # a version's dot ("Python 3.12") does not end an item
_INLINE = re.compile(rf"({_ITEM}(?:,\s*{_ITEM})+,?\s+(?:or|and)\s+{_ITEM})")
_SPLIT_INLINE = re.compile(r",\s*(?:or\s+|and\s+)?|\s+or\s+|\s+and\s+")
# Words that never make two contexts ask about different things when they are all that differs.
_FORM = (frozenset(stem(w) for w in FREE_WORDS | FUNCTION_WORDS | {"ok", "okay", "alright"})
         - {"not", "no", "never", "without", "nor", "neither"})


# Words too common to show that a sentence is taken up ("day" in "have a nice day" and "within 30 days").
_STOP = frozenset(stem(w) for w in STOPWORDS)


@dataclass(frozen=True)
class ContextDifference:
    """What differs between two contexts: `stage` is one of VALUE, OPTION_ORDER, ROLES, CONTENT, ACTION."""

    stage: str
    reason: str

    def result(self) -> StepResult:
        return StepResult(self.stage, passed=False, reason=self.reason)


@dataclass(frozen=True)
class _Text:
    """A context without chatter: its values, option lists, and content words (surface and stem)."""

    values: tuple[Value, ...]
    words: frozenset[str]
    options: tuple[tuple[str, ...], ...]
    surface: tuple[str, ...]
    stems: tuple[str, ...]
    # the words of its values, as compared: a value written another way ("$45" / "45 dollars", "June 4" /
    # "4 June") is compared as a value, never again as content
    value_stems: frozenset[str] = frozenset()
    # stem -> the words it was said with (for WordNet), and the stems said only in sentences that carry nothing
    # (no value, no negation: small talk if nothing else takes them up)
    said: tuple[tuple[str, tuple[str, ...]], ...] = ()
    idle: frozenset[str] = frozenset()
    # the stems of every sentence, to find which are taken up elsewhere
    sentence_stems: tuple[frozenset[str], ...] = ()
    # the actions offered, promised or asked for (`index.request.context.actions`), as stem -> the word said
    actions: tuple[tuple[str, str], ...] = ()


class ContextRule:
    """Finds the first difference between two relevant contexts: a value, the order of offered options, or
    content words where the two are one text with an edit. Pure and thread-safe; each text is analysed once."""

    def __init__(self, lexicon: Lexicon | None = None, min_aligned: float = DEFAULT_MIN_ALIGNED,
                 cache_size: int = CACHE_SIZE) -> None:
        if not 0.0 <= min_aligned <= 1.0:
            raise ValueError(f"min_aligned must be a share in [0, 1], got {min_aligned}")
        self._extractor = Extractor(lexicon or load())
        self._min_aligned = min_aligned
        self._text = lru_cache(maxsize=cache_size)(self._uncached_text)

    def difference(self, query_context: str, cached_context: str,
                   asked: tuple[str, ...] = ()) -> ContextDifference | None:
        """None when the two contexts are the same situation. `asked`: the two last messages (a sentence that the
        question takes up is never small talk)."""
        q, c = self._text(query_context), self._text(cached_context)
        if q.stems == c.stems:
            return None
        return (_value_difference(q, c) or _option_difference(q, c) or _role_difference(query_context, cached_context)
                or self._content_difference(q, c, asked))

    def _uncached_text(self, context: str) -> _Text:
        # the pronoun "I" after a name reads as a Roman numeral ("order LU-7 I can send"): never a value here
        values = tuple(v for v in self._extractor.analyze(context).values if v.surface != "I")
        surface = tuple(t for t in _TOKEN.findall(_WORD_HYPHEN.sub(" ", normalize(context))) if t not in FREE_WORDS)
        options = tuple(_options(context))
        value_stems = frozenset(_word_key(w) for v in values for w in _TOKEN.findall(normalize(v.surface)))
        said: dict[str, set[str]] = {}
        for word in surface:
            said.setdefault(_word_key(word), set()).add(word)
        lines = context.split("\n")
        # a turn right after a question ("What genre?" / "Drama.") answers it: never small talk
        answers = [i > 0 and lines[i - 1].rstrip().endswith("?") for i in range(len(lines))]
        parts = [(_stems_of(s), answer or self._carries(s)) for line, answer in zip(lines, answers, strict=True)
                 for s in sentences(line)]
        carried = frozenset().union(*(stems for stems, carries in parts if carries))
        idle = frozenset().union(*(stems for stems, carries in parts if not carries)) - carried
        acted = {_word_key(w): w for line in lines for sentence in sentences(line) for w in actions(sentence)}
        return _Text(values, frozenset(surface), options, surface, tuple(_word_key(w) for w in surface), value_stems,
                     tuple((k, tuple(sorted(v))) for k, v in sorted(said.items())), idle,
                     tuple(stems for stems, _ in parts), tuple(sorted(acted.items())))

    def _carries(self, sentence: str) -> bool:
        """The sentence holds a strong value (a weak one, "your day", is compared as a value all the same), a bare
        answer ("No."), a pronoun standing for what was said ("I can repair it."), or an offer or a request ("I can
        arrange a pickup", "we'll send a courier"): never small talk."""
        words = set(_TOKEN.findall(normalize(sentence)))
        answer = bool(words & NEGATION_CUES) and not words - NEGATION_CUES - _FORM
        return answer or refers_back(sentence) or commits(sentence) or any(
            v.surface != "I" and v.strong for v in self._extractor.analyze(sentence).values)

    def _content_difference(self, q: _Text, c: _Text, asked: tuple[str, ...]) -> ContextDifference | None:
        """A content word one context says and the other does not, unless it is form, a value's word (compared as a
        value), a word WordNet calls the same as one the other context says instead, or small talk: said only in
        sentences that carry nothing and that no other sentence of either context, nor the question, takes up."""
        if ratio(q.stems, c.stems) < self._min_aligned:
            return _action_difference(q, c)
        # said more often on one side ("the kitchen speaker" and later "the TV" against "the kitchen speaker" twice):
        # a word said elsewhere in the other thread does not hide that it was replaced here
        counts_q, counts_c = Counter(q.stems), Counter(c.stems)
        only_q, only_c = set(counts_q - counts_c), set(counts_c - counts_q)
        free = _FORM | q.value_stems | c.value_stems
        asked_stems = frozenset().union(*(_stems_of(text) for text in asked))
        said_q, said_c = dict(q.said), dict(c.said)
        wordnet = load_wordnet()
        for x in sorted(only_q):
            for y in sorted(only_c):
                if any(wordnet.opposed(a, b) for a in said_q.get(x, ()) for b in said_c.get(y, ())):
                    return ContextDifference(CONTENT, f"{said_q[x][0]!r} vs {said_c[y][0]!r} (opposites)")
        for side, other, said, said_other in ((q, c, said_q, said_c), (c, q, said_c, said_q)):
            own, others = (only_q, only_c) if side is q else (only_c, only_q)
            for stem_ in sorted(own - free):
                if _small_talk(stem_, side, other, asked_stems) or any(
                        wordnet.relation(a, b) in _SAME_WORD for a in said.get(stem_, ())
                        for y in others for b in said_other.get(y, ())):
                    continue
                word = repr(said.get(stem_, (stem_,))[0])
                instead = next((repr(said_other.get(y, (y,))[0]) for y in sorted(others - free)), "nothing")
                return ContextDifference(CONTENT, f"{word} vs {instead}" if side is q else f"{instead} vs {word}")
        return None


def _action_difference(q: _Text, c: _Text) -> ContextDifference | None:
    """An action one thread offers or asks for ("I can freeze the membership", "I want to delete the account") that
    the other does not say, in that word or one WordNet calls the same: two threads told in their own words are one
    situation only when they act on the same things."""
    wordnet = load_wordnet()
    for side, other in ((q, c), (c, q)):
        stems = set(other.stems)
        words = [w for _, said in other.said for w in said]
        for key, word in side.actions:
            if key in stems or any(wordnet.relation(word, w) in _SAME_WORD for w in words):
                continue
            instead = next((w for _, w in other.actions), "nothing")
            pair = (word, instead) if side is q else (instead, word)
            return ContextDifference(ACTION, f"{pair[0]!r} vs {pair[1]!r} (the action offered or asked for)")
    return None


def _small_talk(stem_: str, side: _Text, other: _Text, asked: frozenset[str]) -> bool:
    """Every sentence saying `stem_` carries nothing, and none of its content words is said in another sentence of
    either context or in the question: nothing the answer depends on takes it up."""
    if stem_ not in side.idle:
        return False
    holding = [s for s in side.sentence_stems if stem_ in s]
    # a sentence said twice ("Hope your day is going well." opening and closing a turn) takes nothing up
    rest = [s for s in side.sentence_stems if stem_ not in s] + [s for s in other.sentence_stems if s not in holding]
    elsewhere = frozenset().union(*rest) | asked
    return all(not ((s - _FORM - _STOP) & elsewhere) for s in holding)


def _stems_of(text: str) -> frozenset[str]:
    return frozenset(_word_key(t) for t in _TOKEN.findall(_WORD_HYPHEN.sub(" ", normalize(text)))
                     if t not in FREE_WORDS)


def _role_difference(query_context: str, cached_context: str) -> ContextDifference | None:
    """The same words with two of them changed places across a direction ("100 USD to EUR" / "100 EUR to USD")."""
    swapped = swapped_words(query_context, cached_context)
    return None if swapped is None else ContextDifference(ROLES, f"{swapped[0]!r} and {swapped[1]!r} change places")


def _word_key(word: str) -> str:
    """What a content word is compared by: its stem, a number word as digits ("two" is "2")."""
    number = parse_words([word])
    return canonical(number[0]) if number is not None and number[1] == 1 else stem(word)


def _value_difference(q: _Text, c: _Text) -> ContextDifference | None:
    """A value one context holds and the other lacks (as sets: saying a value twice is saying it once). A weak
    value (a plan tier, a period) differs only where the other context holds a value this one lacks too."""
    only_q, only_c = _unmatched(q, c), _unmatched(c, q)
    for value, other, first in [*((v, c, True) for v in only_q), *((v, q, False) for v in only_c)]:
        rest = _unmatched(other, q if first else c, forgive=False)
        if not value.strong and not rest:
            continue
        counterpart = next((v for v in rest if v.family == value.family), rest[0] if rest else None)
        if counterpart is None:
            return ContextDifference(VALUE, f"{value.surface} only in one context")
        pair = (value, counterpart) if first else (counterpart, value)
        return ContextDifference(VALUE, f"{pair[0].surface} vs {pair[1].surface}")
    return None


def _unmatched(side: _Text, other: _Text, forgive: bool = True) -> list[Value]:
    keys = {_key(v) for v in other.values}
    return [v for v in side.values if _key(v) not in keys and not (forgive and _spelled(v, other))]


def _key(value: Value) -> tuple[str, str]:
    """What a value is compared by: a day said as an ordinal is the number ("January 5th" / "Jan 5")."""
    family, canonical_form = value.key
    return ("number" if family == "ordinal" else family, canonical_form)


def _spelled(value: Value, other: _Text) -> bool:
    """`other` says the name without the cue that made it a value here (lower case, no quotes)."""
    plain = _TOKEN.findall(normalize(value.surface))
    return value.family in {"name", "quote"} and bool(plain) and all(w in other.words for w in plain)


def _option_difference(q: _Text, c: _Text) -> ContextDifference | None:
    """Lists of the same options offered in another order (a follow-up may pick one by position)."""
    for left, right in zip(q.options, c.options, strict=False):
        left, right = _lead_cut(left, right), _lead_cut(right, left)
        if left != right and sorted(left) == sorted(right):
            return ContextDifference(OPTION_ORDER, f"{', '.join(left)} vs {', '.join(right)}")
    return None


def _lead_cut(items: tuple[str, ...], other: tuple[str, ...]) -> tuple[str, ...]:
    """`items` with the words leading into an inline list cut from its first option ("your choices are X" ->
    "X") where `other` lists X."""
    lead = next((o for o in other if items and items[0] != o and items[0].endswith(f" {o}")), None)
    return items if lead is None else (lead, *items[1:])


def _options(text: str) -> list[tuple[str, ...]]:
    """The option lists of `text`, in order: runs of numbered or bulleted lines, and inline lists of three or
    more ("A, B or C"); each option as its lower-cased words."""
    lists: list[tuple[str, ...]] = []
    run: list[str] = []
    for line in [*text.split("\n"), ""]:
        listed = _LISTED.match(line)
        if listed:
            run.append(_option(listed.group(1)))
            continue
        if len(run) >= 2:
            lists.append(tuple(run))
        run = []
        for inline in _INLINE.findall(line):
            items = [_option(item) for item in _SPLIT_INLINE.split(inline) if item.strip()]
            if len(items) >= 3:
                lists.append(tuple(items))
    return lists


def _option(text: str) -> str:
    """An option as its lower-cased words, up to the end of its first sentence ("a cash ISA. Hope this helps." is
    the option "a cash isa")."""
    first = next(iter(sentences(text)), text)
    return " ".join(_TOKEN.findall(normalize(first)))


@lru_cache(maxsize=1)
def default_rule() -> ContextRule:
    """The context rule at its defaults (one shared instance: its analyses are cached)."""
    return ContextRule()
