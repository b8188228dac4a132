"""The operator overview `/deja/admin/overview`: what the cache is doing, read from the metrics (this replica's
traffic per API), the decision log (semantic decisions per namespace and API, over time) and the budget as the last
upkeep pass stored it (the tallies, the learner's statistic and thresholds, their moves): a page load runs no pass.
The page itself is drawn by `service.overview_page`."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from prometheus_client import Counter
from sqlalchemy import Engine, func, select

from index.errors import store_errors
from index.match.live_threshold import CONFIDENCE
from index.match.outcome import Kind
from index.records import Verdict
from index.reuse.watch import NamespaceReuse
from index.storage.schema import decisions
from service.ledger import SavingsRow
from service.runtime import Runtime
from service.thresholds import NamespaceThreshold

# Semantic decisions drawn over time: the newest this many, in TIME_BUCKETS equal slices of their span.
RECENT_DECISIONS = 20_000
TIME_BUCKETS = 24


@dataclass(frozen=True)
class ApiTraffic:
    """One API's requests on this replica since it started, by how they were answered."""

    api: str
    by_verdict: dict[str, int]

    @property
    def requests(self) -> int:
        return sum(self.by_verdict.values())

    def rate(self, verdict: Verdict) -> float | None:
        return self.by_verdict.get(verdict.value, 0) / self.requests if self.requests else None


@dataclass(frozen=True)
class NamespaceRow:
    """One (namespace, API): its logged semantic decisions and the budget's tallies (counts only)."""

    namespace: str
    api: str
    decisions: int  # semantic decisions logged (a candidate was found)
    served: int  # semantic hits served
    audited: int
    wrong: int


@dataclass(frozen=True)
class ThresholdTrack:
    """A namespace's cosine threshold in force over time: (time, threshold) points, a step after each move."""

    namespace: str
    points: tuple[tuple[float, float], ...]


@dataclass(frozen=True)
class Slice:
    start: float
    end: float
    served: int
    not_served: int


@dataclass(frozen=True)
class Overview:
    budget: float
    decision: str
    now: float
    traffic: tuple[ApiTraffic, ...]
    savings: tuple[SavingsRow, ...]
    namespaces: tuple[NamespaceRow, ...]
    tracks: tuple[ThresholdTrack, ...]
    timeline: tuple[Slice, ...]
    thresholds: tuple[NamespaceThreshold, ...] = ()
    confidence: float = CONFIDENCE
    reuse: tuple[NamespaceReuse, ...] = ()


def _counter_values(counter: Counter) -> Iterable[tuple[dict[str, str], float]]:
    for family in counter.collect():
        for sample in family.samples:
            if sample.name.endswith("_total"):
                yield sample.labels, sample.value


def _traffic(rt: Runtime) -> tuple[ApiTraffic, ...]:
    per_api: dict[str, dict[str, int]] = {}
    for labels, value in _counter_values(rt.metrics.requests):
        per_api.setdefault(labels["api"], {})[labels["verdict"]] = int(value)
    return tuple(ApiTraffic(api, counts) for api, counts in sorted(per_api.items()))


def _decision_counts(engine: Engine) -> dict[tuple[str, str], int]:
    query = select(decisions.c.namespace, decisions.c.api, func.count()).group_by(decisions.c.namespace,
                                                                                 decisions.c.api)
    with store_errors("count decisions"), engine.connect() as conn:
        return {(ns, api): int(n) for ns, api, n in conn.execute(query).all()}


def _timeline(engine: Engine, now: float) -> tuple[Slice, ...]:
    query = (select(decisions.c.created_at, decisions.c.verdict).order_by(decisions.c.created_at.desc())
             .limit(RECENT_DECISIONS))
    with store_errors("read recent decisions"), engine.connect() as conn:
        rows = [(float(at), verdict) for at, verdict in conn.execute(query).all()]
    if not rows:
        return ()
    start = min(at for at, _ in rows)
    width = max(now - start, 1.0) / TIME_BUCKETS
    served, missed = [0] * TIME_BUCKETS, [0] * TIME_BUCKETS
    for at, verdict in rows:
        i = min(TIME_BUCKETS - 1, int((at - start) / width))
        (served if verdict == Verdict.SEMANTIC_HIT.value else missed)[i] += 1
    return tuple(Slice(start + i * width, start + (i + 1) * width, served[i], missed[i]) for i in range(TIME_BUCKETS))


def _threshold_tracks(rt: Runtime, namespaces: Iterable[str], since: float, now: float
                      ) -> tuple[ThresholdTrack, ...]:
    """Each namespace's cosine threshold in force over time, a step at every learned move (none with learning
    off or in threshold mode: the prior serves)."""
    moves: dict[str, list[tuple[float, float, float]]] = {}
    for move in rt.learned.history:
        if move.kind is not Kind.COSINE:
            continue
        moves.setdefault(move.namespace, []).append((move.at, move.old, move.new))
    tracks = []
    for namespace in sorted(set(namespaces) | moves.keys()):
        steps = moves.get(namespace, [])
        now_at = rt.thresholds.policy_for(namespace).min_similarity
        points = [(min(since, steps[0][0]) if steps else since, steps[0][1] if steps else now_at)]
        points += [(at, new) for at, _, new in steps]
        points.append((now, now_at))
        tracks.append(ThresholdTrack(namespace, tuple(points)))
    return tuple(tracks)


def read_overview(rt: Runtime) -> Overview:
    """In a worker thread: everything the page draws, the budget as the last upkeep pass stored it."""
    now = rt.clock()
    counts = _decision_counts(rt.engine)
    tallies = {(t.namespace, t.api): t for t in rt.budget.tallies}
    rows = []
    for key in sorted(counts.keys() | tallies.keys()):
        tally = tallies.get(key)
        rows.append(NamespaceRow(
            namespace=key[0], api=key[1], decisions=counts.get(key, 0),
            served=tally.served if tally else 0, audited=tally.audited if tally else 0,
            wrong=tally.wrong if tally else 0))
    timeline = _timeline(rt.engine, now)
    since = timeline[0].start if timeline else now
    return Overview(budget=rt.budget.budget, decision=rt.policy.decision.value, now=now,
                    traffic=_traffic(rt), savings=rt.ledger.rows(), namespaces=tuple(rows),
                    tracks=_threshold_tracks(rt, (r.namespace for r in rows), since, now), timeline=timeline,
                    thresholds=tuple(rt.threshold_keeper.view()), confidence=rt.budget.confidence,
                    reuse=rt.reuse.report())
