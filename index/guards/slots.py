"""A changed slot: two prompts that share their frame and differ in one or two content words swapped for words
WordNet does not call the same (buy/sell, wholesale/retail, adults/children, iOS/Android), or in an alternative
dropped from a coordination ("before or after eating" / "after eating"). Such a pair is its own kind of evidence
(`index.match.outcome.Kind.SLOT`): a stricter cold-start threshold, learned per namespace from its own labels.

A swap WordNet calls a synonym, a broader or narrower word, or the same word (fix/repair, change/update, dog/dogs)
is a rewording, not a changed slot. Pure; microseconds per pair after the WordNet table is loaded.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from index.guards.form import FREE_WORDS, abbreviates
from index.guards.text import CACHE_SIZE, FUNCTION_WORDS, differing_spans, stem, word_set, words
from index.guards.wordnet import Relation, WordNet, load_wordnet

# At most this many changed spans, each of at most this many content words a side: more is not one slot.
MAX_SPANS = 2
MAX_SPAN_WORDS = 2
# The frame: at least this share of the longer prompt's content words (and two of them) are the same.
MIN_FRAME = 0.5
# Relations that make a swap a rewording.
REWORDING = frozenset({Relation.SAME, Relation.SYNONYM, Relation.BROADER})
# Words that join alternatives: dropping one with an alternative narrows the question's scope.
_COORDINATORS = frozenset({"or", "and", "nor", "either", "neither", "both", "versus", "vs"})
_IGNORED = FREE_WORDS | FUNCTION_WORDS
# Who a question is about, said by a third-person pronoun ("I", "my", "you" and "one" are the asker and the
# assistant, "it" points at what was said).
_REFERENTS = word_set("he she him her his hers they them their theirs")
_PRESENT = word_set("is am are do does has have")
_PAST = word_set("was were did had")
_BE = word_set("is am are was were be been being")
# What changed, as `ChangedSlot.relation` names it beside WordNet's relations.
DROPPED = "alternative dropped"
COORDINATOR = "coordinator changed"
ROLES = "roles swapped"
REFERENT = "referent changed"
TENSE = "tense changed"
VOICE = "roles reversed in the passive"
QUANTIFIER = "quantifier changed"
ADDED = "modifier added"
_ALTERNATIVES = frozenset({Relation.SIBLING, Relation.ANTONYM, ROLES, REFERENT, TENSE, VOICE})
_SCOPE = frozenset({DROPPED, COORDINATOR, QUANTIFIER})
# How much, how often, how many: a change from one to another changes what is claimed or asked.
# Each quantifier's class: words of one class say the same amount ("some" / "any", "all" / "every").
_QUANTITY = {"some": "some", "any": "some", "several": "some", "all": "all", "every": "all", "each": "all",
             "most": "most", "many": "many", "few": "few", "always": "always", "never": "never",
             "sometimes": "sometimes", "usually": "usually", "often": "usually", "rarely": "rarely",
             "seldom": "rarely", "only": "only"}
_QUANTIFIERS = frozenset(_QUANTITY)
_ONLY = word_set("only")
# A yes/no question opens with one: it claims something ("Is Maria an average economist?"), and a modifier added
# to the claim can flip its answer, where in a question for content ("Where is a comprehensive list ...?") it only
# narrows what is asked for.
_AUXILIARIES = word_set("is are am was were do does did can could will would shall should may might must has have "
                        "had")
# Words on each side the search for opposites reads at most (bounded work on long edits).
_MAX_OPPOSED = 8
# A clipped form keeps this many letters at least ("int" for "integer").
_MIN_CLIP = 3


@dataclass(frozen=True)
class ChangedSlot:
    """What changed: the two sides of the slot (one empty for a dropped alternative) and how WordNet relates them."""

    left: str
    right: str
    relation: str

    @property
    def alternative(self) -> bool:
        """The swapped words are alternatives by WordNet: siblings under one hypernym (red/blue) or antonyms."""
        return self.relation in _ALTERNATIVES

    @property
    def scope(self) -> bool:
        """An alternative was dropped ("before or after" / "after"): the question's scope changed, which no
        namespace's labels make a rewording."""
        return self.relation in _SCOPE

    def describe(self) -> str:
        return f"{self.left or 'nothing'!r} vs {self.right or 'nothing'!r} ({self.relation})"


@lru_cache(maxsize=CACHE_SIZE)
def changed_slot(query: str, cached: str) -> ChangedSlot | None:
    """The first changed slot between the two prompts, or None (they differ in form, in more than a slot, or in
    words WordNet calls the same)."""
    a, b = words(query), words(cached)
    spans = differing_spans(a, b)
    if not spans:
        return None
    changed = [(a[i1:i2], b[j1:j2]) for i1, i2, j1, j2 in spans]
    found = _grammar(a, b, changed) or _opposed(changed)
    if found is not None or len(spans) > MAX_SPANS:
        return found
    content_a = [w for w in a if w not in _IGNORED]
    content_b = [w for w in b if w not in _IGNORED]
    differing = sum(len(_content(left)) + len(_content(right)) for left, right in changed)
    longer = max(len(content_a), len(content_b))
    if not differing or longer - differing < max(2, MIN_FRAME * longer):
        return None
    polar = (bool(a) and a[0] in _AUXILIARIES) or (bool(b) and b[0] in _AUXILIARIES)
    for (left, right), (_, i2, _, j2) in zip(changed, spans, strict=True):
        # the other prompt's words: a dropped alternative is said nowhere in it (else the words only moved)
        other = frozenset(b if left else a)
        after = b[j2:] if right and not left else a[i2:]
        found = _slot(left, right, other) or (_modifier(left, right, after) if polar else None)
        if found is not None:
            return found
    return None


def _opposed(changed: list[tuple[tuple[str, ...], tuple[str, ...]]]) -> ChangedSlot | None:
    """Anywhere in the edit, a word replaced by its WordNet antonym (dangerous/harmless, main/secondary), or a
    quantifier by another (some/all, usually/always): one of the changes reverses what is said, whatever else
    was reworded around it."""
    removed = [w for left, _ in changed for w in _content(left)][:_MAX_OPPOSED]
    added = [w for _, right in changed for w in _content(right)][:_MAX_OPPOSED]
    wordnet = load_wordnet()
    for x in removed:
        for y in added:
            if wordnet.opposed(x, y):
                return ChangedSlot(x, y, str(Relation.ANTONYM))
    quantifiers = [{_QUANTITY[w] for span in sides for w in span if w in _QUANTIFIERS}
                   for sides in zip(*changed, strict=True)]
    if len(quantifiers) == 2 and quantifiers[0] != quantifiers[1] and (all(quantifiers) or _ONLY & set().union(
            *quantifiers)):
        return ChangedSlot(" ".join(sorted(quantifiers[0])), " ".join(sorted(quantifiers[1])), QUANTIFIER)
    return None


def _modifier(left: tuple[str, ...], right: tuple[str, ...], after: tuple[str, ...]) -> ChangedSlot | None:
    """A modifier added in front of a word both prompts keep: a word WordNet reads as an adjective (or does not
    know) right before it ("an artist" / "an average artist"), or a verb that is no noun a word or two before it
    ("is an intern" / "is becoming an intern"). It narrows or changes what the kept word names; a
    noun added ("HTTP 404 error", "the capital city") names what was already said."""
    if left and right:
        return None
    added = _content(left or right)
    following = next((w for w in after if w not in _IGNORED), None)
    if len(added) != 1 or following is None or any(c.isdigit() for c in added[0]):
        return None
    wordnet = load_wordnet()
    senses = {synset[0] for synset in wordnet.synsets(added[0])}
    adjacent = (left or right)[-1] == added[0] and after[:1] == (following,)
    modifies = (not senses or senses & {"a", "s"}) if adjacent else ("v" in senses and "n" not in senses)
    if not modifies:
        return None  # a noun added names what was said ("the capital city"); only a modifier narrows it
    relation = _relation(wordnet, added[0], following)
    return None if relation in REWORDING else ChangedSlot(" ".join(left), " ".join(right), ADDED)


def _grammar(a: tuple[str, ...], b: tuple[str, ...],
             changed: list[tuple[tuple[str, ...], tuple[str, ...]]]) -> ChangedSlot | None:
    """What changed in the sentence's grammar rather than in a content word: the roles of its arguments (who does
    what to whom, in the active or the passive), a pronoun's referent, the tense, or the coordinator."""
    stems_a, stems_b = [stem(w) for w in _content(a)], [stem(w) for w in _content(b)]
    # the passive on one side only: "by" and a form of "be" there, neither on the other ("Did Scott buy ..." /
    # "Was Scott bought by ...")
    by_side = a if "by" in a else b
    other = b if by_side is a else a
    passive = ("by" in a) != ("by" in b) and bool(_BE & set(by_side)) and not _BE & set(other)
    if passive and stems_a[:1] == stems_b[:1] and stems_a:
        return ChangedSlot(" ".join(a), " ".join(b), VOICE)  # the subject stayed: the roles reversed
    if not passive and not _COORDINATORS & (set(a) | set(b)) and _exchanged(stems_a, stems_b):
        return ChangedSlot(" ".join(_content(a)), " ".join(_content(b)), ROLES)
    for left, right in changed:
        found = _grammar_span(left, right)
        if found is not None:
            return found
    return None


def _exchanged(a: list[str], b: list[str]) -> bool:
    """Two words changed places across at least one other (the relation between them): "Justin hired Jason" /
    "Jason hired Justin". Neighbours that change places are a compound said the other way ("git commit")."""
    moved = [i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y]
    if len(a) != len(b) or len(moved) != 2:
        return False
    i, j = moved
    return j - i >= 2 and a[i] == b[j] and a[j] == b[i]


def _grammar_span(left: tuple[str, ...], right: tuple[str, ...]) -> ChangedSlot | None:
    sides = (set(left), set(right))
    coordinators = [side & _COORDINATORS for side in sides]
    if all(coordinators) and coordinators[0] != coordinators[1] and "between" not in sides[0] | sides[1]:
        return ChangedSlot(" ".join(left), " ".join(right), COORDINATOR)
    referents = [side & _REFERENTS for side in sides]
    if any(referents) and referents[0] != referents[1] and all(
            r or len(_content(span)) == 1 for r, span in zip(referents, (left, right), strict=True)):
        return ChangedSlot(" ".join(left), " ".join(right), REFERENT)
    if (sides[0] & _PRESENT and sides[1] & _PAST) or (sides[0] & _PAST and sides[1] & _PRESENT):
        return ChangedSlot(" ".join(left), " ".join(right), TENSE)
    return None


def _said_otherwise(dropped: set[str], other: frozenset[str]) -> bool:
    """The dropped alternative is a word WordNet calls the same as, or broader than, one the other prompt keeps
    ("the meaning or purpose" / "the meaning"): an alternative said twice, not a narrower question."""
    wordnet = load_wordnet()
    return any(_relation(wordnet, x, y) in REWORDING for x in dropped for y in other - _IGNORED)


def _content(span: tuple[str, ...]) -> list[str]:
    return [w for w in span if w not in _IGNORED]


def _slot(left: tuple[str, ...], right: tuple[str, ...], other: frozenset[str]) -> ChangedSlot | None:
    """One changed span as a slot: an alternative dropped (its words said nowhere in `other`, the prompt without
    them), or content words swapped for unrelated ones."""
    cl, cr = _content(left), _content(right)
    if not left or not right:
        dropped = set(left or right)
        alternative = dropped - FREE_WORDS - _COORDINATORS
        # an alternative is a word or two with its coordinator ("before or"); a longer span is a clause added
        if (dropped & _COORDINATORS and alternative and not alternative & other and len(left or right) <= 3
                and not _said_otherwise(alternative, other)):
            return ChangedSlot(" ".join(left), " ".join(right), DROPPED)
        return None
    if not cl or not cr or max(len(cl), len(cr)) > MAX_SPAN_WORDS:
        return None
    if any(any(c.isdigit() for c in w) for w in cl + cr):
        return None  # a value: the values stage reads it
    wordnet = load_wordnet()
    if len(left) == len(right) == 1:  # one word for another: a slot, unless WordNet calls them the same
        relation = _relation(wordnet, left[0], right[0])
        return None if relation in REWORDING else ChangedSlot(left[0], right[0], str(relation))
    # a phrase said another way ("turn on" / "enable") is a rewording, unless WordNet names an alternative
    for x in (*cl, " ".join(cl)):
        for y in (*cr, " ".join(cr)):
            relation = _relation(wordnet, x, y)
            if relation in (Relation.SIBLING, Relation.ANTONYM):
                return ChangedSlot(" ".join(cl), " ".join(cr), str(relation))
    return None


def _relation(wordnet: WordNet, x: str, y: str) -> Relation:
    if x == y or stem(x) == stem(y) or abbreviates(x, y) or _clipped(wordnet, x, y):
        return Relation.SAME
    return wordnet.relation(x, y)


def _clipped(wordnet: WordNet, x: str, y: str) -> bool:
    """The shorter word begins the longer and WordNet does not know it: a clipped form ("int" / "integer")."""
    x, y = stem(x), stem(y)
    short, long = (x, y) if len(x) < len(y) else (y, x)
    return len(short) >= _MIN_CLIP and long.startswith(short) and short not in wordnet
