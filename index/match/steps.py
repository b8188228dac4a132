"""The steps of the decision: ONE ordered list (`STEPS`), the same for a single-turn request and a conversation.
Each candidate (most similar first) goes through the steps in order; a step passes it on, serves it, or ends it
with a miss or a veto named after the step (the name `X-Deja-Veto` and the decision log show). `index.match.decide`
runs the list; the manual's "how a hit is decided" is checked against it (`tests/unit/test_manual.py`).

all-MiniLM-L6-v2 was trained on about a billion real pairs; on real users' questions its cosine, with the rule
vetoes, is better calibrated than the learned scores we fitted, which gave P 0.99 to a definition and a task about
the same entity: the cosine serves and only rules (and the namespace's own labels) veto. The learned veto was
measured and removed (docs/learned-veto.md).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Protocol

from index.guards.contrast import opposed_words
from index.guards.form import same_content
from index.guards.order import swapped_words
from index.guards.question import changed_focus
from index.guards.safety import pair_veto
from index.guards.slots import changed_slot
from index.guards.stages import Stage, StepResult
from index.match.conversation import ContextRule
from index.match.kinds import kind_of
from index.match.outcome import Candidate, Decision, Kind, Reason
from index.match.policy import MatchPolicy
from index.match.window import beyond_resolution, differs_past_window

# What a hit rests on (`Decision.basis`).
SAME_CONTENT = "same content"
COSINE = "cosine"
# The veto of a changed scope (an alternative dropped, `index.guards.slots`).
SCOPE = "scope"


class RememberedDifferences(Protocol):
    """What the decision needs of the remembered differences (`index.match.differences`): a veto, or None."""

    def veto(self, namespace: str, prompt: str, candidate: str) -> object | None: ...


@dataclass(frozen=True)
class Pair:
    """One candidate as the steps read it: the request (its last message and, for a conversation, its relevant
    context), the candidate and its kind of difference, decided before any step runs (`Pair.of`): whose threshold
    it is held to and whose evidence its label is."""

    query: str
    query_context: str | None
    candidate: Candidate
    kind: Kind = Kind.COSINE

    @classmethod
    def of(cls, query: str, query_context: str | None, candidate: Candidate) -> Pair:
        return cls(query, query_context, candidate,
                   kind_of(query, candidate.prompt, conversation=query_context is not None))

    @property
    def single_turn(self) -> bool:
        return self.query_context is None

    @property
    def contexts(self) -> tuple[str, str] | None:
        """The two relevant contexts of a conversation pair, else None."""
        if self.query_context is None or self.candidate.context is None:
            return None
        return self.query_context, self.candidate.context


@dataclass(frozen=True)
class Setup:
    """What the steps read besides the pair: the request's policy (thresholds already moved for the namespace
    and for a conversation), the rule stages, the context rule and the remembered differences."""

    policy: MatchPolicy
    stages: tuple[Stage, ...]
    context_stages: tuple[Stage, ...]
    context_rule: ContextRule
    differences: RememberedDifferences | None = None
    namespace: str = ""


@dataclass
class Trail:
    """What the steps found so far about one candidate (local to one decision). `below`: the candidate is under
    its threshold but at or above the learning floor (the step `cosine` says so), so it goes on through the other
    steps: a near miss if none of them decides it (`concluded`)."""

    results: list[StepResult] = field(default_factory=list)
    below: bool = False


class Step(Protocol):
    """One step: `name` is what `X-Deja-Veto` and the decision log show of its vetoes; `summary` is its line in
    the manual. `run` returns None to pass the candidate on, else the candidate's decision."""

    @property
    def name(self) -> str: ...

    @property
    def summary(self) -> str: ...

    def run(self, pair: Pair, setup: Setup, trail: Trail) -> Decision | None: ...


def vetoed(pair: Pair, trail: Trail, name: str, reason: str) -> Decision:
    trail.results.append(StepResult(name, False, reason))
    return Decision(Reason.VETOED, pair.candidate.similarity, vetoed_by=name, stages=tuple(trail.results))


def served(pair: Pair, trail: Trail, basis: str) -> Decision:
    """A hit, with what it rests on (`basis`) and the kind of difference its candidate shows."""
    return Decision(Reason.HIT, pair.candidate.similarity, stages=tuple(trail.results), basis=basis,
                    would_serve=basis == COSINE, kind=pair.kind)


def concluded(pair: Pair, trail: Trail) -> Decision:
    """A candidate that every step passed: served on its cosine, or, below its threshold (`Trail.below`), a near
    miss (`Decision.near_miss`): it would be served at a threshold at its cosine, the evidence that can lower its
    kind's threshold (`index.match.live_threshold`), single-turn or conversation alike. The one place a near miss
    is made."""
    decision = served(pair, trail, COSINE)
    return dataclasses.replace(decision, reason=Reason.BELOW_THRESHOLD) if trail.below else decision


@dataclass(frozen=True)
class Window:
    name: str = "window"
    summary: str = ("a prompt (or context) past the embedder's window (~1,000 characters) that differs from the "
                    "candidate's is not served: `beyond_window`, a miss, not a veto")

    def run(self, pair: Pair, setup: Setup, trail: Trail) -> Decision | None:
        contexts = pair.contexts
        if differs_past_window(pair.query, pair.candidate.prompt) or (
                contexts is not None and differs_past_window(*contexts)):
            return Decision(Reason.BEYOND_WINDOW, pair.candidate.similarity)
        return None


@dataclass(frozen=True)
class Contrast:
    name: str = "contrast"
    summary: str = ("words that are each other's opposites (pin/unpin, enable/disable) veto, and so does another "
                    "question word (who/when, where/how, how many/how long: veto `question`)")

    def run(self, pair: Pair, setup: Setup, trail: Trail) -> Decision | None:
        opposed = opposed_words(pair.query, pair.candidate.prompt)
        if opposed is not None:
            return vetoed(pair, trail, self.name, f"opposite words {opposed[0]!r} vs {opposed[1]!r}")
        asked = changed_focus(pair.query, pair.candidate.prompt)
        if asked is not None:
            return vetoed(pair, trail, "question", f"asks for a {asked[0]}, the candidate for a {asked[1]}")
        return None


@dataclass(frozen=True)
class Order:
    name: str = "order"
    summary: str = "values that changed places across a direction (\"USD to EUR\" / \"EUR to USD\") veto"

    def run(self, pair: Pair, setup: Setup, trail: Trail) -> Decision | None:
        swapped = swapped_words(pair.query, pair.candidate.prompt)
        if swapped is None:
            return None
        return vetoed(pair, trail, self.name, f"{swapped[0]!r} and {swapped[1]!r} change places across a direction")


@dataclass(frozen=True)
class Safety:
    name: str = "safety"
    summary: str = ("a prompt or context longer than `DEJA_MAX_DECISION_CHARS` (veto `length`) or words that differ "
                    "only by their accents (veto `accents`)")

    def run(self, pair: Pair, setup: Setup, trail: Trail) -> Decision | None:
        contexts = pair.contexts or (None, None)
        found = pair_veto(pair.query, pair.candidate.prompt, contexts[0], contexts[1], setup.policy.max_decision_chars)
        return None if found is None else vetoed(pair, trail, found.stage, found.reason)


@dataclass(frozen=True)
class SameContent:
    name: str = "same content"
    summary: str = ("a plain rewording of a single-turn prompt (the same content words, other form: case, "
                    "punctuation, contractions, articles) is served whatever its cosine")

    def run(self, pair: Pair, setup: Setup, trail: Trail) -> Decision | None:
        if pair.single_turn and same_content(pair.query, pair.candidate.prompt):
            return served(pair, trail, SAME_CONTENT)
        return None


@dataclass(frozen=True)
class Slot:
    name: str = "slot"
    summary: str = ("a single-turn prompt that changes a slot of the candidate's (one word swapped for one WordNet "
                    "does not call the same) is the kind `slot`, held to the namespace's slot threshold "
                    "(`DEJA_SLOT_MIN_SIMILARITY`, 1.0: never, until its own slot labels move it); a swap for a "
                    "WordNet sibling or antonym (red/blue, buy/sell), or a change of roles, referent or tense, is "
                    "the kind `alternative` (`DEJA_ALTERNATIVE_MIN_SIMILARITY`, 1.0, the same way); a prompt "
                    "of more than 40 words that is not a plain rewording is `beyond_resolution`, a miss; an "
                    "alternative dropped (\"before or after\" / \"after\") vetoes as `scope`")

    def run(self, pair: Pair, setup: Setup, trail: Trail) -> Decision | None:
        # The candidate's kind (slot, alternative) was decided before the steps (`Pair.of`); this step shows it.
        if pair.single_turn and beyond_resolution(pair.query, pair.candidate.prompt):
            return Decision(Reason.BEYOND_RESOLUTION, pair.candidate.similarity)
        found = changed_slot(pair.query, pair.candidate.prompt)  # a conversation's last messages too
        if found is not None and found.scope:
            return vetoed(pair, trail, SCOPE, f"the scope changed: {found.describe()}")
        if found is not None:
            trail.results.append(StepResult(self.name, True, found.describe()))
        return None


@dataclass(frozen=True)
class Threshold:
    name: str = "cosine"
    summary: str = ("cosine below the namespace's threshold for the candidate's kind (each learned from its own "
                    "evidence; until then `DEJA_MIN_SIMILARITY`, 0.92, a changed slot 1.0, a conversation's last "
                    "message 0.90): `below_threshold`, a miss. A candidate down to `DEJA_LEARN_FLOOR` (0.80), "
                    "single-turn or conversation, goes on through the other steps: one they all pass is a near "
                    "miss, labelled from the fresh answer as its kind's evidence")

    def run(self, pair: Pair, setup: Setup, trail: Trail) -> Decision | None:
        similarity = pair.candidate.similarity
        if similarity >= setup.policy.threshold_for(pair.kind):
            return None
        if setup.policy.guarded and similarity >= setup.policy.learn_floor:
            trail.below = True  # a near miss if every other step passes it (`concluded`)
            return None
        return Decision(Reason.BELOW_THRESHOLD, similarity)


@dataclass(frozen=True)
class ContextThreshold:
    name: str = "context cosine"
    summary: str = ("a conversation whose relevant contexts are below `DEJA_MIN_CONTEXT_SIMILARITY` (0.70): "
                    "`context_below_threshold`, a miss")

    def run(self, pair: Pair, setup: Setup, trail: Trail) -> Decision | None:
        if pair.contexts is None:
            return None
        if (pair.candidate.context_similarity or 0.0) < setup.policy.min_context_similarity:
            return Decision(Reason.CONTEXT_BELOW_THRESHOLD, pair.candidate.similarity)
        return None


@dataclass(frozen=True)
class Rules:
    name: str = "rules"
    summary: str = ("the rule stages veto, each under its own name: `polarity` (a negation or reversal) and "
                    "`values` (a number, name, date, amount)")

    def run(self, pair: Pair, setup: Setup, trail: Trail) -> Decision | None:
        for stage in setup.stages:
            result = stage.check(pair.query, pair.candidate.prompt)
            trail.results.append(result)
            if not result.passed:
                return Decision(Reason.VETOED, pair.candidate.similarity, vetoed_by=stage.name,
                                stages=tuple(trail.results))
        return None


@dataclass(frozen=True)
class Context:
    name: str = "context"
    summary: str = ("a conversation's two contexts: the rule stages and the alignment check over them (vetoes "
                    "`<stage>@context`), then the context rule (the same values, the same options in the same "
                    "order, the same content; chatter ignored: vetoes `context:value`, `context:option-order`, "
                    "`context:content`, or, for threads told in their own words, `context:action`)")

    def run(self, pair: Pair, setup: Setup, trail: Trail) -> Decision | None:
        contexts = pair.contexts
        if contexts is None:
            return None
        vetoing: StepResult | None = None
        if contexts[0] != contexts[1]:
            for stage in setup.context_stages:
                found = stage.check(*contexts)
                result = StepResult(f"{stage.name}@context", found.passed, found.reason, found.score)
                trail.results.append(result)
                if not result.passed:
                    vetoing = result
                    break
        difference = setup.context_rule.difference(*contexts, asked=(pair.query, pair.candidate.prompt))
        if difference is not None:  # the difference, named, takes the place of a context stage's veto
            trail.results.append(difference.result())
            return Decision(Reason.VETOED, pair.candidate.similarity, vetoed_by=difference.stage,
                            stages=tuple(trail.results))
        if vetoing is not None:
            return Decision(Reason.VETOED, pair.candidate.similarity, vetoed_by=vetoing.stage,
                            stages=tuple(trail.results))
        return None


@dataclass(frozen=True)
class Difference:
    name: str = "difference"
    summary: str = ("a difference the namespace's labels remember between the two prompts (`index.match."
                    "differences`) vetoes, never over a plain rewording; a candidate that passes every step is "
                    "served")

    def run(self, pair: Pair, setup: Setup, trail: Trail) -> Decision | None:
        if setup.differences is None:
            return None
        query, cached = pair.query, pair.candidate.prompt
        if same_content(query, cached) or setup.differences.veto(setup.namespace, query, cached) is None:
            return None
        trail.results.append(StepResult(self.name, False, "labelled wrong before in this namespace"))
        return Decision(Reason.VETOED, pair.candidate.similarity, vetoed_by=self.name, stages=tuple(trail.results))


# The decision, in order (`DEJA_DECISION=guarded`, the default).
STEPS: tuple[Step, ...] = (Window(), Contrast(), Order(), Safety(), SameContent(), Slot(), Threshold(),
                           ContextThreshold(), Rules(), Context(), Difference())
# Threshold mode (`DEJA_DECISION=threshold`, the cosine rule `eval sweep` scores): the steps that read no more
# than the cosine and the rule stages.
THRESHOLD_ONLY = frozenset({"window", "safety", "slot", "cosine", "context cosine", "rules", "context", "difference"})
THRESHOLD_STEPS: tuple[Step, ...] = tuple(s for s in STEPS if s.name in THRESHOLD_ONLY)
