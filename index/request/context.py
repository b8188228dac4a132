"""Multi-turn context: whether the last message asks something whole on its own (`self_contained`), and
otherwise what it can depend on (`dependency_context`); whether a message asks anything at all (`has_question`).

A follow-up that points back ("book it", "and the price?", "the cheaper one", a bare yes) depends on the whole
thread: every value, name, item, option and action the user gave anywhere, and what the assistant last offered
or confirmed. Those are compared, not a summary of them: a detail dropped from the comparison is a detail a
wrong hit can hide behind. A self-contained question after unrelated history is compared as a question.
"""

from __future__ import annotations

import itertools
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
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
# The turns read (the most recent): a long conversation costs what a short one does.
MAX_TURNS = 40

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


def sentences(text: str) -> list[str]:
    """The sentences of `text`, line by line (a listed option stays a sentence of its own)."""
    return [s for line in text.split("\n") for s in _SENTENCE.split(line.strip()) if s]


def has_question(text: str) -> bool:
    """False for empty messages, acknowledgements and 'continue'-style nudges."""
    words = re.sub(r"[^\w\s']", " ", text.lower()).split()
    return any(w not in ACKNOWLEDGEMENTWORDS for w in words)


# What a question needs from the thread is read from its grammar, never from a list of phrases:
# - a pronoun or "one" stands for something named before it; the question names it itself only with a noun
#   phrase of its own before the pronoun (a determiner or possessive and a content word: "my laptop ... fix it");
# - "this", "these", "those", "such", "same" point at what was said; "that" only where a clause follows it
#   ("true that the ...") rather than a noun ("that error");
# - "it" next to a form of "be" with "to", "that" or "if" after it is no referent at all ("is it safe to ...");
#   "there" next to a form of "be" is existential ("is there a way ...");
# - a word that relates to something said (another, else, instead, also, again, more, a comparative without
#   "than") asks about it; an ordinal or superlative asks about a set of its own only with a content word after;
# - a definite noun phrase with nothing after it that says which ("the address?", "when does the museum open")
#   is one the thread named ("the price of the Team plan", "the capital of France" say which);
# - an opening that continues the previous turn ("and the price?", "what about Tuesday?") or answers it ("yes,
#   ...") is a follow-up.
_PRONOUNS = frozenset({"it", "its", "itself", "one", "ones", "there", "then", "here"})
_PEOPLE = frozenset({"they", "them", "their", "theirs", "he", "him", "his", "she", "her", "hers"})
_DEICTIC = frozenset({"this", "these", "those", "such", "same", "former", "latter", "above", "previous",
                      "aforementioned"})
_RELATES = frozenset({"another", "else", "other", "others", "instead", "also", "too", "again", "still", "anymore",
                      "more", "less",
                      "fewer", "cheaper", "earlier", "later", "closer", "nearer", "better", "worse", "bigger",
                      "smaller", "faster", "slower", "longer", "shorter"})
_ORDINALS = frozenset({"first", "second", "third", "last", "next", "previous", "cheapest", "latest", "earliest",
                       "nearest", "closest", "best", "biggest", "smallest", "fastest"})
_DETERMINERS = frozenset({"a", "an", "the", "my", "our", "your", "his", "her", "their", "some", "any", "each",
                          "every", "no", "this", "that", "these", "those"})
_BE = frozenset({"is", "are", "was", "were", "be", "been", "isn't", "aren't", "wasn't", "it's", "there's"})
_CLAUSE_AFTER = frozenset({"to", "that", "if", "whether", "when", "for"})
# Words after a definite noun that say which one it is.
_SAYS_WHICH = frozenset({"of", "to", "for", "in", "on", "at", "from", "between", "with", "that", "which", "who",
                         "where", "about", "by", "near", "than", "when", "called", "named"})
_QUESTION_WORDS = frozenset({"what", "which", "who", "whom", "whose", "when", "where", "why", "how"})
_AUXILIARIES = frozenset({"is", "are", "am", "was", "were", "do", "does", "did", "can", "could", "will", "would",
                          "should", "shall", "may", "might", "must", "has", "have", "had"})
# "can you ...", "would you ...": a request to act, not a question for information.
_MODALS = frozenset({"can", "could", "will", "would", "shall", "may", "might", "must", "should"})
_PERSONS = frozenset({"i", "we", "you"})
_ANSWERS = frozenset({"yes", "no", "yeah", "yep", "nope", "ok", "okay", "sure", "right", "correct", "exactly"})
# An opening that continues the previous turn ("and the price?", "what about Tuesday?", "so how much?").
_CONTINUES_TURN = re.compile(r"^\W*(?:and|or|but|so|also|plus|then|what about|how about|same|only|just)\b",
                             re.IGNORECASE)
_SUBJECTS = _DETERMINERS | {"i", "you", "we", "they", "he", "she", "it", "there"}
_INDEFINITES = frozenset({"a", "an", "any", "some", "each", "every"})
# A quoted text or a code span names what it quotes: a question that quotes its subject says which one it means
# ('what does the term "embedding" mean?', 'the `OK` exception'); it is read as a name.
_QUOTED = re.compile(r"\"[^\"\n]{1,200}\"|“[^”\n]{1,200}”|`[^`\n]{1,200}`")
_CLAUSE_BOUNDS = frozenset({",", ";", ".", "and", "but", "if", "because", "when", "so", "since", "after", "before"})
# Words after "the" read for what says which one it is.
_WHICH_WINDOW = 4
_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9'’+#.-]*|[?,;:.!]")
# Content words a question needs to say what it asks on its own, and to be asked the same after any history.
_OWN_WORDS = 2
_OWN_SUBJECT_WORDS = 3
# What gives a value the answer can depend on: a digit, a quoted text, or a capitalised word inside a sentence
# (a name); "I" and its contractions are not names.
_GIVES = re.compile(r"\d|[\"“][^\"”]+[\"”]|(?<=[a-z,;:] )(?!I\b|I'|I’)[A-Z][\w-]*")
# What an assistant's answer gives: a number or a quoted text (its capitalised words name its own menus and pages).
_GIVES_NUMBER = re.compile(r"\d|[\"“][^\"”]+[\"”]")


def _tokens(question: str) -> list[str]:
    return [t.replace("’", "'").strip(".-") or t for t in _TOKEN.findall(question)]


def _content(word: str) -> bool:
    return (len(word) > 2 and word.lower() not in STOPWORDS and word.isalnum()) or any(c.isdigit() for c in word)


def _names_its_own(tokens: Sequence[str], upto: int) -> bool:
    """A noun phrase of the question's own in a clause before the one at `upto` ("my laptop is slow, how do I fix
    it?"): a determiner or possessive and a content word, a name or a value, before a comma or a conjunction."""
    bounds = [i for i, w in enumerate(tokens[:upto]) if w in _CLAUSE_BOUNDS]
    before = tokens[:bounds[-1]] if bounds else []
    return any(w.lower() in _DETERMINERS and _content(n) for w, n in itertools.pairwise(before)) or any(
        any(c.isdigit() for c in w) or (i > 0 and w[:1].isupper() and w != "I") for i, w in enumerate(before))


def _after_indefinite(tokens: Sequence[str], i: int) -> bool:
    """The word at `i` follows an indefinite noun phrase of the question's own, nothing but its words between
    ("an off-chain database that ..."), so "that" opens a relative clause on it rather than pointing back ("a way to
    change that address" has more than a noun phrase between)."""
    for k in (2, 3):
        if i - k < 0:
            return False
        between = tokens[i - k + 1:i]
        if tokens[i - k].lower() in _INDEFINITES and all(
                w.replace("-", "").isalpha() and w.lower() not in STOPWORDS for w in between):
            return True
    return False


def _points_back_at(tokens: Sequence[str], i: int) -> bool:
    """The word at `i` stands for, or relates to, something the question does not name itself."""
    word, after = tokens[i].lower(), [t.lower() for t in tokens[i + 1:]]
    near = {t.lower() for t in tokens[max(i - 1, 0):i + 2]}
    if word in ("this", "that") and after[:1] and after[0] in _BE and after[1:2] in (["a"], ["an"]):
        return False  # "this is a silly question": it says what it stands for
    if word in _DEICTIC:
        return True
    if word == "that":
        if after and after[0] not in _SUBJECTS and _after_indefinite(tokens, i):
            return False  # "a database that supports ...": a relative clause on the question's own noun
        return not (after and after[0] in _SUBJECTS)  # "... that the plan ...": a clause, not a referent
    if word == "it" and near & _BE and _CLAUSE_AFTER & set(after):
        return False  # "is it safe to ...": no referent
    if word == "there" and (near & _BE or (i == 1 and after[:1] and after[0] in ",!.")):
        return False  # "is there a way ...": existential; "hi there!": a greeting
    if word == "then":
        return "if" not in (t.lower() for t in tokens[:i])
    if word in _PEOPLE:
        return True  # who "they" or "she" are is the thread's
    if word in _PRONOUNS:
        return not (word == "one" and after and _content(after[0])) and not _names_its_own(tokens, i)
    if word in _RELATES:
        return "than" not in after and not (word in ("more", "less", "fewer") and after and _content(after[0]))
    if word in _ORDINALS:  # "the first one", "the cheapest?" vs "the first president of France"
        return not (after and after[0].isalpha() and after[0] not in _PRONOUNS | _SAYS_WHICH | _DETERMINERS)
    return False


def refers_back(sentence: str) -> bool:
    """The sentence holds a pronoun or demonstrative that stands for something said before it ("I can repair it.",
    "Sorry about that."): it answers the thread."""
    tokens = _tokens(sentence)
    return any(t.lower() in _PRONOUNS | _PEOPLE | _DEICTIC | {"that"} and _points_back_at(tokens, i)
               for i, t in enumerate(tokens))


def commits(sentence: str) -> bool:
    """The sentence offers, promises or asks for an action: a first or second person with a modal ("I can arrange a
    pickup", "we'll send it", "I'd rather you ...", "you could try ...")."""
    tokens = [t.lower() for t in _tokens(sentence)]
    return any(w.split("'")[0] in _PERSONS and (w.endswith(("'ll", "'d")) or any(
        n in _MODALS for n in tokens[i + 1:i + 3])) for i, w in enumerate(tokens))


# Words after a modal or a request marker that carry no action of their own ("I can help you delete ...": delete).
_NO_ACTION = frozenset({"help", "get", "make", "let", "have", "do", "go", "be", "try", "like", "want", "need",
                        "please", "just", "also", "certainly", "definitely", "happily", "gladly", "able", "sure",
                        "now", "still", "then", "not", "never", "me", "us", "you", "it", "them", "to"})
# What asks for or offers an action before its verb: "want to", "need to", "like to", "please", "let's".
_WANTS = frozenset({"want", "wants", "need", "needs", "like", "love", "wish", "trying", "planning", "going"})


def actions(sentence: str) -> tuple[str, ...]:
    """The actions a sentence offers, promises or asks for, each as its word: the first content word after a modal
    of a first or second person ("I can freeze the membership", "can you cancel it?", "we'll send a courier"),
    after "want/need/would like to" ("I want to delete the account"), after "please" or "let's". Read from the
    grammar of offers and requests, never from a list of actions."""
    tokens = [t.lower().replace("’", "'") for t in _tokens(sentence)]
    found: list[str] = []
    for i, word in enumerate(tokens):
        base = word.split("'")[0]
        near = tokens[max(i - 2, 0):i + 2]
        marker = ((word in _MODALS and any(t in _PERSONS for t in near))
                  or (base in _PERSONS and word.endswith(("'ll", "'d")))
                  or (word == "to" and i > 0 and tokens[i - 1] in _WANTS)
                  or word in ("please", "let's", "lets"))
        if not marker:
            continue
        for token in tokens[i + 1:i + 6]:
            if token in _CLAUSE_BOUNDS or token in "?!:":
                break
            if (token.isalpha() and len(token) > 2 and token not in STOPWORDS and token not in _NO_ACTION
                    and token not in _PERSONS):
                found.append(token)
                break
    return tuple(dict.fromkeys(found))


def _definite_without_which(tokens: Sequence[str]) -> bool:
    """A definite noun phrase ("the price?", "when does the museum open?") that nothing after it within a few words
    says which one it is (a preposition, a relative, a possessive, a name or a value: "the capital of France")."""
    for i, word in enumerate(tokens):
        if word.lower() != "the":
            continue
        window = list(itertools.takewhile(lambda t: t not in "?,;:.!", tokens[i + 1:i + 1 + _WHICH_WINDOW]))
        if not any(t.lower() in _SAYS_WHICH or t == "'s" or t[:1].isupper() or any(c.isdigit() for c in t)
                   for t in window):
            return True
    return False


def _own_subject(tokens: Sequence[str]) -> bool:
    """The question names its subject itself, however short it is: a name (a capitalised word after the first, not
    "I") or a value (a digit): "what is Zilliz?". A noun alone is not ("is there a fee?" asks about the thread's
    subject)."""
    return any(any(c.isdigit() for c in w) or (i > 0 and w[:1].isupper() and w != "I") for i, w in enumerate(tokens))


def stands_alone(question: str) -> bool:
    """The message asks something whole on its own: nothing in it points back (a pronoun or "one" without a noun
    of its own before it, a demonstrative, "another", a comparative, a bare definite "the price?", an opening that
    continues or answers the previous turn) and it names at least two content words, or one with a subject of its
    own (`_own_subject`: "what is Zilliz?"). A quoted text or code span is read as a name. When in doubt, it does
    not."""
    tokens = _tokens(_QUOTED.sub(" Quoted ", question))
    if not tokens or _CONTINUES_TURN.match(question) or tokens[0].lower() in _ANSWERS:
        return False
    if any(_points_back_at(tokens, i) for i in range(len(tokens))) or _definite_without_which(tokens):
        return False
    words = len(content_words(question))
    return words >= _OWN_WORDS or (words >= 1 and _own_subject(tokens))


def asks_for_information(question: str) -> bool:
    """A question for information that names its own subject ("how do I reset my router password?", "is it safe to
    ...?"), not a request to act in the thread ("can you book ...", "I'd like ...", "reserve ..."), nor a yes/no
    question about the asker's own case ("will I lose my settings?", "would I still be charged?": the case is the
    thread's), nor one without a noun phrase of its own ("how long per side for medium-rare?"): only such a
    question is asked the same way after any history."""
    raw = _tokens(question)
    tokens = [t.lower().split("'")[0] for t in raw if t.lower() not in ("please", ",")]
    words = len(content_words(question))
    if not question.rstrip().endswith("?") or not tokens or not words or (
            words < _OWN_SUBJECT_WORDS and not _own_subject(raw)):
        return False
    own = _names_its_own([*raw, ","], len(raw) + 1)
    if tokens[0] in _QUESTION_WORDS:
        return own
    return own and tokens[0] in _AUXILIARIES and tokens[1:2] not in (["i"], ["we"], ["you"])


def dependency_context(earlier: Sequence[dict[str, Any]], question: str) -> str | None:
    """What the last message `question` can depend on: the thread from its first related exchange on, every turn
    of it, user and assistant (each value, name, item, option and action the user gave, and what the assistant
    offered or confirmed), a turn to a line. A leading run of exchanges that shares no content word (or value) with
    the rest and with the question is left out when it gives nothing (`_only_asks`: an unrelated question asked
    first), or, before a question for information that stands alone, when each of its exchanges was settled on its
    own (`_settled`). None: the message stands alone and the whole history is such a run; it is then keyed and
    compared as a single-turn question.

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
    lines = (message_text(m).strip() for exchange in exchanges[start:] for m in exchange)
    return "\n".join(line for line in lines if line)


def _unrelated_prefix(exchanges: Sequence[Sequence[dict[str, Any]]], question: str) -> int:
    """How many leading exchanges can leave the context: each gives nothing (`_only_asks`) or, before a question
    for information that stands alone, was settled on its own (`_settled`) or only asked (`_user_only_asks`), and
    together they share no content word (or number) with the later turns and the question; the last exchange only
    when the question stands alone."""
    words = [set().union(*(_stems(message_text(m)) for m in exchange)) for exchange in exchanges]
    alone = stands_alone(question)
    limit = len(exchanges) if alone else len(exchanges) - 1
    settled_ok = alone and asks_for_information(question)
    asked = _stems(question)
    best = 0
    for cut in range(1, limit + 1):
        exchange = exchanges[cut - 1]
        if not (_only_asks(exchange) or (settled_ok and (_settled(exchange) or _user_only_asks(exchange)))):
            break
        if not set().union(*words[:cut]) & set().union(asked, *words[cut:]):
            best = cut
    return best


def _only_asks(exchange: Sequence[dict[str, Any]]) -> bool:
    """The exchange gives nothing the answer could depend on: its user turn only asks (every sentence with a content
    word is a question: a statement or a request gives a detail) and no turn of it holds a value."""
    if any((_GIVES if m.get("role") == "user" else _GIVES_NUMBER).search(message_text(m)) for m in exchange):
        return False
    asked = [s for m in exchange if m.get("role") == "user" for s in sentences(message_text(m)) if content_words(s)]
    return all(s.rstrip().endswith("?") for s in asked)


def _user_only_asks(exchange: Sequence[dict[str, Any]]) -> bool:
    """The user's turn of the exchange only asks (every sentence with a content word is a question), whatever it
    names and whatever the answer gave: before a question for information that stands alone and shares nothing
    with it, a question the user asked and had answered changes nothing the new one asks. A statement ("I'm
    vegetarian.") or a request to act ("can you get me a weather report for Larkspur?": `actions`) may: it is not
    dropped this way."""
    asked = [s for m in exchange if m.get("role") == "user" for s in sentences(message_text(m)) if content_words(s)]
    return bool(asked) and all(s.rstrip().endswith("?") and not actions(s) for s in asked)


def _settled(exchange: Sequence[dict[str, Any]]) -> bool:
    """The exchange was about something of its own and answered: the assistant's reply takes up a content word or
    value the user gave. A detail the user stated and the assistant did not take up ("I'm vegetarian." / "Noted!")
    may be a constraint on any later question: it is not settled."""
    user = set().union(*(_stems(message_text(m)) for m in exchange if m.get("role") == "user"))
    reply = set().union(*(_stems(message_text(m)) for m in exchange if m.get("role") == "assistant"))
    return bool(user & reply)


def _stems(text: str) -> set[str]:
    """Content words cut to four letters (loose on purpose: "sending" meets "send", so a turn that may be related
    is kept) and every token holding a digit (a code, an amount, a count)."""
    digits = {w.strip(".-,'") for w in WORD.findall(text.lower()) if any(c.isdigit() for c in w)}
    return {w[:4] for w in content_words(text)} | digits
