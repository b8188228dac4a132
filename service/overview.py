"""The operator overview `/deja/admin/overview`: what the cache is doing, read from the metrics (this replica's
traffic per API), the decision log (semantic decisions per namespace and API, over time) and the live budget (the
false-hit estimate, its upper bound and the bar's moves). The page itself is drawn by `service.overview_page`."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from prometheus_client import Counter
from sqlalchemy import Engine, func, select

from index.errors import store_errors
from index.match.bar import raised
from index.match.outcome import Kind
from index.records import Verdict
from index.storage.schema import decisions
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
class Savings:
    model: str
    tokens: float
    cost_usd: float


@dataclass(frozen=True)
class NamespaceRow:
    """One (namespace, API): its logged semantic decisions and its live false-hit budget."""

    namespace: str
    api: str
    decisions: int  # semantic decisions logged (a candidate was found)
    served: int  # semantic hits served
    audited: int
    wrong: int
    estimate: float | None
    upper: float
    bar: float | None  # None: nothing can be served at this budget


@dataclass(frozen=True)
class BarTrack:
    """A namespace's bar over time: (time, bar) points, a step after each move."""

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
    savings: tuple[Savings, ...]
    namespaces: tuple[NamespaceRow, ...]
    bars: tuple[BarTrack, ...]
    timeline: tuple[Slice, ...]
    thresholds: tuple[NamespaceThreshold, ...] = ()


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


def _savings(rt: Runtime) -> tuple[Savings, ...]:
    tokens = {labels["model"]: value for labels, value in _counter_values(rt.metrics.tokens_saved)}
    cost = {labels["model"]: value for labels, value in _counter_values(rt.metrics.cost_saved)}
    return tuple(Savings(model, tokens.get(model, 0.0), cost.get(model, 0.0)) for model in sorted(tokens | cost))


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


def _bar_tracks(rt: Runtime, namespaces: Iterable[str], since: float, now: float) -> tuple[BarTrack, ...]:
    moves: dict[str, list[tuple[float, int, int]]] = {}
    for change in rt.bars.history:
        moves.setdefault(change.namespace, []).append((change.at, change.old_level, change.new_level))
    tracks = []
    for namespace in sorted(set(namespaces) | moves.keys()):
        prior = rt.prior_bar(namespace)
        steps = moves.get(namespace, [])
        level = steps[0][1] if steps else rt.bars.level(namespace)
        points = [(min(since, steps[0][0]) if steps else since, raised(prior, level))]
        for at, _, new in steps:
            points.append((at, raised(prior, new)))
        points.append((now, raised(prior, rt.bars.level(namespace))))
        tracks.append(BarTrack(namespace, tuple(points)))
    return tuple(tracks)


def _threshold_tracks(rt: Runtime, namespaces: Iterable[str], since: float, now: float) -> tuple[BarTrack, ...]:
    """Guarded mode: each namespace's learned threshold over time, a step at every move."""
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
        tracks.append(BarTrack(namespace, tuple(points)))
    return tuple(tracks)


def read_overview(rt: Runtime) -> Overview:
    """In a worker thread: flush pending decisions, refresh the budget, then read everything the page draws."""
    rt.flush_decisions()
    rt.budget.refresh()
    rt.upkeep.refresh_thresholds(force=True)
    now = rt.clock()
    counts = _decision_counts(rt.engine)
    tallies = {(t.namespace, t.api): t for t in rt.budget.tallies}
    rows = []
    for key in sorted(counts.keys() | tallies.keys()):
        tally = tallies.get(key)
        rows.append(NamespaceRow(
            namespace=key[0], api=key[1], decisions=counts.get(key, 0),
            served=tally.served if tally else 0, audited=tally.audited if tally else 0,
            wrong=tally.wrong if tally else 0, estimate=tally.estimate if tally else None,
            upper=tally.upper if tally else 1.0, bar=rt.budget.bar(key[0])))
    timeline = _timeline(rt.engine, now)
    tracks = _threshold_tracks if rt.policy.guarded else _bar_tracks
    since = timeline[0].start if timeline else now
    return Overview(budget=rt.bars.budget, decision=rt.policy.decision.value, now=now,
                    traffic=_traffic(rt), savings=_savings(rt), namespaces=tuple(rows),
                    bars=tracks(rt, (r.namespace for r in rows), since, now), timeline=timeline,
                    thresholds=tuple(rt.threshold_keeper.view()))
