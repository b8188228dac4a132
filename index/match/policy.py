"""The match policy: everything that decides whether a cached answer may serve a request. `build_policy` makes
it from `Settings` in one place, for the gateway and for `eval`, so a policy means the same in both."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from index.guards.stages import STAGE_ORDER
from index.match.kinds import Kind
from index.request.keys import DEFAULT_MAX_DECISION_CHARS, ContextMatch

# Every default of the match lives here, once; `Settings` and `eval` read them from this module.
# Chosen from `eval sweep` on datasets/pairs-dev.jsonl and `eval replay` on datasets/stream.jsonl; see README
# "How the default threshold was chosen".
DEFAULT_MIN_SIMILARITY = 0.90
# The guarded rule's cosine threshold (the default decision): the lowest at which wrong / served stays within the
# 2% budget on every dev source (Redis LangCache, our pairs-dev and stream), chosen with `python -m eval panel`.
DEFAULT_GUARDED_MIN_SIMILARITY = 0.92
DEFAULT_MIN_CONTEXT_SIMILARITY = 0.70
# The cold-start threshold of a changed slot (`index.guards.slots`: one word swapped for one WordNet does not call
# the same): 1.0, never served, until the namespace's own labels of its slot candidates (near misses, labelled for
# free) show that such swaps are rewordings there. A one-word change moves the cosine of a long prompt less than
# a short one's, so no cosine holds them apart: on the public contrast sets they pass any fixed threshold.
DEFAULT_SLOT_MIN_SIMILARITY = 1.0
# The cold-start threshold of a slot swapped for an alternative (a WordNet sibling or antonym: red/blue, buy/sell):
# 1.0, never served, until the namespace's own labels of such candidates (near misses, labelled for free) show
# that they are rewordings there. On the public contrast sets these swaps are almost all different questions.
DEFAULT_ALTERNATIVE_MIN_SIMILARITY = 1.0
# The lowest cosine threshold a namespace's evidence may choose (`DEJA_LEARN_FLOOR`): candidates from here up to the
# threshold are near misses whose labels are the evidence (`index.match.live_threshold`).
DEFAULT_LEARN_FLOOR = 0.80
DEFAULT_MAX_FALSE_HIT_RATE = 0.02
# Guarded mode: nearest candidates the decision reads per request (`DEJA_GUARDED_CANDIDATES`).
DEFAULT_GUARDED_CANDIDATES = 5
# Nearest neighbours read and decided per semantic lookup in threshold mode (`DEJA_CANDIDATES`).
DEFAULT_CANDIDATES = 3
# Candidates at or above this similarity are decided and logged even below the threshold (`DEJA_DECISION_LOG_FLOOR`).
DEFAULT_LOG_FLOOR = 0.5
# Share of semantic hits re-asked upstream to label them (`DEJA_AUDIT_RATE`).
DEFAULT_AUDIT_RATE = 0.01


class DecisionMode(StrEnum):
    """How a candidate becomes a hit: `guarded` (the default: every step of `index.match.steps`) or `threshold`
    (the steps that read only the cosine and the rule stages)."""

    GUARDED = "guarded"
    THRESHOLD = "threshold"


# Judge mode (the judge's P serving alone against a budget) was retired: on real traffic it served 24.2%
# correct at 28.3% wrong (OSSChat). `DEJA_DECISION=judge` stops start-up with this line.
RETIRED_JUDGE_MODE = ("'judge' was retired (the judge alone served 28% wrong answers on real traffic); use "
                      "'guarded' (the default: the cosine serves, the rules veto) or 'threshold'")


@dataclass(frozen=True)
class MatchPolicy:
    """How strict a semantic match must be. Similarities are cosine similarities in [-1, 1].

    `min_similarity` applies to the last user messages; `min_context_similarity` to the relevant earlier
    context of multi-turn requests. `stages` names the rule stages (built by `index.guards.registry`), run in
    `STAGE_ORDER`.

    `decision` = guarded (the default, as in `Settings`): every step of `index.match.steps` over the
    `guarded_candidates` most similar candidates: `min_similarity` is the cosine threshold (`conversation_threshold`
    for a conversation's last message), the gates, the stages and the remembered differences veto, a plain
    rewording is served at any cosine. `decision` = threshold: the steps that read only the cosine
    and the stages. `max_false_hit_rate` is the budget (wrong ÷ served) each namespace's learned thresholds are
    held to (`index.match.live_threshold`).
    """

    min_similarity: float
    min_context_similarity: float = DEFAULT_MIN_CONTEXT_SIMILARITY
    stages: tuple[str, ...] = ()
    context_match: ContextMatch = ContextMatch.SEMANTIC
    decision: DecisionMode = DecisionMode.GUARDED
    max_false_hit_rate: float = DEFAULT_MAX_FALSE_HIT_RATE
    guarded_candidates: int = DEFAULT_GUARDED_CANDIDATES
    conversation_threshold: float = DEFAULT_MIN_SIMILARITY
    # Characters of a prompt or context the decision reads at most; longer pairs are never served (index.guards.safety).
    max_decision_chars: int = DEFAULT_MAX_DECISION_CHARS
    # Guarded mode: candidates from here up to the threshold go through every other step, as near misses.
    learn_floor: float = DEFAULT_LEARN_FLOOR
    # Guarded mode: the cosine threshold of a candidate whose prompt changes a slot.
    slot_similarity: float = DEFAULT_SLOT_MIN_SIMILARITY
    # Guarded mode: the cosine threshold of a slot swapped for an alternative (1.0: never, until learned).
    alternative_similarity: float = DEFAULT_ALTERNATIVE_MIN_SIMILARITY

    def __post_init__(self) -> None:
        for name in ("min_similarity", "min_context_similarity", "conversation_threshold", "learn_floor",
                     "slot_similarity", "alternative_similarity"):
            value = getattr(self, name)
            if not -1.0 <= value <= 1.0:
                raise ValueError(f"{name} must be a cosine similarity in [-1, 1], got {value}")
        unknown = [name for name in self.stages if name not in STAGE_ORDER]
        if unknown:
            raise ValueError(f"unknown stage {unknown[0]!r}; known: {', '.join(STAGE_ORDER)}")
        if not 0.0 < self.max_false_hit_rate < 1.0:
            raise ValueError(f"max false-hit rate must be in (0, 1), got {self.max_false_hit_rate}")
        if self.guarded_candidates < 1:
            raise ValueError(f"guarded_candidates must be >= 1, got {self.guarded_candidates}")
        if self.max_decision_chars < 1:
            raise ValueError(f"max_decision_chars must be >= 1, got {self.max_decision_chars}")

    def at(self, min_similarity: float) -> MatchPolicy:
        """The same policy at another threshold (what a sweep varies, and per-namespace thresholds set)."""
        return dataclasses.replace(self, min_similarity=min_similarity)

    def threshold_for(self, kind: Kind) -> float:
        """The cosine threshold a candidate of `kind` must meet under this policy (a namespace's, or a request's):
        the one place a kind's threshold is read. In guarded mode each kind is held to its own threshold, as its
        learner chose it from its own evidence (what `/deja/budget` shows; no kind is floored at another's); in
        threshold mode every kind to `min_similarity`."""
        return float(getattr(self, THRESHOLD_FIELDS[kind])) if self.guarded else self.min_similarity

    def prior_for(self, kind: Kind) -> float:
        """The cold-start threshold of `kind` (the prior its learner starts from)."""
        return float(getattr(self, THRESHOLD_FIELDS[kind]))

    def with_threshold(self, kind: Kind, threshold: float) -> MatchPolicy:
        """This policy with `kind`'s threshold set to `threshold` (addressed by the kind's name, never by its place
        in the enum); the learning floor follows it down, so candidates just below stay near misses."""
        changes: dict[str, Any] = {THRESHOLD_FIELDS[kind]: threshold, "learn_floor": min(self.learn_floor, threshold)}
        return dataclasses.replace(self, **changes)

    @property
    def guarded(self) -> bool:
        """Every step decides: the cosine serves and the gates, rules and remembered differences veto (guarded mode,
        the default)."""
        return self.decision is DecisionMode.GUARDED

    def describe(self) -> str:
        """One line: what serves a semantic hit under this policy."""
        guards = ", ".join(self.stages) or "none"
        if self.guarded:
            return (f"guarded: cosine >= {self.min_similarity:g} (a plain rewording at any cosine), guards {guards}; "
                    f"conversations: cosine >= {self.conversation_threshold:g}")
        return f"threshold: cosine >= {self.min_similarity:g}, guards {guards}"

    def for_request(self, conversation: bool) -> MatchPolicy:
        """The policy that decides one request: in guarded mode a conversation's last message is held to
        `conversation_threshold` (its context to `min_context_similarity`), each as the namespace's policy states
        it: a learned conversation threshold moved both already (`index.match.matcher.moved_to`), and this sets
        them, never shifts them, so applying it again changes nothing. `index.match.matcher.Matcher.plan` is its
        one caller."""
        if self.guarded and conversation:
            return dataclasses.replace(self, min_similarity=self.conversation_threshold)
        return self


# The field of `MatchPolicy` that holds each kind's threshold, by the kind's name: adding or reordering a kind never
# moves a threshold to another kind (`tests/unit/index/match/test_policy.py`); a kind without a field fails loudly.
THRESHOLD_FIELDS: dict[str, str] = {
    Kind.COSINE.value: "min_similarity",
    Kind.SLOT.value: "slot_similarity",
    Kind.ALTERNATIVE.value: "alternative_similarity",
    Kind.CONVERSATION.value: "conversation_threshold",
}

# The cosine rule with its defaults, for callers that vary one part of it (a sweep varies the threshold).
COSINE_POLICY = MatchPolicy(DEFAULT_MIN_SIMILARITY, decision=DecisionMode.THRESHOLD)


def default_min_similarity(decision: DecisionMode) -> float:
    """The cosine threshold when `DEJA_MIN_SIMILARITY` is not set: the guarded rule's, else the threshold rule's."""
    return DEFAULT_GUARDED_MIN_SIMILARITY if decision is DecisionMode.GUARDED else DEFAULT_MIN_SIMILARITY
