"""Threshold sweep from real traffic: the gateway's labelled decisions, swept like a labelled pairs dataset.

A logged decision reads as a pair: its candidate was cached, its prompt arrived, and the gateway measured their
cosine similarity. Its label (human > feedback > audit > shadow) says whether the candidate's answer was right.
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter, defaultdict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy.exc import ArgumentError

from eval.datasets import Conversation, LabeledPair
from eval.sweep import ScoredPair, SweepConfig, SweepReport, ThresholdChoice, build_report
from index.errors import StoreUnavailable
from index.guards.stages import STAGE_ORDER
from index.match.outcome import Reason
from index.storage.decision_log import DecisionLog, LabeledDecision, LabelSource
from index.storage.entries import display_url, make_engine

# The namespace the gateway reads as the deployment-wide default; here also "every namespace together".
ALL_NAMESPACES = "*"
# One kind per label: traffic carries no finer kinds (negation, value change, ...) than right or wrong.
SAME_ANSWER_KIND = "traffic_same"
MUST_NOT_KIND = "traffic"
EMBEDDER = "the gateway's (logged similarities)"
# Label sources in the order `DecisionLog.labeled` ranks them.
SOURCES = (LabelSource.HUMAN, LabelSource.FEEDBACK, LabelSource.AUDIT, LabelSource.EXPLORE, LabelSource.SHADOW)


@dataclass(frozen=True)
class SourceCount:
    """Labels of one source (`audit`, `shadow`, ...) that decided a decision's label."""

    source: str
    correct: int
    wrong: int


@dataclass(frozen=True)
class TrafficSweep:
    """The sweep over one namespace's labelled decisions; namespace "*" is every namespace together."""

    namespace: str
    labels: int
    sources: tuple[SourceCount, ...]
    # Decisions vetoed by a check the sweep cannot re-run (e.g. the context of a conversation): misses throughout.
    fixed_vetoes: int
    report: SweepReport

    @property
    def choice(self) -> ThresholdChoice | None:
        """The choice for the last stage set swept (the gateway's); None when no target was given."""
        return self.report.choices[-1] if self.report.choices else None


@dataclass(frozen=True)
class Applied:
    """What `--apply` did for one namespace: stored `min_similarity`, or nothing (None) when none qualified."""

    namespace: str
    min_similarity: float | None
    labels: int
    # The threshold stored for this namespace before, if any (it stays in force when nothing is stored).
    previous: float | None


@dataclass(frozen=True)
class TrafficReport:
    """Every sweep of `eval sweep --traffic`: all namespaces ("*") first, then one per namespace."""

    database: str
    namespace: str | None
    sweeps: tuple[TrafficSweep, ...]
    applied: tuple[Applied, ...] = ()
    # The API whose decisions were swept (`chat`, `messages`, `responses`); None: every API.
    api: str | None = None


def sqlite_path(url: str) -> Path | None:
    """The file of a SQLite URL (None for other databases and in-memory SQLite)."""
    if not url.startswith("sqlite:///") or url.startswith("sqlite:///:memory:"):
        return None
    return Path(url.removeprefix("sqlite:///").split("?", 1)[0])


@contextmanager
def decision_log(url: str) -> Iterator[DecisionLog]:
    """The decision log at `url`. A missing SQLite file is an error here, not a new empty database."""
    path = sqlite_path(url)
    if path is not None and not path.is_file():
        raise StoreUnavailable(f"no such file: {path}")
    try:
        engine = make_engine(url)
    except ArgumentError as exc:
        raise StoreUnavailable(f"not a database URL: {display_url(url)}: {exc}") from None
    try:
        yield DecisionLog(engine)
    finally:
        engine.dispose()


def scored_decisions(labeled: Sequence[LabeledDecision]) -> tuple[ScoredPair, ...]:
    """Each labelled decision as a scored pair: candidate = `a` (cached), prompt = `b` (arriving)."""
    scored: list[ScoredPair] = []
    for item in labeled:
        record = item.decision
        if record.candidate_prompt is None:  # nothing was compared: a miss at every threshold
            scored.append(ScoredPair(_pair(item, ""), None))
        else:
            scored.append(ScoredPair(_pair(item, record.candidate_prompt), record.similarity, _fixed_veto(item)))
    return tuple(scored)


def _pair(item: LabeledDecision, candidate: str) -> LabeledPair:
    record = item.decision
    kind = SAME_ANSWER_KIND if item.correct else MUST_NOT_KIND
    return LabeledPair(record.request_id, Conversation.of(candidate), Conversation.of(record.prompt), kind,
                       item.correct, domain=record.namespace)


def _fixed_veto(item: LabeledDecision) -> str | None:
    """A logged refusal the sweep cannot re-run (the context threshold, a context check): kept as is. The
    similarity threshold and the prompt stages are re-run by the sweep."""
    record = item.decision
    if record.reason is Reason.CONTEXT_BELOW_THRESHOLD:
        return record.reason.value
    if record.vetoed_by is None or record.vetoed_by in STAGE_ORDER:
        return None
    return record.vetoed_by


def traffic_report(
    labeled: Sequence[LabeledDecision], config: SweepConfig, database: str, namespace: str | None = None,
    api: str | None = None,
) -> TrafficReport:
    """One sweep of every namespace together ("*") and one per namespace; only `namespace` when given. `api`
    names the API the decisions were filtered to (the caller filters), for the report."""
    by_namespace: dict[str, list[LabeledDecision]] = defaultdict(list)
    for item in labeled:
        by_namespace[item.decision.namespace].append(item)
    if namespace is not None:
        groups = [(namespace, by_namespace.get(namespace, []))]
    else:
        ordered = sorted(by_namespace.items(), key=lambda kv: (-len(kv[1]), kv[0]))
        groups = [(ALL_NAMESPACES, list(labeled)), *ordered]
    sweeps = tuple(_sweep(name, items, config) for name, items in groups)
    return TrafficReport(display_url(database), namespace, sweeps, api=api)


def _sweep(namespace: str, labeled: Sequence[LabeledDecision], config: SweepConfig) -> TrafficSweep:
    scored = scored_decisions(labeled)
    title = "traffic, all namespaces" if namespace == ALL_NAMESPACES else f"traffic, namespace {namespace}"
    tally = Counter((item.source, item.correct) for item in labeled)
    sources = tuple(SourceCount(s.value, tally[s, True], tally[s, False])
                    for s in SOURCES if tally[s, True] + tally[s, False])
    return TrafficSweep(
        namespace=namespace,
        labels=len(labeled),
        sources=sources,
        fixed_vetoes=sum(1 for item in scored if item.veto is not None),
        report=build_report(title, EMBEDDER, scored, config),
    )


def apply_choices(log: DecisionLog, report: TrafficReport, at: float) -> TrafficReport:
    """Store each sweep's chosen threshold for its namespace ("*" = deployment default); none chosen, none stored.

    The running gateways pick stored thresholds up on their next sync, without a restart.
    """
    previous = log.thresholds()
    applied: list[Applied] = []
    for sweep in report.sweeps:
        choice = sweep.choice
        if choice is None:
            raise ValueError("applying needs a target (max false-hit rate) to choose by")
        before = previous.get(sweep.namespace)
        if choice.threshold is not None:
            log.set_threshold(sweep.namespace, choice.threshold, label_count=sweep.labels, at=at)
        applied.append(Applied(sweep.namespace, choice.threshold, sweep.labels, None if before is None else before[0]))
    return dataclasses.replace(report, applied=tuple(applied))


def sources_line(sweep: TrafficSweep) -> str:
    """Where the labels came from, e.g. `labels: 412 — audit 130 (9 wrong) · shadow 282 (201 wrong)`."""
    parts = [f"{s.source} {s.correct + s.wrong} ({s.wrong} wrong)" for s in sweep.sources]
    line = f"labels: {sweep.labels}" + (" — " + " · ".join(parts) if parts else "")
    if sweep.fixed_vetoes:
        line += f" · {sweep.fixed_vetoes} vetoed by a check the sweep cannot re-run (misses at every threshold)"
    return line


def applied_line(applied: Applied, target: float) -> str:
    """One line per namespace: what `--apply` stored, or that it stored nothing and why."""
    where = "deployment default (*)" if applied.namespace == ALL_NAMESPACES else f"namespace {applied.namespace}"
    if applied.min_similarity is not None:
        return f"stored min similarity {applied.min_similarity:g} for {where} ({applied.labels} labels)"
    kept = "" if applied.previous is None else f"; {applied.previous:g} stays stored"
    return (f"nothing stored for {where}: no threshold keeps the false-hit upper bound ≤ {100 * target:g}% "
            f"({applied.labels} labels){kept}")


def to_json(report: TrafficReport) -> str:
    """The whole traffic report as indented JSON (tuples become lists, missing rates become null)."""
    return json.dumps(dataclasses.asdict(report), indent=2, ensure_ascii=False)
