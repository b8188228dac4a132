"""Threshold sweep: embed once, then score every threshold through the gateway's own Matcher (at a fixed policy,
the learner off: `eval.product`).

A pair `(a, b)` is read as "a is cached, b arrives": the gateway serves a's answer for b on a hit.
Pairs the gateway could not compare (different system prompt or parameters, tool conversations with different
context, exact-only requests) have no candidate at all; conversations are compared by last message and
relevant context, exactly as the gateway's semantic tier does.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from eval.datasets import Conversation, LabeledPair
from eval.embedding import Progress, embed_unique, unique_texts
from eval.metrics import f1, pr_auc, rate, roc_auc, wilson_upper
from eval.product import NAMESPACE, matcher_for
from index.embedding.embedder import Embedder, Vector
from index.guards.registry import context_stages
from index.guards.stages import MemoStage, Stage
from index.match.decide import Deciders
from index.match.matcher import Matcher, MatchRequest
from index.match.outcome import Candidate, Decision
from index.match.policy import COSINE_POLICY, MatchPolicy
from index.request.keys import CacheKey, ContextMatch, LookupMode, build_key

KIND_ORDER = (
    "paraphrase", "reworded_context", "irrelevant_turn", "small_talk", "chatter", "irrelevant_history",
    "negation", "value_change", "topic_shift", "unrelated", "entity_change", "detail_change", "intent_flip",
    "value_changed", "changed_quantity", "changed_account", "swapped_choice", "option_order", "other_intent",
    "different_context",
)


@dataclass(frozen=True)
class ScoredPair:
    """A pair and the cosine similarity of its prompts; None when contexts differ (no candidate).

    `veto` names a veto no threshold lifts and the sweep cannot re-run (a logged decision's context check):
    the pair is a miss at every threshold.
    """

    pair: LabeledPair
    similarity: float | None
    veto: str | None = None
    # Conversations matched by meaning: each side's relevant context and the similarity of the two.
    context_a: str | None = None
    context_b: str | None = None
    context_similarity: float | None = None

    @property
    def score(self) -> float:
        """The score the gateway effectively ranks by: a pair it cannot match ranks lowest."""
        return -1.0 if self.similarity is None else self.similarity


@dataclass(frozen=True)
class KindCount:
    """How many pairs of one kind (and label) something happened to."""

    kind: str
    same_answer: bool
    count: int


@dataclass(frozen=True)
class KindRate:
    """Served pairs of one kind: a hit rate for same-answer kinds, a false-hit rate for the others."""

    kind: str
    same_answer: bool
    pairs: int
    served: int
    rate: float | None


@dataclass(frozen=True)
class StageVetoes:
    """What one stage vetoed at one threshold: `caught` must-not pairs, `wrongly_vetoed` same-answer pairs."""

    stage: str
    caught: int
    wrongly_vetoed: int
    by_kind: tuple[KindCount, ...]


@dataclass(frozen=True)
class SweepPoint:
    """Outcome of every pair at one threshold (`threshold` is a min cosine similarity)."""

    threshold: float
    hits: int
    false_hits: int
    hit_rate: float | None
    false_hit_rate: float | None
    false_hit_upper: float
    precision: float | None
    f1: float | None
    kinds: tuple[KindRate, ...]
    vetoes: tuple[StageVetoes, ...]


@dataclass(frozen=True)
class Sweep:
    """One stage set over all thresholds. `stage_checks` counts real stage runs (memoized per pair)."""

    stages: tuple[str, ...]
    same_pairs: int
    must_not_pairs: int
    stage_checks: int
    points: tuple[SweepPoint, ...]


@dataclass(frozen=True)
class ThresholdChoice:
    """Best threshold whose false-hit upper bound meets `target`; `threshold` None when none does."""

    stages: tuple[str, ...]
    target: float
    confidence: float
    must_not_pairs: int
    threshold: float | None
    point: SweepPoint | None
    # When none qualifies: the point with the lowest upper bound, to say how far off we are.
    closest: SweepPoint | None


@dataclass(frozen=True)
class SweepReport:
    """Everything `eval sweep` prints: dataset summary, AUCs of raw similarity, sweeps, threshold choices."""

    dataset: str
    embedder: str
    pairs: int
    compared: int
    same_pairs: int
    must_not_pairs: int
    kinds: tuple[KindCount, ...]
    roc_auc: float | None
    pr_auc: float | None
    confidence: float
    sweeps: tuple[Sweep, ...]
    choices: tuple[ThresholdChoice, ...]


def kind_key(kind: str, same_answer: bool) -> tuple[int, int, str]:
    """Display order: same-answer kinds first, known kinds in their natural order, others by name."""
    known = KIND_ORDER.index(kind) if kind in KIND_ORDER else len(KIND_ORDER)
    return (0 if same_answer else 1, known, kind)


def request_key(side: Conversation, context_match: ContextMatch) -> CacheKey:
    """The gateway's key for one side of a pair (same namespace and model for both sides)."""
    body = {"model": "eval", "messages": [{"role": m.role, "content": m.content} for m in side.messages]}
    return build_key(NAMESPACE, body, context_match)


def decide_pair(matcher: Matcher, item: ScoredPair, index: int) -> Decision | None:
    """A pair as the gateway decides it, `a` cached and `b` asked: `a` is the one candidate offered to the Matcher,
    which decides `b` under the policy it holds for the namespace (a conversation's adjusted). None when the gateway
    would find no candidate (contexts it cannot compare) or the pair carries a veto no threshold lifts."""
    if item.similarity is None or item.veto is not None:
        return None
    pair = item.pair
    candidate = Candidate(index, pair.a.prompt, item.similarity, item.context_a, item.context_similarity)
    return matcher.decide(MatchRequest(pair.b.prompt, NAMESPACE, item.context_b), [candidate])


def comparable_keys(pair: LabeledPair, context_match: ContextMatch) -> tuple[CacheKey, CacheKey] | None:
    """Both sides' keys when the gateway's semantic tier could compare them, else None (a miss)."""
    a, b = request_key(pair.a, context_match), request_key(pair.b, context_match)
    if a.scope != b.scope or a.mode is not LookupMode.FULL or b.mode is not LookupMode.FULL:
        return None
    return a, b


def texts_to_embed(pairs: Sequence[LabeledPair], context_match: ContextMatch = ContextMatch.SEMANTIC) -> list[str]:
    """Distinct prompts (and relevant contexts) of the pairs the gateway could compare; nothing else."""
    texts: list[str] = []
    for pair in pairs:
        keys = comparable_keys(pair, context_match)
        for key in keys or ():
            texts.append(key.prompt)
            if key.context_text is not None:
                texts.append(key.context_text or " ")
    return unique_texts(texts)


def _cosine(vectors: Mapping[str, Vector], a: str, b: str) -> float:
    return min(1.0, max(-1.0, float(np.dot(vectors[a or " "], vectors[b or " "]))))


def score_pairs(
    pairs: Sequence[LabeledPair], embedder: Embedder, batch_size: int = 64, progress: Progress | None = None,
    context_match: ContextMatch = ContextMatch.SEMANTIC,
) -> tuple[ScoredPair, ...]:
    """Embed the distinct texts of comparable pairs once and attach each pair's cosine similarities."""
    vectors = embed_unique(embedder, texts_to_embed(pairs, context_match), batch_size, progress)
    scored: list[ScoredPair] = []
    for pair in pairs:
        keys = comparable_keys(pair, context_match)
        if keys is None:
            scored.append(ScoredPair(pair, None))
            continue
        a, b = keys
        similarity = _cosine(vectors, a.prompt, b.prompt)
        if a.context_text is None or b.context_text is None:
            scored.append(ScoredPair(pair, similarity))
            continue
        context_similarity = _cosine(vectors, a.context_text, b.context_text)
        scored.append(ScoredPair(pair, similarity, None, a.context_text, b.context_text, context_similarity))
    return tuple(scored)


def run_sweep(
    scored: Sequence[ScoredPair],
    thresholds: Sequence[float],
    stages: Sequence[Stage],
    confidence: float = 0.95,
    policy: MatchPolicy = COSINE_POLICY,
) -> Sweep:
    """Score every threshold (ascending) through the Matcher at `policy` at that threshold (fixed: the learner off);
    each stage runs at most once per pair."""
    memo = tuple(MemoStage(stage) for stage in stages)
    memo_context = tuple(MemoStage(stage) for stage in context_stages(stages))
    same = sum(1 for item in scored if item.pair.same_answer)
    points = tuple(_point(policy.at(t), scored, memo, memo_context, confidence) for t in sorted(set(thresholds)))
    return Sweep(
        stages=tuple(stage.name for stage in stages),
        same_pairs=same,
        must_not_pairs=len(scored) - same,
        stage_checks=sum(stage.calls for stage in (*memo, *memo_context)),
        points=points,
    )


def _point(
    policy: MatchPolicy, scored: Sequence[ScoredPair], stages: Sequence[Stage], context_checks: Sequence[Stage],
    confidence: float,
) -> SweepPoint:
    tally = _Tally(Counter(), Counter(), Counter())
    matcher = matcher_for(policy, Deciders(tuple(stages), tuple(context_checks)), learn=False)
    for index, item in enumerate(scored):
        pair = item.pair
        tally.totals[pair.kind, pair.same_answer] += 1
        decision = decide_pair(matcher, item, index)
        if decision is None:
            continue  # contexts differ (the gateway finds no candidate) or a fixed veto: a miss
        if decision.hit:
            tally.served[pair.kind, pair.same_answer] += 1
        elif decision.vetoed_by is not None:  # a veto (not a threshold)
            tally.vetoed[decision.vetoed_by, pair.kind, pair.same_answer] += 1
    return _summarize(policy.min_similarity, tally, [stage.name for stage in stages], confidence)


@dataclass(frozen=True)
class _Tally:
    """Counts at one threshold, keyed by (kind, same_answer); `vetoed` by (stage, kind, same_answer)."""

    totals: Counter[tuple[str, bool]]
    served: Counter[tuple[str, bool]]
    vetoed: Counter[tuple[str, str, bool]]


def _summarize(threshold: float, tally: _Tally, stage_names: Sequence[str], confidence: float) -> SweepPoint:
    totals, served, vetoed = tally.totals, tally.served, tally.vetoed
    same = sum(n for (_, is_same), n in totals.items() if is_same)
    must_not = sum(totals.values()) - same
    hits = sum(n for (_, is_same), n in served.items() if is_same)
    false_hits = sum(served.values()) - hits
    precision = rate(hits, hits + false_hits)
    hit_rate = rate(hits, same)
    ordered = sorted(totals, key=lambda key: kind_key(*key))
    kinds = tuple(
        KindRate(k, s, totals[k, s], served[k, s], rate(served[k, s], totals[k, s])) for k, s in ordered
    )
    return SweepPoint(
        threshold=threshold,
        hits=hits,
        false_hits=false_hits,
        hit_rate=hit_rate,
        false_hit_rate=rate(false_hits, must_not),
        false_hit_upper=wilson_upper(false_hits, must_not, confidence),
        precision=precision,
        f1=f1(precision, hit_rate),
        kinds=kinds,
        vetoes=tuple(_vetoes(name, vetoed, ordered) for name in stage_names),
    )


def _vetoes(
    stage: str, vetoed: Counter[tuple[str, str, bool]], kinds: Sequence[tuple[str, bool]]
) -> StageVetoes:
    by_kind = tuple(KindCount(kind, same, vetoed[stage, kind, same]) for kind, same in kinds)
    caught = sum(item.count for item in by_kind if not item.same_answer)
    wrongly = sum(item.count for item in by_kind if item.same_answer)
    return StageVetoes(stage, caught, wrongly, by_kind)


def choose_threshold(sweep: Sweep, target: float, confidence: float = 0.95) -> ThresholdChoice:
    """Highest hit rate whose Wilson upper bound on the false-hit rate is <= `target`.

    Ties go to the lower bound, then to the higher (safer) threshold. A threshold that serves nothing does
    not qualify: it would switch the semantic tier off rather than choose a threshold for it.
    """
    if not 0.0 < target < 1.0:
        raise ValueError(f"max false-hit rate must be in (0, 1), got {target}")
    ok = [p for p in sweep.points
          if sweep.must_not_pairs and p.false_hit_upper <= target and (p.hit_rate or 0.0) > 0.0]
    best = max(ok, key=lambda p: (p.hit_rate or 0.0, -p.false_hit_upper, p.threshold), default=None)
    closest = None
    if best is None and sweep.points:
        closest = min(sweep.points, key=lambda p: (p.false_hit_upper, -(p.hit_rate or 0.0)))
    return ThresholdChoice(
        stages=sweep.stages,
        target=target,
        confidence=confidence,
        must_not_pairs=sweep.must_not_pairs,
        threshold=None if best is None else best.threshold,
        point=best,
        closest=closest,
    )


@dataclass(frozen=True)
class SweepConfig:
    """What to sweep: thresholds (min cosine similarity) of `policy`, one stage set per sweep, optional target."""

    thresholds: tuple[float, ...]
    stage_sets: tuple[tuple[Stage, ...], ...]
    max_false_hit_rate: float | None = None
    confidence: float = 0.95
    policy: MatchPolicy = COSINE_POLICY


def build_report(
    dataset: str, embedder_id: str, scored: Sequence[ScoredPair], config: SweepConfig
) -> SweepReport:
    """Run one sweep per stage set over the same similarities and pick thresholds if a target is set."""
    sweeps = tuple(run_sweep(scored, config.thresholds, s, config.confidence, config.policy)
                   for s in config.stage_sets)
    target = config.max_false_hit_rate
    choices = () if target is None else tuple(choose_threshold(s, target, config.confidence) for s in sweeps)
    labels = [item.pair.same_answer for item in scored]
    scores = [item.score for item in scored]
    counts = Counter((item.pair.kind, item.pair.same_answer) for item in scored)
    same = sum(labels)
    return SweepReport(
        dataset=dataset,
        embedder=embedder_id,
        pairs=len(scored),
        compared=sum(1 for item in scored if item.similarity is not None),
        same_pairs=same,
        must_not_pairs=len(scored) - same,
        kinds=tuple(KindCount(k, s, counts[k, s]) for k, s in sorted(counts, key=lambda key: kind_key(*key))),
        roc_auc=roc_auc(labels, scores),
        pr_auc=pr_auc(labels, scores),
        confidence=config.confidence,
        sweeps=sweeps,
        choices=choices,
    )
