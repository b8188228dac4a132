"""The kinds of difference a candidate shows: each has its own evidence and its own threshold in a policy."""

from __future__ import annotations

from enum import StrEnum


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
