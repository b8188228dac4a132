"""Multi-turn context: which earlier turns matter to the last question, whether the last message asks
anything on its own (the alignment check over two contexts is `index.guards.alignment`).

The semantic tier compares two conversations by (a) their last user messages and (b) their *relevant
context*: the most recent substantive exchange plus any earlier exchange that shares a content word with
it or with the question, or that holds a number (a code or amount said early is still the one talked
about). Chatter sentences (greetings, apologies, thanks, small talk) are left out first, so a difference of
form is no difference; unrelated side questions without numbers drop out.
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
_NO_MATTER = re.compile(r"\bno (?:worries|problem|problems|trouble)\b")

# Messages that carry no question of their own: never matched on the message alone.
ACKNOWLEDGEMENTWORDS = frozenset({
    "ok", "okay", "k", "yes", "no", "yep", "nope", "sure", "thanks", "thank", "you", "continue", "go", "on", "more",
    "keep", "going", "next", "and", "so", "why", "really", "great", "cool", "got", "it", "done", "again", "retry",
    "please", "proceed", "elaborate", "expand", "same", "that", "this", "alright", "fine", "right", "correct",
})


def content_words(text: str) -> set[str]:
    """Lower-cased content words, cut to a 6-letter stem so inflections meet."""
    return {w.strip(".-")[:6] for w in WORD.findall(text.lower()) if w not in STOPWORDS and len(w) > 2}


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


def _exchanges(messages: Sequence[dict[str, Any]]) -> list[str]:
    """Earlier user turns, each joined with the assistant reply that follows it."""
    exchanges: list[str] = []
    for message in messages:
        role, text = message.get("role"), without_chatter(message_text(message))
        if role == "user":
            exchanges.append(text)
        elif role == "assistant" and exchanges:
            exchanges[-1] = f"{exchanges[-1]}\n{text}".strip("\n")
    return exchanges


def relevant_context(earlier: Sequence[dict[str, Any]], question: str) -> str:
    """The earlier exchanges that bear on `question`: the latest substantive one, every other that holds a
    digit, and every other that shares a content word with what is already kept (transitively)."""
    exchanges = [(content_words(e), e) for e in _exchanges(earlier)]
    substantive = [i for i, (words, _) in enumerate(exchanges) if len(words) >= 2]
    if not substantive:
        return ""
    keep = {substantive[-1], *(i for i in substantive if any(c.isdigit() for c in exchanges[i][1]))}
    anchor = content_words(question).union(*(exchanges[i][0] for i in keep))
    grew = True
    while grew:
        grew = False
        for i in substantive:
            if i not in keep and exchanges[i][0] & anchor:
                keep.add(i)
                anchor |= exchanges[i][0]
                grew = True
    return "\n".join(exchanges[i][1] for i in sorted(keep))
