"""The labelling loop's rules (`index.match.labelling`), the ones a gateway and `eval replay --learn` both run:
which hits are audited, which misses shadowed, when a shadow asks again, who labels, what a label teaches."""

from __future__ import annotations

from index.embedding.embedder import HashEmbedder
from index.match.answers import AnswerBaselines
from index.match.audit_sampler import AuditReason, AuditSampler
from index.match.differences import Differences
from index.match.kinds import Kind
from index.match.labelling import LabelCase, LabelConfig, LabelRules, hit_facts
from index.match.outcome import Decision, Lookup, Reason
from index.match.policy import DecisionMode, MatchPolicy
from index.records import CachedResponse, Verdict

POLICY = MatchPolicy(0.92)
ASKED, CACHED = "how do i pin a chat", "how do i unpin a chat"


def rules(config: LabelConfig | None = None, calls_per_hour: int = 10) -> LabelRules:
    config = config or LabelConfig()
    sampler = AuditSampler(0.01, calls_per_hour, lambda: 0.0)
    return LabelRules(config, sampler, AnswerBaselines(), Differences(), HashEmbedder(), lambda ns, kind: False,
                      lambda: 7200.0)


def hit(similarity: float, policy: MatchPolicy | None = POLICY, basis: str = "cosine") -> Lookup:
    decision = Decision(Reason.HIT, similarity, chosen=0, basis=basis, would_serve=basis == "cosine", policy=policy)
    return Lookup(Verdict.SEMANTIC_HIT, CachedResponse(1, {}, 0.0), similarity, decision, CACHED, 1)


def miss(would_serve: bool) -> Lookup:
    decision = Decision(Reason.BELOW_THRESHOLD, 0.85, chosen=0, would_serve=would_serve, policy=POLICY)
    return Lookup(Verdict.MISS, None, 0.85, decision, CACHED, 1, candidate_response={"choices": []})


def test_a_hit_near_the_threshold_its_decision_held_it_to_is_uncertain_and_audited_more() -> None:
    facts = hit_facts(hit(0.93), False, now=7200.0)
    assert (facts.similarity, facts.threshold, facts.entry_age) == (0.93, 0.92, 7200.0)
    assert hit_facts(hit(0.93, basis="same content"), False, 7200.0).threshold is None  # served on its content
    cosine_rule = MatchPolicy(0.92, decision=DecisionMode.THRESHOLD)
    assert hit_facts(hit(0.93, cosine_rule), False, 7200.0).threshold is None
    assert rules().audit("ns", hit(0.93), draw=0.05) is AuditReason.UNCERTAIN  # 10 x a share of 1%
    assert rules().audit("ns", hit(0.99), draw=0.05) is None


def test_every_miss_with_a_decided_candidate_is_shadowed_while_shadows_are_on() -> None:
    assert rules().shadows(miss(would_serve=False)) and rules().shadows(miss(would_serve=True))
    assert not rules(LabelConfig(shadow_labels=False)).shadows(miss(would_serve=True))
    assert not rules().shadows(Lookup(Verdict.MISS))


def test_only_a_near_miss_asks_the_upstream_again_and_only_within_the_allowance() -> None:
    loop = rules(calls_per_hour=2)
    assert not loop.asks_again("ns", miss(would_serve=False), "fresh", "cached")
    assert not loop.asks_again("ns", miss(would_serve=True), "same", "same")  # the two answers agree already
    assert loop.asks_again("ns", miss(would_serve=True), "fresh", "cached")
    # The hour's other call is left to audits of served hits.
    assert not loop.asks_again("ns", miss(would_serve=True), "fresh", "cached")
    assert loop.sampler.spend(1) and not loop.sampler.spend(1)
    assert not rules(LabelConfig(label_model=True)).asks_again("ns", miss(would_serve=True), "fresh", "cached")


def test_the_label_model_labels_every_audit_and_a_shadow_within_the_allowance() -> None:
    model = rules(LabelConfig(label_model=True, label_model_error_rate=0.1), calls_per_hour=2)
    assert model.by_label_model(audit=True) and model.by_label_model(audit=False)
    assert model.by_label_model(audit=True) and not model.by_label_model(audit=False)
    assert model.sampler.spend(1)  # shadows left half the hour to audits
    assert model.config.model_weight == 0.8 and not model.audit_asks_twice
    assert not rules().by_label_model(audit=True) and rules().audit_asks_twice


def test_a_wrong_hit_or_a_right_near_miss_teaches_its_difference_and_nothing_else_does() -> None:
    loop = rules()
    for same, served in ((True, True), (False, False)):
        loop.teach(LabelCase("ns", ASKED, CACHED, served), same)
    assert loop.differences.remembered() == []
    for _ in range(3):
        loop.teach(LabelCase("ns", ASKED, CACHED, served=True), same=False)
    assert loop.differences.veto("ns", ASKED, CACHED) is not None


def test_the_over_budget_statistic_is_read_for_the_hits_kind() -> None:
    over = LabelRules(LabelConfig(), AuditSampler(0.01, 10, lambda: 0.0), AnswerBaselines(), Differences(),
                      HashEmbedder(), lambda ns, kind: kind is Kind.COSINE, lambda: 7200.0)
    assert over.audit("ns", hit(0.99), draw=0.1) is AuditReason.OVER_BUDGET
