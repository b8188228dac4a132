"""The whole decision in one place: a `Matcher`, built once from Settings, turns (request, candidates, namespace)
into a `Decision` that nobody rewrites afterwards. The gateway (through `index.cache.Cache`) and every eval
command decide through it, live state included, so a replay decides a trace as the gateway did.

In order: the namespace's policy (the prior, a threshold stored for the namespace, then its live bar level) ->
`index.match.decide` (window, gates, same-content override, threshold, rule stages, learned veto or the judge's
bar, exploration) -> a remembered difference (`index.match.differences`) that vetoes a would-be hit, never a
plain rewording.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from index.guards.form import same_content
from index.judge.features import EntryHistory
from index.match.bar import raised
from index.match.decide import Deciders, decide
from index.match.judged import JudgeModel, PairReader
from index.match.outcome import Candidate, Decision, Reason
from index.match.policy import MatchPolicy

# The step name of a remembered difference's veto (`Decision.vetoed_by`, X-Deja-Veto).
DIFFERENCE = "difference"


class RememberedDifferences(Protocol):
    """What the matcher needs of the remembered differences: a veto (None when none applies)."""

    def veto(self, namespace: str, prompt: str, candidate: str) -> object | None: ...


@dataclass
class NamespacePolicies:
    """Each namespace's policy: thresholds stored by `eval sweep --traffic --apply` ("*" is every namespace's)
    apply where the cosine decides (guarded and threshold modes); the live budget's level then moves the bar
    (the judge's cut in judge mode, the cosine threshold otherwise)."""

    policy: MatchPolicy
    # namespace -> (threshold, labels it was chosen from)
    by_namespace: dict[str, tuple[float, int]] = field(default_factory=dict)
    # The live budget's bar level of a namespace in judge mode (`index.match.bar_book.BarBook.level`).
    level: Callable[[str], int] | None = None
    # The namespace's cosine threshold learned from its evidence (`index.match.threshold_book.ThresholdBook`);
    # None = the prior serves.
    learned: Callable[[str], float | None] | None = None

    @property
    def default(self) -> float:
        return self.policy.min_similarity

    def prior_for(self, namespace: str) -> MatchPolicy:
        """The namespace's policy before the live budget moves its bar."""
        chosen = self.by_namespace.get(namespace) or self.by_namespace.get("*")
        return self.policy.at(chosen[0]) if chosen and not self.policy.judged else self.policy

    def policy_for(self, namespace: str) -> MatchPolicy:
        """The prior with the namespace's bar level: the judge's bar, or the cosine threshold, moved."""
        policy = self.prior_for(namespace)
        learned = None if self.learned is None or policy.judged else self.learned(namespace)
        if learned is not None:
            return moved_to(policy, learned)
        level = 0 if self.level is None else self.level(namespace)
        if level == 0:
            return policy
        if policy.judged:
            return policy.at_level(level)
        moved = policy.at(raised(policy.min_similarity, level))
        return moved.at_level(level) if policy.guarded else moved


def moved_to(policy: MatchPolicy, threshold: float) -> MatchPolicy:
    """`policy` at a learned cosine threshold; a conversation's thresholds (its last messages' and its
    context's) move by as much, both ways."""
    shift = threshold - policy.min_similarity
    return dataclasses.replace(
        policy, min_similarity=threshold,
        conversation_threshold=_clip(policy.conversation_threshold + shift),
        min_context_similarity=_clip(policy.min_context_similarity + shift),
        learn_floor=min(policy.learn_floor, threshold))


def _clip(similarity: float) -> float:
    return round(max(-1.0, min(0.999, similarity)), 6)


class Matcher:
    """The decision with its live state: the per-namespace policies, the deciders (stages, judge, pair model,
    exploration) and the remembered differences. Thread-safe to read; the judge in force is swapped whole."""

    def __init__(self, policy: MatchPolicy, deciders: Deciders | None = None,
                 differences: RememberedDifferences | None = None,
                 level: Callable[[str], int] | None = None,
                 learned: Callable[[str], float | None] | None = None) -> None:
        self.namespaces = NamespacePolicies(policy, level=level, learned=learned)
        self._deciders = deciders or Deciders()
        self.differences = differences
        if policy.judged and self._deciders.judge is None:
            raise ValueError("a judge-mode policy needs a judge (index.judge.model.load_judge)")

    @property
    def policy(self) -> MatchPolicy:
        return self.namespaces.policy

    @property
    def deciders(self) -> Deciders:
        return self._deciders

    def swap_judge(self, judge: JudgeModel | None, pair: PairReader | None) -> None:
        """Put another judge (and pair model) in force; a request sees either the old pair or the new one."""
        self._deciders = dataclasses.replace(self._deciders, judge=judge, pair=pair)

    def policy_for(self, namespace: str) -> MatchPolicy:
        return self.namespaces.policy_for(namespace)

    def decide(self, query: str, candidates: Sequence[Candidate], namespace: str, query_context: str | None = None,
               histories: Mapping[int, EntryHistory] | None = None, policy: MatchPolicy | None = None) -> Decision:
        """Decide over `candidates` (most similar first) with `policy` (default: the namespace's)."""
        policy = policy or self.policy_for(namespace)
        decision = decide(query, candidates, policy, self._deciders, query_context, histories)
        if not decision.hit or decision.chosen is None or self.differences is None:
            return decision
        cached = candidates[decision.chosen].prompt
        if same_content(query, cached) or self.differences.veto(namespace, query, cached) is None:
            return decision
        return dataclasses.replace(decision, reason=Reason.VETOED, vetoed_by=DIFFERENCE)
