"""Text normalisation shared by the rule stages: contractions, word tokens, alignment, and a small
suffix stripper (`stem`) applied alike to prompts and lexicons (enable/enabled/enabling -> "enabl").
"""

from __future__ import annotations

import re
from functools import lru_cache

from index.guards.textdiff import opcodes


def word_set(text: str) -> frozenset[str]:
    """A set of space-separated words (keeps long word lists readable)."""
    return frozenset(text.split())


_APOSTROPHES = str.maketrans({"’": "'", "‘": "'", "`": "'", "´": "'"})

_IRREGULAR_NEGATIVES = {
    "cant": "can not", "can't": "can not", "cannot": "can not", "wont": "will not", "won't": "will not",
    "shant": "shall not", "shan't": "shall not", "aint": "is not", "ain't": "is not",
}
_CLITICS = {"re": " are", "ll": " will", "ve": " have", "m": " am", "d": " would", "s": ""}
# One pass over every contraction: irregular negatives, "n't" (also without the apostrophe after an
# auxiliary: "dont"), "it's"-style "is", "let's", then the other clitics ('s alone is a possessive).
_CONTRACTION = re.compile(
    r"\b(?P<irregular>can'?t|cannot|won'?t|shan'?t|ain'?t)\b"
    r"|\b(?P<aux>do|does|did|is|are|was|were|has|have|had|would|should|could|must|need|might)n'?t\b"
    r"|\b(?P<word>\w+)n't\b"
    r"|\b(?P<is>it|that|what|where|who|how|there|here|he|she|when|why|which)'s\b"
    r"|\b(?P<let>let)'s\b"
    r"|'(?P<clitic>re|ll|ve|m|d|s)\b"
)


def _expand(match: re.Match[str]) -> str:
    groups = match.groupdict()
    if groups["irregular"]:
        return _IRREGULAR_NEGATIVES[groups["irregular"]]
    if groups["aux"] or groups["word"]:
        return f"{groups['aux'] or groups['word']} not"
    if groups["is"]:
        return f"{groups['is']} is"
    if groups["let"]:
        return "let us"
    return _CLITICS[groups["clitic"]]


# A trailing tag question ("..., isn't it?") repeats the clause's polarity inverted; it asks nothing new.
_TAG_QUESTION = re.compile(
    r",\s*(is|are|was|were|do|does|did|can|will|would|should|could|has|have)(n'?t| not)?\s+"
    r"(it|i|you|he|she|we|they|there|that)\s*\??\s*$"
)

# "sugar-free" says what "without sugar" says.
_FREE_OF = re.compile(r"\b([a-z]+)-free\b")
# A leading "No," / "Yes," answers a previous turn; it does not negate the prompt.
_INTERJECTION = re.compile(r"^(no|yes|yeah|yep|nope|ok|okay)\s*[,.!;:]\s*")
_WORD = re.compile(r"[a-z0-9]+(?:[.+#][a-z0-9+#]+)*[+#]*")

# Irregular forms the suffix rules cannot reach but that matter for alignment.
_IRREGULAR = {
    "is": "be", "are": "be", "was": "be", "were": "be", "am": "be", "been": "be", "being": "be",
    "has": "have", "had": "have", "having": "have",
    "does": "do", "did": "do", "done": "do", "doing": "do",
    "went": "go", "gone": "go", "goes": "go",
    "made": "make", "took": "take", "taken": "take", "got": "get", "gotten": "get",
    "going": "go", "an": "a",
}
# Words whose ending only looks like an inflection.
_UNINFLECTED = word_set(
    "embed shred hundred sacred naked wicked kindred need seed speed feed breed weed deed heed greed "
    "bleed proceed exceed succeed news series species always perhaps"
)
# Closed-class words: an opposite involving one (on/off, in/out, up/down) only counts where the two
# prompts are aligned word for word, and no lexicon entry may strip down to one.
FUNCTION_WORDS = word_set(
    "a an the this that these those it its he she they them we us you i me my our your their his her "
    "is be am are was were do does did have has had can could will would shall should may might must "
    "of for to from in on at by with without into onto off out up down over under about as than then "
    "and or but if so not no yes all any some one ones each every both either neither nor like what "
    "which who whom whose when where why how there here"
)
_VOWELS = frozenset("aeiouy")
_KEEP_DOUBLE = frozenset("lsz")
MIN_STEM = 3
# Prompts whose analysis each stage keeps (an LRU): the cached side of a check repeats across queries.
CACHE_SIZE = 4096


def _undouble(word: str) -> str:
    if len(word) > MIN_STEM and word[-1] == word[-2] and word[-1] not in _KEEP_DOUBLE | _VOWELS:
        return word[:-1]
    return word


def _strip_ending(word: str, ending: str) -> str | None:
    """`word` without `ending` if a plausible stem (3+ letters with a vowel) remains, else None."""
    rest = word[: -len(ending)]
    if len(rest) >= MIN_STEM and _VOWELS & set(rest):
        return _undouble(rest)
    if len(rest) == MIN_STEM - 1 and _VOWELS & set(rest):
        return rest + "e"  # used -> use, using -> use
    return None


@lru_cache(maxsize=65536)  # a pure function of one word, called for every word of every pair read
def stem(word: str) -> str:
    """Map inflected forms of a lowercase word to one key: policies -> policy, enabled -> enabl."""
    if word in _IRREGULAR:
        return _IRREGULAR[word]
    if len(word) <= MIN_STEM or not word.isalpha() or word in _UNINFLECTED:
        return word
    base = word
    if word.endswith(("ies", "ied")) and len(word) > 4:
        base = word[:-3] + "y"
    elif word.endswith("sses"):
        base = word[:-2]
    elif word.endswith(("ss", "us", "is")):
        pass  # class, status, analysis: not plurals
    elif word.endswith(("ches", "shes", "xes", "zes")):
        base = word[:-2]
    elif word.endswith("s"):
        base = word[:-1]
    elif word.endswith("ing"):
        base = _strip_ending(word, "ing") or word
    elif word.endswith("ed"):
        base = _strip_ending(word, "ed") or word
    if base.endswith("e") and len(base) > MIN_STEM:
        base = base[:-1]
    return base


# A request's text is read by several steps and rule stages, and a cached prompt by every request it meets: each
# text is normalised and split once while it is in use (bounded; the functions are pure).
_TEXTS = 16384


@lru_cache(maxsize=_TEXTS)
def normalize(text: str) -> str:
    """Lowercase, unify apostrophes, expand contractions and drop a trailing tag question."""
    text = text.translate(_APOSTROPHES).lower().strip()
    if "," in text:
        text = _TAG_QUESTION.sub("", text)
    text = _INTERJECTION.sub("", text)
    if "-free" in text:
        text = _FREE_OF.sub(r"without \1", text)
    return _CONTRACTION.sub(_expand, text)


@lru_cache(maxsize=_TEXTS)
def words(text: str) -> tuple[str, ...]:
    """Lowercase word tokens of `text` after `normalize`; hyphens and punctuation split words."""
    return tuple(_WORD.findall(normalize(text)))


def differing_spans(a: tuple[str, ...], b: tuple[str, ...]) -> list[tuple[int, int, int, int]]:
    """Index ranges (a_lo, a_hi, b_lo, b_hi) of the blocks where the two token sequences differ (bounded
    work: `index.guards.textdiff`)."""
    return [(i1, i2, j1, j2) for tag, i1, i2, j1, j2 in opcodes(a, b) if tag != "equal"]
