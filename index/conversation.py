"""Multi-turn context: which earlier turns matter to the last question, whether the last message asks
anything on its own, and an alignment check that spots a swapped entity or detail between two contexts.

The semantic tier compares two conversations by (a) their last user messages and (b) their *relevant
context*: the most recent substantive exchange plus any earlier exchange that shares a content word with
it or with the question (small talk and unrelated side questions drop out).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from index.stages import Stage, StageResult
from index.textdiff import opcodes, ratio

_WORD = re.compile(r"[a-z0-9][a-z0-9'+#.-]*")
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
ACKNOWLEDGEMENT_WORDS = frozenset({
    "ok", "okay", "k", "yes", "no", "yep", "nope", "sure", "thanks", "thank", "you", "continue", "go", "on", "more",
    "keep", "going", "next", "and", "so", "why", "really", "great", "cool", "got", "it", "done", "again", "retry",
    "please", "proceed", "elaborate", "expand", "same", "that", "this", "alright", "fine", "right", "correct",
})


def content_words(text: str) -> set[str]:
    """Lower-cased content words, cut to a 6-letter stem so inflections meet."""
    return {w.strip(".-")[:6] for w in _WORD.findall(text.lower()) if w not in STOPWORDS and len(w) > 2}


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
    return any(w not in ACKNOWLEDGEMENT_WORDS for w in words)


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


class AlignmentStage:
    """Two contexts that are mostly the same words but swap a content word ("lasagna" for "shepherd's pie",
    "ibuprofen" for "acetaminophen") describe a different situation: veto."""

    name = "alignment"

    def __init__(self, min_overlap: float = 0.6, max_span: int = 3) -> None:
        self.min_overlap = min_overlap
        self.max_span = max_span

    def check(self, query: str, cached: str) -> StageResult:
        a = [w.strip(".,;:!?") for w in _WORD.findall(query.lower())]
        b = [w.strip(".,;:!?") for w in _WORD.findall(cached.lower())]
        if ratio(a, b) < self.min_overlap:
            return StageResult(self.name, True, "contexts reworded, no aligned swap")
        for op, i1, i2, j1, j2 in opcodes(a, b):
            if op != "replace" or i2 - i1 > self.max_span or j2 - j1 > self.max_span:
                continue
            left = {w[:5] for w in a[i1:i2] if w not in STOPWORDS}
            right = {w[:5] for w in b[j1:j2] if w not in STOPWORDS}
            if left and right and left != right:
                swapped = f"{' '.join(a[i1:i2])!r} vs {' '.join(b[j1:j2])!r}"
                return StageResult(self.name, False, f"context swaps {swapped}")
        return StageResult(self.name, True, "no aligned swap")


def context_stages(stages: Sequence[Stage]) -> tuple[Stage, ...]:
    """Stages run over the two relevant contexts: the prompt stages plus the alignment check."""
    return (*stages, AlignmentStage())
