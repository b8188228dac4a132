"""Same content, other form: two prompts whose content words are the same, in the same order, and that differ
only in words that never change what is asked (articles, the do/can auxiliary of a question, a politeness
frame), in case, punctuation, spacing or contractions. Such a pair asks the same question.

A clause moved to the front keeps the content words' cyclic order, and is the same question too; a word and its
clipped form ("dicts" / "dictionaries") are one word.

Everything else counts as content: nouns, verbs, adjectives, numbers, pronouns ("my" vs "your"), prepositions
("to" vs "from", "before" vs "after"), negations, wh-words, tense and most modals. So an action and its opposite,
a sibling option, another value, an inverted order or a negation is never "the same content"; those are for the
other steps to weigh. Pure functions over `index.guards.text`; microseconds per pair.
"""

from __future__ import annotations

import re
from functools import lru_cache

from index.guards.lexicon import load
from index.guards.text import CACHE_SIZE, normalize, stem, word_set

# Words, numbers and the symbols that change a value or an expression (a sign, an operator, a unit mark);
# sentence punctuation and quotes are form.
_WORD_HYPHEN = re.compile(r"(?<=[a-z])-(?=[a-z])")
_TOKEN = re.compile(r"[a-z0-9]+(?:[.,][0-9]+)*|[-+*/=^%$€£<>#@&~|\\]")

# Words a rewording adds, drops or swaps without changing the question.
FREE_WORDS = word_set(
    "a an the do does can could would please kindly pls plz hi hello hey thanks thank thx you tell me i to "
    "is are quick question just"
)
# A prompt must ask about something: below this many content words, sameness of form proves nothing.
MIN_CONTENT_WORDS = 2
# Interchangeable question words ("which time zone" asks what "what time zone" asks).
_SAME_WORD = {"which": "what"}


@lru_cache(maxsize=CACHE_SIZE)
def content(text: str) -> tuple[str, ...]:
    """The stems of `text`'s content words, in order."""
    tokens = _TOKEN.findall(_WORD_HYPHEN.sub(" ", normalize(text)))  # "rate-limited" is "rate limited"
    return tuple(stem(_SAME_WORD.get(w, w)) for w in tokens if w not in FREE_WORDS)


def same_content(query: str, cached: str) -> bool:
    """True when the two prompts differ only in form (see the module docstring): the same content words in
    the same order, or the same order with one block moved to the front ("On Windows 11, how do I take a
    screenshot?"), or the same letters split otherwise ("Wi-Fi" / "WiFi")."""
    left, right = content(query), content(cached)
    if len(left) < MIN_CONTENT_WORDS:
        return False
    return (left == right or rotated(left, right) or "".join(left) == "".join(right)
            or (len(left) == len(right) and all(a == b or abbreviates(a, b) for a, b in zip(left, right, strict=True))))


# An abbreviation keeps this many letters of its word at least ("int" for "integer", "dict" for "dictionary").
MIN_ABBREVIATION = 3


def abbreviates(a: str, b: str) -> bool:
    """One word is the other's clipped form: the shorter (at least three letters) begins the longer and is no
    English word of its own ("dict"/"dictionary", "int"/"integer"; never "car"/"card", "pen"/"penguin"), and the
    longer is no compound of it and another word ("with"/"without" is a difference, never form)."""
    short, long = (a, b) if len(a) < len(b) else (b, a)
    english = load().english
    return (len(short) >= MIN_ABBREVIATION and long.startswith(short) and short.isalpha()
            and short not in english and not (long in english and long[len(short):] in english))


def rotated(left: tuple[str, ...], right: tuple[str, ...]) -> bool:
    """`right` is `left` with a tail block moved to the front. Swapping two arguments ("Celsius to Fahrenheit" /
    "Fahrenheit to Celsius", "Python ... Java" / "Java ... Python") is never a rotation of three or more words."""
    if len(left) != len(right) or len(left) < 3:
        return False
    return any(right == left[cut:] + left[:cut] for cut in range(1, len(left)))
