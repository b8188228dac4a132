"""Multi-turn context: which earlier turns matter to the last question, whether the last message asks
anything on its own (the alignment check over two contexts is `index.guards.alignment`).

The semantic tier compares two conversations by (a) their last user messages and (b) their *relevant
context*: the most recent substantive exchange plus any earlier exchange that shares a content word with
it or with the question (small talk and unrelated side questions drop out).
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


def has_question(text: str) -> bool:
    """False for empty messages, acknowledgements and 'continue'-style nudges."""
    words = re.sub(r"[^\w\s']", " ", text.lower()).split()
    return any(w not in ACKNOWLEDGEMENTWORDS for w in words)


def _exchanges(messages: Sequence[dict[str, Any]]) -> list[str]:
    """Earlier user turns, each joined with the assistant reply that follows it."""
    exchanges: list[str] = []
    for message in messages:
        role = message.get("role")
        if role == "user":
            exchanges.append(message_text(message))
        elif role == "assistant" and exchanges:
            exchanges[-1] += "\n" + message_text(message)
    return exchanges


def relevant_context(earlier: Sequence[dict[str, Any]], question: str) -> str:
    """The earlier exchanges that bear on `question`: the latest substantive one, and every other that
    shares a content word with what is already kept (transitively)."""
    exchanges = [(content_words(e), e) for e in _exchanges(earlier)]
    substantive = [i for i, (words, _) in enumerate(exchanges) if len(words) >= 2]
    if not substantive:
        return ""
    keep = {substantive[-1]}
    anchor = content_words(question) | exchanges[substantive[-1]][0]
    grew = True
    while grew:
        grew = False
        for i in substantive:
            if i not in keep and exchanges[i][0] & anchor:
                keep.add(i)
                anchor |= exchanges[i][0]
                grew = True
    return "\n".join(exchanges[i][1] for i in sorted(keep))
