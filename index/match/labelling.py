"""The labelling loop's rules, the same on a gateway (`service.labelling`, `service.labeler`) and in `eval replay
--learn` (`eval.learn`): which served semantic hits are audited (`index.match.audit_sampler`: denser where an audit
teaches most), which misses are shadowed, when a shadow asks the upstream once more, who labels (the label model, a
shadow only within the hour's allowance; otherwise the two answers compared against how much the upstream's own
answers vary, `index.match.answers`), what a label weighs and what it teaches (`index.match.differences`).

The upstream's answers, the label model's call and where the labels are kept (the decision log) are the caller's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from index.embedding.embedder import Embedder
from index.match.answers import Agreement, AnswerBaselines, compare_answers
from index.match.audit_sampler import AuditReason, AuditSampler, HitFacts
from index.match.differences import Differences
from index.match.outcome import Kind, Lookup
from index.match.steps import COSINE
from index.records import Verdict


@dataclass(frozen=True)
class LabelCase:
    """What a label is about: the request's prompt and the candidate's, in a namespace, and whether the candidate
    was served (an audit) or not (a shadow)."""

    namespace: str
    question: str
    cached_question: str
    served: bool

    @classmethod
    def of(cls, namespace: str, prompt: str, lookup: Lookup) -> LabelCase:
        return cls(namespace, prompt, lookup.candidate_prompt or "", lookup.verdict is Verdict.SEMANTIC_HIT)


@dataclass(frozen=True)
class LabelConfig:
    """How a deployment labels: shadows on or off (`DEJA_SHADOW_LABELS`), whether a label model labels
    (`DEJA_LABEL_MODEL`) and how often it errs (`DEJA_LABEL_MODEL_ERROR_RATE`), and the answer similarity that counts
    as the same answer (`DEJA_ANSWER_SAME_SIMILARITY`)."""

    shadow_labels: bool = True
    label_model: bool = False
    label_model_error_rate: float = 0.0
    answer_same_similarity: float = 0.95

    @property
    def model_weight(self) -> float:
        """What one of the label model's labels weighs (1 - 2 x its error rate)."""
        return 1.0 - 2.0 * self.label_model_error_rate


def hit_facts(lookup: Lookup, over_budget: bool, now: float, prior: float | None = None,
              thin: bool = False) -> HitFacts:
    """What the audit sampler reads of a served hit. Where the learner's statistic says the budget does not hold
    (for the hit's kind), in a band the learner opened below the kind's cold-start threshold, and near the
    threshold, is where an audit teaches most: the cosine against the threshold
    the decision held it to (`Decision.threshold`: a hit served on its cosine in guarded mode; a plain rewording is
    served on its content and is never near a threshold)."""
    decision = lookup.decision
    similarity = threshold = None
    policy = None if decision is None else decision.policy
    if decision is not None and policy is not None and policy.guarded and decision.basis == COSINE:
        similarity, threshold = decision.similarity, decision.threshold
    created = lookup.response.created_at if lookup.response is not None else now
    return HitFacts(over_budget, similarity, threshold, now - created, prior if similarity is not None else None,
                    thin)


def teach(differences: Differences, case: LabelCase, same: bool, weight: float = 1.0) -> None:
    """The one place a label teaches (feedback, the label page, audits, shadows, the label model): a wrong served
    hit or a right near-miss is one label, of `weight`, of what differed between the two prompts; the learned
    thresholds read the labels themselves (from the decision log on a gateway)."""
    if same != case.served:
        differences.remember(case.namespace, case.question, case.cached_question, same, weight)


class LabelRules:
    """The rules with the state they read: the audit sampler and its hourly allowance, the namespaces' baselines of
    the upstream's variation, the remembered differences, the embedder that compares answers, the learner's
    statistic (`over_budget`: `ThresholdBook.over_budget`; `thin`: `ThresholdBook.thin`, a bound that still rests
    mostly on the prior) and each kind's cold-start threshold (`prior`: the
    deployment policy's `prior_for`; a hit below it sits in a band the learner opened). Thread-safe."""

    def __init__(self, config: LabelConfig, sampler: AuditSampler, baselines: AnswerBaselines,
                 differences: Differences, embedder: Embedder, over_budget: Callable[[str, Kind], bool],
                 clock: Callable[[], float], prior: Callable[[Kind], float] | None = None,
                 thin: Callable[[str, Kind], bool] | None = None) -> None:
        self.config = config
        self.sampler = sampler
        self.baselines = baselines
        self.differences = differences
        self.embedder = embedder
        self.over_budget = over_budget
        self.clock = clock
        self.prior = prior
        self.thin = thin

    def audit(self, namespace: str, lookup: Lookup, draw: float) -> AuditReason | None:
        """Audit this served semantic hit? `draw` is uniform in [0, 1)."""
        decision = lookup.decision
        over = decision is not None and self.over_budget(namespace, decision.kind)
        prior = None if decision is None or self.prior is None else self.prior(decision.kind)
        thin = decision is not None and self.thin is not None and self.thin(namespace, decision.kind)
        return self.sampler.draw(hit_facts(lookup, over, self.clock(), prior, thin), draw)

    @property
    def audit_asks_twice(self) -> bool:
        """An audit re-asks the upstream twice when answers are compared (the second fresh answer shows how much
        the upstream's answers vary), once when a label model labels."""
        return not self.config.label_model

    def shadows(self, lookup: Lookup) -> bool:
        """Label this miss? Every miss with a decided candidate, while shadows are on (only the labels of near
        misses a lower threshold would serve are the learner's evidence; every one may teach a difference)."""
        return (self.config.shadow_labels and lookup.candidate_response is not None
                and lookup.decision is not None)

    def asks_again(self, namespace: str, lookup: Lookup, fresh: str, cached: str) -> bool:
        """Does a shadow ask the upstream once more? Only for a near miss a lower threshold would serve, labelled
        by comparing answers, whose two answers differ while the namespace has no measure yet of how much the
        upstream's answers vary, within the hour's allowance: two fresh answers show the variation, so the near
        miss gets a label instead of none."""
        decision = lookup.decision
        return (decision is not None and decision.would_serve and not self.config.label_model and fresh != cached
                and self.baselines.baseline(namespace) is None and self.sampler.spend_on_shadow(1))

    def by_label_model(self, audit: bool) -> bool:
        """Does the label model label this? Every audit; a shadow within the half of the hour's allowance that audits
        do not need (over it, the answers are compared instead)."""
        return self.config.label_model and (audit or self.sampler.spend_on_shadow(1))

    def compare(self, namespace: str, fresh: str, cached: str, second: str | None) -> Agreement:
        """The label from the answers (`same` None: no label), against the namespace's baseline of the upstream's
        variation, which a second fresh answer feeds."""
        agreement = compare_answers(fresh, cached, self.embedder, self.config.answer_same_similarity, second,
                                    self.baselines.baseline(namespace))
        if agreement.fresh_similarity is not None:
            self.baselines.add(namespace, agreement.fresh_similarity)
        return agreement

    def teach(self, case: LabelCase, same: bool, weight: float = 1.0) -> None:
        teach(self.differences, case, same, weight)
