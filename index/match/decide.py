"""The one decision: which cached candidate (if any) may answer a request, under the request's policy. The
`index.match.matcher.Matcher` is its caller: it works out that policy (the namespace's thresholds, a conversation's
adjustment) and the candidates, for the gateway (through `Cache`) and for every eval command alike, so a setting
means the same in each.

Every candidate (most similar first) goes through the same ordered list of steps (`index.match.steps.STEPS`),
single-turn request or conversation; the first candidate the steps serve is served. Threshold mode runs the part
of the list that reads only the cosine and the rules.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field

from index.guards.registry import context_stages
from index.guards.stages import Stage
from index.match.conversation import ContextRule, default_rule
from index.match.outcome import Candidate, Decision, Reason
from index.match.policy import MatchPolicy
from index.match.steps import (
    STEPS,
    THRESHOLD_STEPS,
    Pair,
    RememberedDifferences,
    Setup,
    Step,
    Trail,
    concluded,
)


@dataclass(frozen=True)
class Deciders:
    """What decides besides the policy: the rule stages (`context_stages` run over two conversations' contexts),
    the context rule and the remembered differences."""

    stages: tuple[Stage, ...] = ()
    # None = the prompt stages plus the alignment check (`index.guards.registry.context_stages`).
    context_stages: tuple[Stage, ...] | None = None
    # The context rule a conversation candidate must pass (`index.match.conversation`).
    conversation: ContextRule = field(default_factory=default_rule)
    # Differences the namespace's labels remember (`index.match.differences`); None = none.
    differences: RememberedDifferences | None = None

    @property
    def over_contexts(self) -> tuple[Stage, ...]:
        return context_stages(self.stages) if self.context_stages is None else self.context_stages


def steps_of(policy: MatchPolicy) -> tuple[Step, ...]:
    """The steps a policy runs: all of them (guarded, the default), or the cosine rule's (threshold mode)."""
    return STEPS if policy.guarded else THRESHOLD_STEPS


def decide(
    query: str,
    candidates: Sequence[Candidate],
    policy: MatchPolicy,
    deciders: Deciders,
    query_context: str | None = None,
    namespace: str = "",
) -> Decision:
    """Decide over `candidates` (most similar first) under `policy`, the request's (`Matcher.plan`: a conversation's
    already adjusted). `Decision.chosen` indexes the served candidate on a hit, else the most similar one the steps
    decided (one past the embedder's window only when all are)."""
    if not candidates:
        return Decision(Reason.NO_CANDIDATE, float("nan"))
    steps = steps_of(policy)
    setup = Setup(policy, deciders.stages, deciders.over_contexts, deciders.conversation, deciders.differences,
                  namespace)
    window, rest = steps[0], steps[1:]
    trail = Trail()
    pairs = [Pair.of(query, query_context, c) for c in candidates]
    past = [window.run(pair, setup, trail) for pair in pairs]
    readable = [i for i, d in enumerate(past) if d is None]
    if not readable:
        beyond = past[0]
        assert beyond is not None
        return dataclasses.replace(beyond, chosen=0, kind=pairs[0].kind)
    first: Decision | None = None
    near: Decision | None = None
    for index in readable:
        decision = dataclasses.replace(_run(pairs[index], setup, rest), chosen=index, kind=pairs[index].kind)
        if decision.hit:
            return decision
        first = first or decision
        near = near or (decision if decision.near_miss else None)
    assert first is not None
    # A miss reports the near miss when there is one: the candidate a lower threshold would serve, to be labelled.
    return near or first


def _run(pair: Pair, setup: Setup, steps: Sequence[Step]) -> Decision:
    """One candidate through `steps`: the first step that decides it, else a hit on its cosine. A candidate below
    the threshold (and above the learning floor) goes through every step: a near miss if none decides it
    (`index.match.steps.concluded`), else a plain miss below the threshold (whatever would have vetoed it)."""
    trail = Trail()
    for step in steps:
        decision = step.run(pair, setup, trail)
        if decision is None:
            continue
        if not trail.below:
            return decision
        return Decision(Reason.BELOW_THRESHOLD, pair.candidate.similarity)
    return concluded(pair, trail)
