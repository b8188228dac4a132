"""Reports as plain tables of strings (shared by the terminal and the HTML page) and one-line verdicts."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from eval.metrics import rate, trials_needed
from eval.replay import ReplayReport, ReplayRow
from eval.sweep import StageVetoes, Sweep, SweepPoint, SweepReport, ThresholdChoice

if TYPE_CHECKING:
    from eval.vcache import VCacheRow


@dataclass(frozen=True)
class TableData:
    """A titled table of already formatted cells; the first column is the row label."""

    title: str
    headers: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


def pct(value: float | None) -> str:
    return "–" if value is None else f"{100.0 * value:.1f}%"


def num(value: float | None, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def thr(value: float) -> str:
    """A threshold with two decimals, or three when it needs them."""
    return f"{value:.2f}" if round(value, 2) == value else f"{value:.3f}"


def stage_label(stages: Sequence[str]) -> str:
    return ",".join(stages) if stages else "none"


def summary_line(report: SweepReport) -> str:
    parts = [
        f"{report.dataset}: {report.pairs} pairs ({report.same_pairs} same-answer, "
        f"{report.must_not_pairs} must-not)",
        f"embedder {report.embedder}",
        f"ROC-AUC {num(report.roc_auc)}",
        f"PR-AUC {num(report.pr_auc)}",
    ]
    if report.compared < report.pairs:
        parts.insert(1, f"{report.pairs - report.compared} with differing contexts count as misses")
    return " · ".join(parts)


def sweep_table(sweep: Sweep) -> TableData:
    """One row per threshold: hit rates, false-hit rates per kind, overall, upper bound, precision, F1."""
    first = sweep.points[0] if sweep.points else None
    same_kinds = [k.kind for k in first.kinds if k.same_answer] if first else []
    must_kinds = [k.kind for k in first.kinds if not k.same_answer] if first else []
    headers = ["min sim", "hit rate"]
    headers += [f"hit\n{kind}" for kind in same_kinds] if len(same_kinds) > 1 else []
    headers += [f"false hit\n{kind}" for kind in must_kinds]
    headers += ["false hit\nall", "upper\nbound", "precision", "F1"]
    rows = tuple(_sweep_row(point, len(same_kinds) > 1) for point in sweep.points)
    title = (f"stages: {stage_label(sweep.stages)} — {sweep.same_pairs} same-answer, "
             f"{sweep.must_not_pairs} must-not pairs")
    return TableData(title, tuple(headers), rows)


def _sweep_row(point: SweepPoint, per_same_kind: bool) -> tuple[str, ...]:
    cells = [thr(point.threshold), pct(point.hit_rate)]
    cells += [pct(k.rate) for k in point.kinds if k.same_answer] if per_same_kind else []
    cells += [pct(k.rate) for k in point.kinds if not k.same_answer]
    cells += [pct(point.false_hit_rate), pct(point.false_hit_upper), pct(point.precision), num(point.f1)]
    return tuple(cells)


def reference_points(report: SweepReport, sweep: Sweep) -> tuple[SweepPoint, ...]:
    """Where to show stage catches: the lowest threshold swept (stages see the most pairs there) and the
    chosen threshold (or the closest one when none qualifies)."""
    points = list(sweep.points[:1])
    for choice in report.choices:
        picked = choice.point or choice.closest
        if choice.stages == sweep.stages and picked is not None and picked not in points:
            points.append(picked)
    return tuple(points)


def stage_table(report: SweepReport) -> TableData | None:
    """Caught-by-stage counts (caught / pairs of the kind) for the last sweep that ran stages."""
    sweep = next((s for s in reversed(report.sweeps) if s.stages), None)
    if sweep is None or not sweep.points:
        return None
    must = [(k.kind, k.same_answer) for k in sweep.points[0].kinds if not k.same_answer]
    headers = ("min sim", "stage", "must-not\ncaught", *(f"caught\n{kind}" for kind, _ in must),
               "same-answer\nvetoed")
    rows = [_stage_row(sweep, point, vetoes, must) for point in reference_points(report, sweep)
            for vetoes in point.vetoes]
    return TableData("caught by stage (stages run only on pairs above the threshold)", headers, tuple(rows))


def _stage_row(sweep: Sweep, point: SweepPoint, vetoes: StageVetoes, must: Sequence[tuple[str, bool]]
               ) -> tuple[str, ...]:
    totals = {(k.kind, k.same_answer): k.pairs for k in point.kinds}
    counts = {(k.kind, k.same_answer): k.count for k in vetoes.by_kind}
    return (
        thr(point.threshold), vetoes.stage, f"{vetoes.caught}/{sweep.must_not_pairs}",
        *(f"{counts[key]}/{totals[key]}" for key in must), f"{vetoes.wrongly_vetoed}/{sweep.same_pairs}",
    )


def choice_line(choice: ThresholdChoice) -> str:
    """One line: the chosen threshold and its evidence, or why none qualifies."""
    conf = f"{100 * choice.confidence:.0f}%"
    head = f"stages {stage_label(choice.stages)}: "
    point = choice.point
    if point is not None:
        bound = f"{conf} upper bound {pct(point.false_hit_upper)} ≤ {pct(choice.target)}"
        sample = f"{choice.must_not_pairs} must-not pairs"
        return (head + f"choose min similarity {thr(point.threshold)} — hit rate {pct(point.hit_rate)}, "
                f"false-hit rate {pct(point.false_hit_rate)} ({bound}, {sample})")
    line = head + f"no threshold keeps the {conf} upper bound of the false-hit rate ≤ {pct(choice.target)}"
    if choice.closest is not None:
        line += f"; lowest is {pct(choice.closest.false_hit_upper)} at {thr(choice.closest.threshold)}"
    needed = trials_needed(choice.target, choice.confidence)
    if choice.must_not_pairs < needed:
        line += f" ({choice.must_not_pairs} must-not pairs; even zero false hits needs ≥ {needed})"
    return line


def replay_summary(report: ReplayReport) -> str:
    return (f"{report.stream}: {report.requests} requests, {report.intents} intents · "
            f"stages {stage_label(report.stages)} · embedder {report.embedder}")


def replay_table(report: ReplayReport) -> TableData:
    headers = ["min sim", "served", "correct", "wrong\n÷ served", "exact", "semantic", "oracle"]
    headers += [f"vetoed by\n{stage}" for stage in report.stages]
    rows = tuple(_replay_row(row) for row in report.rows)
    return TableData("replay (rates are % of all requests, except wrong ÷ served)", tuple(headers), rows)


def _replay_row(row: ReplayRow) -> tuple[str, ...]:
    cells = [thr(row.threshold), pct(row.served_rate), pct(row.correct_rate), pct(row.wrong_per_served),
             pct(row.exact_rate), pct(row.semantic_rate), pct(row.oracle_rate)]
    cells += [f"{veto.vetoed} ({veto.rightly} right)" for veto in row.vetoes]
    return tuple(cells)


def vcache_table(rows: Sequence[VCacheRow]) -> TableData:
    headers = ("delta", "served", "correct", "wrong\n÷ served", "exact", "semantic", "explored", "oracle")
    cells = tuple((num(row.delta), pct(row.served_rate), pct(row.correct_rate), pct(row.wrong_per_served),
                   pct(rate(row.exact_hits, row.requests)), pct(rate(row.semantic_hits, row.requests)),
                   pct(row.explored_rate), pct(row.oracle_rate)) for row in rows)
    return TableData("vCache replay (rates are % of all requests, except wrong ÷ served)", headers, cells)


def sweep_tables(report: SweepReport) -> tuple[TableData, ...]:
    tables = [sweep_table(sweep) for sweep in report.sweeps]
    caught = stage_table(report)
    return (*tables, caught) if caught is not None else tuple(tables)
