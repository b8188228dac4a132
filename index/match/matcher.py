"""The whole decision in one place: a `Matcher`, built once from Settings, owns every input of a decision and turns
(request, neighbours) into a `Decision` that nobody rewrites afterwards. The gateway (through `index.cache.Cache`)
and every eval command decide through it, live state included, so a replay decides a trace as the gateway did.

In order: the namespace's policy (the prior, a threshold stored for the namespace, then its learned thresholds),
the request's adjustment (a conversation's last message is held to the conversation threshold), which neighbours
become candidates (`index.match.candidates`), then `index.match.decide`, which runs every candidate through the
steps of `index.match.steps` (window, gates, same-content override, threshold, rule stages, context, remembered
difference). The decision carries the policy it ran under (`Decision.policy`): the decision log records its
threshold, the audit sampler reads it, and no caller computes a policy of its own.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from index.match.candidates import CandidateRule, Selection
from index.match.decide import Deciders, decide
from index.match.outcome import Candidate, Decision, Kind
from index.match.policy import MatchPolicy
from index.match.steps import RememberedDifferences


@dataclass(frozen=True)
class MatchRequest:
    """What the decision reads of a request: its last user message, its namespace and, for a conversation, the
    relevant context (`index.request.keys.CacheKey.context_text`; None for a single turn)."""

    prompt: str
    namespace: str
    context: str | None = None

    @property
    def conversation(self) -> bool:
        return self.context is not None


@dataclass(frozen=True)
class Plan:
    """One request's decision before its candidates are known (`Matcher.plan`): the policy in force for it (the
    namespace's thresholds, the conversation adjustment applied) and which neighbours become candidates."""

    policy: MatchPolicy
    selection: Selection


@dataclass
class NamespacePolicies:
    """Each namespace's policy: thresholds stored by `eval sweep --traffic --apply` ("*" is every namespace's)
    are its prior; in guarded mode its learned thresholds, one per kind, are then the ones in force."""

    policy: MatchPolicy
    # namespace -> (threshold, labels it was chosen from)
    by_namespace: dict[str, tuple[float, int]] = field(default_factory=dict)
    # The namespace's threshold for a kind of difference, learned from that kind's evidence
    # (`index.match.threshold_book.ThresholdBook`); None = the kind's prior serves.
    learned: Callable[[str, Kind], float | None] | None = None

    @property
    def default(self) -> float:
        return self.policy.min_similarity

    def prior_for(self, namespace: str) -> MatchPolicy:
        """The namespace's policy before its learned thresholds: the prior they start from."""
        chosen = self.by_namespace.get(namespace) or self.by_namespace.get("*")
        return self.policy.at(chosen[0]) if chosen else self.policy

    def policy_for(self, namespace: str) -> MatchPolicy:
        """The prior with the namespace's learned thresholds (guarded mode: each kind's own): the one owner of
        every threshold in force."""
        policy = self.prior_for(namespace)
        if self.learned is not None and policy.guarded:
            learned = {kind: self.learned(namespace, kind) for kind in Kind}
            if any(value is not None for value in learned.values()):
                return moved_to(policy, learned)
        return policy


def moved_to(policy: MatchPolicy, learned: Mapping[Kind, float | None]) -> MatchPolicy:
    """`policy` at its learned thresholds, each kind from its own evidence and addressed by its name (a kind without
    any keeps its prior); a conversation's context threshold moves by as much as its last message's."""
    moved = policy
    for kind, threshold in sorted(learned.items()):
        if threshold is not None:
            moved = moved.with_threshold(kind, threshold)
    if moved.conversation_threshold != policy.conversation_threshold:
        shift = moved.conversation_threshold - policy.conversation_threshold
        moved = dataclasses.replace(moved, min_context_similarity=_clip(policy.min_context_similarity + shift))
    return moved


def _clip(similarity: float) -> float:
    return round(max(-1.0, min(0.999, similarity)), 6)


class Matcher:
    """The decision with its live state: the per-namespace policies, the candidate rule, the deciders (the rule
    stages, the context rule) and the remembered differences. Thread-safe to read."""

    def __init__(self, policy: MatchPolicy, deciders: Deciders | None = None,
                 differences: RememberedDifferences | None = None,
                 learned: Callable[[str, Kind], float | None] | None = None,
                 rule: CandidateRule | None = None) -> None:
        """`learned`: a namespace's learned threshold per kind (`ThresholdBook.threshold`; None: learning off);
        `rule`: how many neighbours a lookup reads (default: `DEJA_CANDIDATES` and the log floor's defaults)."""
        self.namespaces = NamespacePolicies(policy, learned=learned)
        self.rule = rule or CandidateRule()
        self._deciders = dataclasses.replace(deciders or Deciders(), differences=differences)

    @property
    def policy(self) -> MatchPolicy:
        """The deployment's policy: every namespace's prior before a threshold stored or learned for it."""
        return self.namespaces.policy

    @property
    def differences(self) -> RememberedDifferences | None:
        return self._deciders.differences

    @property
    def deciders(self) -> Deciders:
        return self._deciders

    def policy_for(self, namespace: str) -> MatchPolicy:
        """The namespace's policy in force (its learned thresholds per kind), before a request's adjustment."""
        return self.namespaces.policy_for(namespace)

    def plan(self, request: MatchRequest) -> Plan:
        """The policy `request` is decided under and which of its neighbours become candidates. The neighbours are
        selected by the namespace's policy (a conversation reads as many as a single turn)."""
        policy = self.policy_for(request.namespace)
        return Plan(policy.for_request(conversation=request.conversation), self.rule.selection(policy))

    def decide(self, request: MatchRequest, candidates: Sequence[Candidate], plan: Plan | None = None) -> Decision:
        """Decide over `candidates` (most similar first, as `plan.selection` chose them) under `plan` (default: the
        request's own); the decision carries the policy it ran under."""
        policy = (plan or self.plan(request)).policy
        decision = decide(request.prompt, candidates, policy, self._deciders, request.context, request.namespace)
        return dataclasses.replace(decision, policy=policy)
