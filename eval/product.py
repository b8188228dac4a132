"""The product's decision as eval builds it: the Matcher a fresh gateway builds (`service.runtime.Runtime`: the
policy's rule stages, the candidate rule, the remembered differences and, in guarded mode with learning on, the
learner's `ThresholdBook`), so every eval command decides through the code the gateway runs.

A pair source is a cold namespace: it has no traffic of its own, so the learner has no evidence and each pair is
decided at the prior. A trace replay feeds the book and the differences as a gateway's labelling loop does
(`eval.learn`). A fixed-threshold run (`eval sweep --threshold`, the panel's baselines) is the same Matcher at a
fixed policy with the learner off.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field

from index.guards.registry import build_stages
from index.match.candidates import CandidateRule
from index.match.decide import Deciders
from index.match.differences import HALF_LIFE_SECONDS, MIN_NET_WRONG, Differences
from index.match.live_threshold import LearnerConfig
from index.match.matcher import Matcher
from index.match.policy import MatchPolicy
from index.match.threshold_book import ThresholdBook
from index.settings import Settings

# The namespace eval's requests are decided in (`eval.sweep.request_key` keys pairs in it).
NAMESPACE = "eval"


@dataclass(frozen=True)
class ProductConfig:
    """What a gateway's Matcher is built from: the deployment's policy, whether it learns (`DEJA_LEARN_THRESHOLD`;
    a gateway learns in guarded mode only), the candidate rule, the remembered differences' settings and the
    labeller's error rate the learner reads its labels with."""

    policy: MatchPolicy
    learn: bool = True
    rule: CandidateRule = field(default_factory=CandidateRule)
    difference_half_life: float = HALF_LIFE_SECONDS
    difference_min_labels: float = MIN_NET_WRONG
    label_error_rate: float = 0.0
    seed: int = 0
    # Answer comparison's measured false-same rate, read by the learner when no label model labels.
    false_same: float = 0.0

    @classmethod
    def from_settings(cls, settings: Settings, policy: MatchPolicy | None = None) -> ProductConfig:
        """The gateway's, from its settings (with `policy` in place of theirs when given: `--stages`,
        `--decision`)."""
        return cls(policy or settings.policy(), settings.learn_threshold,
                   CandidateRule(settings.candidates, settings.decision_log_floor),
                   settings.difference_half_life_days * 86400.0, settings.difference_min_labels,
                   0.0 if settings.label_model is None else settings.label_model_error_rate,
                   false_same=settings.answer_label_false_same if settings.label_model is None else 0.0)

    @property
    def learns(self) -> bool:
        """The learner in force: on, in guarded mode (as `service.runtime.Runtime` decides it)."""
        return self.learn and self.policy.guarded

    def fixed(self, min_similarity: float | None = None) -> ProductConfig:
        """The same deployment at a fixed threshold (the policy's, or `min_similarity`), learning off."""
        policy = self.policy if min_similarity is None else self.policy.at(min_similarity)
        return dataclasses.replace(self, policy=policy, learn=False)


@dataclass(frozen=True)
class Product:
    """The Matcher with the live state it reads: the learner's book and the remembered differences."""

    config: ProductConfig
    matcher: Matcher
    book: ThresholdBook
    differences: Differences


def build(config: ProductConfig, deciders: Deciders | None = None,
          clock: Callable[[], float] = lambda: 0.0) -> Product:
    """The product as a fresh gateway holds it (`deciders` default: the policy's rule stages)."""
    book = ThresholdBook(LearnerConfig.for_policy(config.policy, config.label_error_rate, config.seed,
                                                  config.false_same), clock)
    differences = Differences(clock=clock, half_life=config.difference_half_life,
                              min_net_wrong=config.difference_min_labels)
    matcher = Matcher(config.policy, deciders or Deciders(build_stages(config.policy.stages)), differences,
                      learned=book.threshold if config.learns else None, rule=config.rule)
    return Product(config, matcher, book, differences)


def matcher_for(policy: MatchPolicy, deciders: Deciders | None = None, learn: bool = True) -> Matcher:
    """A fresh gateway's Matcher for `policy` at the other settings' defaults (`learn` False: a fixed policy)."""
    return build(ProductConfig(policy, learn), deciders).matcher
