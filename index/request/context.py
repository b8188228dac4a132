"""Multi-turn context: what the last question depends on in the earlier turns, whether the last message asks
anything on its own (the alignment check over two contexts is `index.guards.alignment`).

The semantic tier compares two conversations by (a) their last user messages and (b) their *relevant
context*: the request the follow-up follows up (the user sentences its reply echoes, told over as many turns as
refer back to each other) and every sentence tied to it by a shared word or value (the reply that restates
it, the option picked, the turn that names the order), plus the options and values a reply in that thread
lists. Greetings, small talk, apologies, asides and an unrelated earlier exchange share nothing with the
request and drop out, with their numbers, names and negations; the rest is cut to the embedder's window,
furthest from the request first, so a long retelling is compared, not refused.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from index.embedding.window import WINDOW_CHARS, WINDOW_WORDS, beyond_window

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
_LISTED = re.compile(r"^\s*(?:\d{1,2}[.)]|[-*•])\s+\S")
# A sentence that points back at something said before ("insure it", "that one", "the same").
_REFERS = re.compile(r"\b(?:it|that|this|those|these|them|they|one|ones|same|there)\b", re.IGNORECASE)
# The items of an inline list ("Node 20, Python 3.12 or Go 1.22"): three or more, all but the first short.
_ITEMS = re.compile(r",\s*(?:or\s+|and\s+)?|\s+or\s+|\s+and\s+")
_ITEM_WORDS = 4
_SHORT = 3
# The turns read (the most recent), and how much tied text the search gathers before it stops (what the window
# then cuts): a long conversation costs what a short one does.
MAX_TURNS = 40
_SEARCH_CHARS = 4 * WINDOW_CHARS
_CONTINUES = re.compile(r"(?:he|she|it|it's|they|they're|this|that|these|those|his|her|its|their)\b", re.IGNORECASE)
_PRONOUNS = frozenset({"he", "him", "his", "she", "her", "hers", "it", "its", "they", "them", "their", "theirs",
                       "itself", "himself", "herself", "said"})
# Sentences, and the clauses a colon opens ("So, the reason I'm writing: ..."); the colon stays with its clause.
_CLAUSE = re.compile(r"(?<=[.!?])\s+|(?<=[a-z0-9]:)\s+", re.IGNORECASE)
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


@dataclass(frozen=True)
class _Sentence:
    """One sentence (or listed line) of an earlier turn, with the words it can share with another."""

    turn: int
    role: str
    text: str
    words: frozenset[str]
    listed: bool


def _words(text: str) -> frozenset[str]:
    """Content stems plus every token holding a digit (a code, an amount, a count); "no problem" says nothing."""
    text = _NO_MATTER.sub(" ", text.lower())
    tokens = [w.strip(".-,'") for w in WORD.findall(text)]
    digits = {w for w in tokens if any(c.isdigit() for c in w)}
    words = {w[:6] for w in tokens if len(w) > 2 and w not in STOPWORDS and w not in _PRONOUNS}
    return frozenset(words | digits)


def _valued(sentence: _Sentence) -> bool:
    return any(any(c.isdigit() for c in w) for w in sentence.words)


def _valued_echo(sentence: _Sentence, echo: frozenset[str]) -> bool:
    return any(any(c.isdigit() for c in w) for w in sentence.words & echo)


def _sentences(earlier: Sequence[dict[str, Any]]) -> list[_Sentence]:
    """The non-chatter sentences of the turns, in order; a listed line is one sentence, a leading chatter clause
    ("No problem, ...") is left out."""
    out: list[_Sentence] = []
    for turn, message in enumerate(earlier):
        for line in message_text(message).split("\n"):
            listed = bool(_LISTED.match(line))
            for sentence in [line.strip()] if listed else _CLAUSE.split(line.strip()):
                head, _, rest = sentence.partition(", ")
                if rest and is_chatter(head):
                    sentence = rest
                if sentence and not is_chatter(sentence):
                    options = listed or _inline_list(sentence)
                    out.append(_Sentence(turn, str(message.get("role")), sentence, _words(sentence), options))
    return out


def _inline_list(sentence: str) -> bool:
    items = [item for item in _ITEMS.split(sentence.rstrip(".!?")) if item.strip()]
    return len(items) >= 3 and all(len(item.split()) <= _ITEM_WORDS for item in items[1:])


def _linked(kept: _Sentence, other: _Sentence) -> bool:
    """`other` belongs with a kept sentence: the reply to it (or the reply a short request answers) when they
    share a word; any other sentence when they share a value or two words (one common word, "order",
    does not tie small talk or an exchange about another order to the request)."""
    shared = kept.words & other.words
    if not shared:
        return False
    replies = other.role == "assistant" and (other.turn == kept.turn + 1
                                             or (other.turn == kept.turn - 1 and len(kept.words) <= _SHORT))
    return replies or len(shared) >= 2 or any(any(c.isdigit() for c in w) for w in shared)


def _refers(chosen: Iterable[_Sentence], before: frozenset[str]) -> bool:
    """A short request that points back ("Can you insure it?", "I want to delete the account." after a reply
    about the account): it follows up the turn before it."""
    said = list(chosen)
    words = frozenset().union(*(s.words for s in said))
    return len(words) <= _SHORT and (bool(words & before) or any(_REFERS.search(s.text) for s in said))


def _neighbours(sentences: list[_Sentence], by_word: dict[str, list[int]], at: int) -> list[int]:
    """The sentences linked to sentence `at`, and the one before it in its turn when it opens with a pronoun ("My
    son is 8. He has a fever.": the first says who). Not the one after: "It's been a long week" opens with one
    too, and says nothing."""
    current = sentences[at]
    near = {i for word in current.words for i in by_word.get(word, ())}
    out = [i for i in sorted(near) if i != at and _linked(current, sentences[i])]
    if at > 0 and sentences[at - 1].turn == current.turn and _CONTINUES.match(current.text):
        out.append(at - 1)
    return out


def _anchor(sentences: list[_Sentence], question: frozenset[str]) -> set[int]:
    """The request the follow-up follows up: the user sentences of the latest substantive user turn that its
    reply or the follow-up echoes most (every sentence of it when nothing is echoed). A request told over
    several turns counts whole: a turn before a reply that only asks for more ("Sure, what happened?"), and the
    turn before a short one that refers back to it (`_refers`)."""
    users = sorted({s.turn for s in sentences if s.role == "user" and s.words})
    if not users:
        return set()
    anchor: set[int] = set()
    for turn in reversed(users):
        request = [i for i, s in enumerate(sentences) if s.turn == turn]
        echo = frozenset().union(*(s.words for s in sentences if s.turn == turn + 1)) | question
        score = {i: len(sentences[i].words & echo) for i in request}
        best = max(score.values())
        # the most echoed, any other echoed in two words and at least half as much, or a value the reply repeats:
        # a request may be told in more than one sentence, and a reply that greets small talk warmly still
        # restates the request
        chosen = {i for i in request if score[i] == best or (score[i] >= 2 and 2 * score[i] >= best)
                  or _valued_echo(sentences[i], echo)} if best else set(request)
        anchor |= chosen
        reply = [s for s in sentences if s.turn == turn - 1]
        before = frozenset().union(*(s.words for s in reply))
        asks = any(s.text.endswith("?") for s in reply) and len(before) <= 1
        if not (asks or _refers((sentences[i] for i in chosen), before)):
            break
    return anchor


def _last_reply(sentences: list[_Sentence], keep: set[int]) -> list[int]:
    """The sentences of the last reply not kept yet, from its first kept one on (or all of it when none is
    kept): the follow-up answers that reply ("I can freeze it while you're away." / "Will I still be charged?"),
    whatever words it shares, while what opens a reply before it turns to the request answers small talk
    ("Stay warm out there.")."""
    last = max((s.turn for s in sentences if s.role == "assistant"), default=None)
    reply = [i for i, s in enumerate(sentences) if s.turn == last]
    first = next((i for i in reply if i in keep), None)
    return [i for i in reply if i not in keep and (first is None or i > first)]


def relevant_context(earlier: Sequence[dict[str, Any]], question: str) -> str:
    """What the follow-up `question` depends on: the request it follows up (`_anchor`), the last reply from where
    it turns to the request (`_last_reply`), every sentence tied to the request by shared words, directly or
    through another kept sentence (`_tied`: the reply that restates it, the option picked, the turn that names
    the order), and what a reply in that thread lists or quantifies (`_stated`). Small talk, asides and an
    unrelated exchange share no word with the request and drop out, with their numbers, names and negations.
    Past the embedder's window the rest is cut in that order of priority; turns are joined in order, one line
    each. Only the last `MAX_TURNS` turns are read."""
    sentences = _sentences([m for m in earlier if m.get("role") in ("user", "assistant")][-MAX_TURNS:])
    anchor = sorted(_anchor(sentences, frozenset(content_words(question))))
    tied = _tied(sentences, anchor)
    reply = _last_reply(sentences, {*anchor, *tied})
    stated = _stated(sentences, {*anchor, *tied, *reply})
    return _fitted(sentences, [*anchor, *reply, *tied, *stated])


def _tied(sentences: list[_Sentence], anchor: list[int]) -> list[int]:
    """The sentences tied to the anchor, nearest first; the search stops once they fill the window many times."""
    by_word: dict[str, list[int]] = {}
    for i, sentence in enumerate(sentences):
        for word in sentence.words:
            by_word.setdefault(word, []).append(i)
    keep, order, frontier = set(anchor), [], list(anchor)
    size = sum(len(sentences[i].text) for i in anchor)
    while frontier and size < _SEARCH_CHARS:
        for i in _neighbours(sentences, by_word, frontier.pop(0)):
            if i not in keep:
                keep.add(i)
                order.append(i)
                frontier.append(i)
                size += len(sentences[i].text)
    return order


def _stated(sentences: list[_Sentence], keep: set[int]) -> list[int]:
    """What a reply in the thread lists or quantifies (options, a price, a date) after it turns to the request:
    part of the request's state ("Happy 60th!" before it is not)."""
    first: dict[int, int] = {}
    for i in sorted(keep):
        first.setdefault(sentences[i].turn, i)
    return [i for i, s in enumerate(sentences) if i not in keep and s.turn in first and i > first[s.turn]
            and (s.listed or (s.role == "assistant" and _valued(s)))]


def _fitted(sentences: list[_Sentence], order: list[int]) -> str:
    """The text of the longest prefix of `order` (most needed first) that fits the embedder's window."""
    chosen: list[int] = []
    chars = words = 0
    for i in order:
        chars += len(sentences[i].text) + 1
        words += len(sentences[i].text.split())
        if chosen and (chars > WINDOW_CHARS or words > WINDOW_WORDS):
            break
        chosen.append(i)
    while len(chosen) > 1 and beyond_window(_text(sentences, chosen)):
        chosen.pop()
    return _text(sentences, chosen)


def _text(sentences: list[_Sentence], chosen: Iterable[int]) -> str:
    """The chosen sentences in their order, a turn to a line (a listed line on its own)."""
    lines: dict[int, list[str]] = {}
    for i in sorted(chosen):
        lines.setdefault(sentences[i].turn, []).append(sentences[i].text)
    return "\n".join("\n".join(_join(parts)) for _, parts in sorted(lines.items()))


def _join(parts: list[str]) -> list[str]:
    """Sentences of one turn on one line; a listed line keeps a line of its own."""
    out: list[str] = []
    for part in parts:
        if _LISTED.match(part) or not out or _LISTED.match(out[-1]):
            out.append(part)
        else:
            out[-1] = f"{out[-1]} {part}"
    return out
