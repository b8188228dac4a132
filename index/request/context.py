"""Multi-turn context: whether the last message asks something whole on its own (`self_contained`), and
otherwise what it can depend on (`dependency_context`); whether a message asks anything at all (`has_question`).

A follow-up that points back ("book it", "and the price?", "the cheaper one", a bare yes) depends on the whole
thread: every value, name, item, option and action the user gave anywhere, and what the assistant last offered
or confirmed. Those are compared, not a summary of them: a detail dropped from the comparison is a detail a
wrong hit can hide behind. A self-contained question after unrelated history is compared as a question.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

WORD = re.compile(r"[a-z0-9][a-z0-9'+#.-]*")
_STOPWORD_TEXT = """
a an the and or but if then so of to in on at for with by from as is are was were be been being am do does did
have has had i me my we our us you your he she him her it its they them their this that these those there here
what which who whom how why when where can could would should will shall may might must yes ok okay hi hello
hey thanks thank please just also really very much many more some any all about into over under again too well
sure great cool good nice awesome perfect fine morning afternoon evening day today appreciate helps helpful
cheers bye got lot quick question let know want need like im i'm it's that's what's i'd i'll you're don't
can't one other another else first next last then now get make use tell give show help way thing things
something anything
"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())
# Words of chatter: a sentence made only of these (and stopwords) says nothing the answer depends on.
_CHATTER_TEXT = """
hi hello hey hiya greetings morning afternoon evening sorry apologies apologise apologize apology bother
trouble inconvenience thanks thank appreciate appreciated cheers grateful patience hope hoping doing going
weather lovely wonderful weekend week busy stressed silly glad happy pleased worries worry reaching reach
out message long anyway meantime way real person human virtual assistant bot welcome there again kind
bit question fine ok okay alright cool perfect awesome great
"""
CHATTER_WORDS = frozenset(_CHATTER_TEXT.split())
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_CHATTER_WORD = re.compile(r"[a-z']+|\d")
# An answer to a yes/no question is never chatter, though "yes" is a stopword; "no worries" is chatter.
_ANSWERS = frozenset({"yes", "no", "yeah", "yep", "nope", "not"})
# The turns read (the most recent): a long conversation costs what a short one does.
MAX_TURNS = 40
_NO_MATTER = re.compile(r"\bno (?:worries|problem|problems|trouble)\b")

# Messages that carry no question of their own: never matched on the message alone.
ACKNOWLEDGEMENTWORDS = frozenset({
    "ok", "okay", "k", "yes", "no", "yep", "nope", "sure", "thanks", "thank", "you", "continue", "go", "on", "more",
    "keep", "going", "next", "and", "so", "why", "really", "great", "cool", "got", "it", "done", "again", "retry",
    "please", "proceed", "elaborate", "expand", "same", "that", "this", "alright", "fine", "right", "correct",
})


def content_words(text: str) -> set[str]:
    """Lower-cased content words, cut to a 6-letter stem so inflections meet."""
    words = (w.strip(".-") for w in WORD.findall(text.lower()))
    return {w[:6] for w in words if w not in STOPWORDS and len(w) > 2}


def message_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text")
    return ""


def is_chatter(sentence: str) -> bool:
    """True for a sentence of greetings, apologies, thanks or small talk only (never one holding a digit)."""
    words = _CHATTER_WORD.findall(_NO_MATTER.sub("fine", sentence.lower().replace("’", "'")))
    return bool(words) and all((w in CHATTER_WORDS or w in STOPWORDS) and w not in _ANSWERS for w in words)


def without_chatter(text: str) -> str:
    """`text` without its chatter sentences; lines are kept apart (a listed option stays on its line)."""
    lines = (" ".join(s for s in _SENTENCE.split(line.strip()) if s and not is_chatter(s))
             for line in text.split("\n"))
    return "\n".join(line for line in lines if line)


def has_question(text: str) -> bool:
    """False for empty messages, acknowledgements and 'continue'-style nudges."""
    words = re.sub(r"[^\w\s']", " ", text.lower()).split()
    return any(w not in ACKNOWLEDGEMENTWORDS for w in words)


# A word that points back at something said before ("book it", "their number", "the cheaper one", "do that
# again", "the same"), or that asks for a change of what was said ("instead", "else", "other").
_POINTS_BACK = frozenset({
    "it", "its", "itself", "that", "this", "those", "these", "them", "they", "their", "theirs", "there", "then",
    "he", "him", "his", "she", "her", "hers", "one", "ones", "same", "such", "former", "latter", "above", "previous",
    "instead", "else", "other", "another", "also", "too", "again", "both", "either", "neither", "first", "second",
    "third", "last", "next", "cheaper", "cheapest", "earlier", "later", "closer", "nearer", "nearby", "here",
    "option", "options", "yes", "no", "yeah", "yep", "nope", "ok", "okay", "sure",
})
# An opening that continues the previous turn ("and the price?", "what about Tuesday?", "so how much?").
_CONTINUES_TURN = re.compile(r"^\W*(?:and|or|but|so|also|plus|then|what about|how about|same|only|just)\b",
                             re.IGNORECASE)
# Content words a question needs to say what it asks on its own.
_OWN_WORDS = 3
# What gives a value the answer can depend on: a digit, a quoted text, or a capitalised word inside a sentence
# (a name); "I" and its contractions are not names.
_GIVES = re.compile(r"\d|[\"“][^\"”]+[\"”]|(?<=[a-z,;:] )(?!I\b|I'|I’)[A-Z][\w-]*")

# What an assistant's answer gives: a number or a quoted text (its capitalised words name its own menus and pages).
_GIVES_NUMBER = re.compile(r"\d|[\"“][^\"”]+[\"”]")


def stands_alone(question: str) -> bool:
    """The message asks something whole on its own: it points back at nothing (no pronoun, no "the cheaper
    one", no "and ...?", no bare yes or no) and names at least three content words. When in doubt, it does not."""
    words = [w.strip(".-'") for w in WORD.findall(question.lower())]
    if _CONTINUES_TURN.match(question) or any(w in _POINTS_BACK for w in words):
        return False
    return len(content_words(question)) >= _OWN_WORDS


def dependency_context(earlier: Sequence[dict[str, Any]], question: str) -> str | None:
    """What the last message `question` can depend on: the thread from its first related exchange on, every turn
    of it, user and assistant (each value, name, item, option and action the user gave, and what the assistant
    offered or confirmed), chatter left out, a turn to a line. Only a leading run of exchanges that gives nothing
    (`_only_asks`) and shares no content word with the rest is left out (an unrelated question asked first). None: the
    message stands alone and the whole history is such a run; it is then compared as a question.

    Only the last `MAX_TURNS` turns are read; a longer text is compared beyond the embedder's window, which the
    decision never serves."""
    turns = [m for m in earlier if m.get("role") in ("user", "assistant")][-MAX_TURNS:]
    exchanges: list[list[dict[str, Any]]] = []
    for message in turns:
        if message.get("role") == "user" or not exchanges:
            exchanges.append([message])
        else:
            exchanges[-1].append(message)
    start = _unrelated_prefix(exchanges, question)
    if start == len(exchanges):
        return None
    lines = (without_chatter(message_text(m)).strip() for exchange in exchanges[start:] for m in exchange)
    return "\n".join(line for line in lines if line)


def _unrelated_prefix(exchanges: Sequence[Sequence[dict[str, Any]]], question: str) -> int:
    """How many leading exchanges give nothing (`_only_asks`) and share no content word (or number) with the later
    turns and the question; the last exchange only when the question stands alone."""
    words = [set().union(*(_stems(message_text(m)) for m in exchange)) for exchange in exchanges]
    limit = len(exchanges) if stands_alone(question) else len(exchanges) - 1
    asked = _stems(question)
    best = 0
    for cut in range(1, limit + 1):
        if not _only_asks(exchanges[cut - 1]):
            break
        if not set().union(*words[:cut]) & set().union(asked, *words[cut:]):
            best = cut
    return best


def _only_asks(exchange: Sequence[dict[str, Any]]) -> bool:
    """The exchange gives nothing the answer could depend on: its user turn only asks (every sentence that is not
    chatter is a question: a statement or a request gives a detail) and no turn of it holds a value."""
    if any((_GIVES if m.get("role") == "user" else _GIVES_NUMBER).search(message_text(m)) for m in exchange):
        return False
    asked = [s for m in exchange if m.get("role") == "user"
             for s in _SENTENCE.split(without_chatter(message_text(m)).strip()) if s]
    return all(s.rstrip().endswith("?") for s in asked)


def _stems(text: str) -> set[str]:
    """Content words cut to four letters (loose on purpose: "sending" meets "send", so a turn that may be related
    is kept) and every token holding a digit (a code, an amount, a count)."""
    digits = {w.strip(".-,'") for w in WORD.findall(text.lower()) if any(c.isdigit() for c in w)}
    return {w[:4] for w in content_words(text)} | digits
