"""The kinds of difference a candidate shows, each with its own evidence and its own threshold in a policy, and the
one rule that gives a candidate its kind (before the decision's steps run)."""

from __future__ import annotations

from enum import StrEnum

from index.guards.slots import changed_slot


class Kind(StrEnum):
    """The kind of difference a candidate shows, each with its own evidence and threshold (`index.match.
    live_threshold`, one learner over all of them): `cosine` (a single-turn prompt worded otherwise), `slot` (one
    or two content words swapped or an alternative dropped, `index.guards.slots`: a stricter prior) and
    `alternative` (a slot swapped for its WordNet sibling or antonym: red/blue, kitchen/bathroom; never served
    until the namespace's own labels show such swaps are rewordings there) and `conversation` (a conversation's
    last message, its context held to the context rule)."""

    COSINE = "cosine"
    SLOT = "slot"
    ALTERNATIVE = "alternative"
    CONVERSATION = "conversation"


def kind_of(query: str, cached: str, conversation: bool) -> Kind:
    """The kind of difference between a request's last message and a candidate's, decided once, before any step
    runs (`index.match.steps.Pair.kind`): a changed slot (`index.guards.slots`; a conversation's last messages
    too) is `alternative` or `slot`, else a conversation is `conversation` and a single turn `cosine`."""
    found = changed_slot(query, cached)
    if found is not None and not found.scope:
        return Kind.ALTERNATIVE if found.alternative else Kind.SLOT
    return Kind.CONVERSATION if conversation else Kind.COSINE
