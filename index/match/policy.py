"""The match policy: everything that decides whether a cached answer may serve a request. `build_policy` makes
it from `Settings` in one place, for the gateway and for `eval`, so a policy means the same in both."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from enum import StrEnum

from index.guards.stages import STAGE_ORDER
from index.judge.model import check_budget
from index.match.bar import raised
from index.request.keys import DEFAULT_MAX_DECISION_CHARS, ContextMatch

# Every default of the match lives here, once; `Settings` and `eval` read them from this module.
# Chosen from `eval sweep` on datasets/pairs-dev.jsonl and `eval replay` on datasets/stream.jsonl; see README
# "How the default threshold was chosen".
DEFAULT_MIN_SIMILARITY = 0.90
DEFAULT_MIN_CONTEXT_SIMILARITY = 0.70
DEFAULT_MAX_FALSE_HIT_RATE = 0.02
DEFAULT_JUDGE_CANDIDATES = 5
# The pair model reads at most this many undecided candidates per request (the most probable by the judge).
DEFAULT_PAIR_CANDIDATES = 1
# Candidate floor in judge mode: below it the judge's calibration data holds no pairs (see docs/judge.md).
DEFAULT_JUDGE_MIN_SIMILARITY = 0.5
# Nearest neighbours read and decided per semantic lookup in threshold mode (`DEJA_CANDIDATES`).
DEFAULT_CANDIDATES = 3
# Candidates at or above this similarity are decided and logged even below the threshold (`DEJA_DECISION_LOG_FLOOR`).
DEFAULT_LOG_FLOOR = 0.5
# Share of semantic hits re-asked upstream to label them (`DEJA_AUDIT_RATE`).
DEFAULT_AUDIT_RATE = 0.01


class DecisionMode(StrEnum):
    """How a candidate becomes a hit: `judge` (calibrated P(same answer) against a false-hit budget, see
    `index.match.judged`) or `threshold` (cosine threshold, then the verification stages as vetoes)."""

    JUDGE = "judge"
    THRESHOLD = "threshold"


@dataclass(frozen=True)
class MatchPolicy:
    """How strict a semantic match must be. Similarities are cosine similarities in [-1, 1].

    `min_similarity` applies to the last user messages; `min_context_similarity` to the relevant earlier
    context of multi-turn requests. `stages` names the rule stages (built by `index.guards.registry`), run in
    `STAGE_ORDER`.

    With `decision` = judge, `min_similarity` is only the candidate floor of the index search; the judge
    scores the `judge_candidates` most similar candidates and serves one when its probability clears the bar
    that meets `max_false_hit_rate` (false hits / served, upper confidence bound on calibration data).
    Multi-turn requests keep the conversation rule (cosine `conversation_threshold`, context threshold, the
    stages over prompts and contexts): on conv-dev it served more same-answer pairs at no more false hits.
    """

    min_similarity: float
    min_context_similarity: float = DEFAULT_MIN_CONTEXT_SIMILARITY
    stages: tuple[str, ...] = ()
    context_match: ContextMatch = ContextMatch.SEMANTIC
    decision: DecisionMode = DecisionMode.THRESHOLD
    max_false_hit_rate: float = DEFAULT_MAX_FALSE_HIT_RATE
    judge_candidates: int = DEFAULT_JUDGE_CANDIDATES
    conversation_threshold: float = DEFAULT_MIN_SIMILARITY
    # Characters of a prompt or context the decision reads at most; longer pairs are never served (index.guards.safety).
    max_decision_chars: int = DEFAULT_MAX_DECISION_CHARS
    # Judge mode: steps the namespace's bar sits above (or below) the calibrated cut; see `index.match.bar`.
    bar_level: int = 0
    # Judge mode: multi-turn requests are judged too (their contexts read by the judge's features and the pair
    # model) instead of the conversation rule.
    judge_conversations: bool = False

    def __post_init__(self) -> None:
        for name in ("min_similarity", "min_context_similarity", "conversation_threshold"):
            value = getattr(self, name)
            if not -1.0 <= value <= 1.0:
                raise ValueError(f"{name} must be a cosine similarity in [-1, 1], got {value}")
        unknown = [name for name in self.stages if name not in STAGE_ORDER]
        if unknown:
            raise ValueError(f"unknown stage {unknown[0]!r}; known: {', '.join(STAGE_ORDER)}")
        check_budget(self.max_false_hit_rate)
        if self.judge_candidates < 1:
            raise ValueError(f"judge_candidates must be >= 1, got {self.judge_candidates}")
        if self.max_decision_chars < 1:
            raise ValueError(f"max_decision_chars must be >= 1, got {self.max_decision_chars}")

    def at(self, min_similarity: float) -> MatchPolicy:
        """The same policy at another threshold (what a sweep varies, and per-namespace thresholds set)."""
        return dataclasses.replace(self, min_similarity=min_similarity)

    def at_level(self, bar_level: int) -> MatchPolicy:
        """The same policy with the judge's bar moved `bar_level` steps (what the live budget sets)."""
        return dataclasses.replace(self, bar_level=bar_level)

    def with_budget(self, max_false_hit_rate: float) -> MatchPolicy:
        """The same policy at another false-hit budget (what a judge sweep varies)."""
        return dataclasses.replace(self, max_false_hit_rate=max_false_hit_rate)

    @property
    def judged(self) -> bool:
        return self.decision is DecisionMode.JUDGE

    def for_request(self, conversation: bool) -> MatchPolicy:
        """The policy that decides one request: a multi-turn request in judge mode uses the conversation rule
        unless `judge_conversations`; a namespace's raised bar raises its context threshold as many steps (a
        lowered bar never loosens it)."""
        if self.judged and conversation and not self.judge_conversations:
            return dataclasses.replace(self, decision=DecisionMode.THRESHOLD,
                                       min_similarity=self.conversation_threshold,
                                       min_context_similarity=raised(self.min_context_similarity,
                                                                     max(0, self.bar_level)))
        return self


# The policy with every default, for callers that vary one part of it (a sweep varies the threshold).
DEFAULT_POLICY = MatchPolicy(DEFAULT_MIN_SIMILARITY)


def default_min_similarity(decision: DecisionMode) -> float:
    """The candidate floor (judge) or threshold (threshold mode) when `DEJA_MIN_SIMILARITY` is not set."""
    return DEFAULT_JUDGE_MIN_SIMILARITY if decision is DecisionMode.JUDGE else DEFAULT_MIN_SIMILARITY
