"""Sweep report files: JSON (everything), CSV (one row per stage set and threshold), PNG plot, HTML page."""

from __future__ import annotations

import base64
import csv
import dataclasses
import html
import importlib.util
import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from eval.replay import ReplayReport
from eval.sweep import Sweep, SweepReport
from eval.tables import TableData, choice_line, stage_label, summary_line, sweep_tables

if TYPE_CHECKING:
    from eval.fit import FitReport
    from eval.learn import LearnReport
    from eval.vcache import VCacheReport

# Tableau colours without red, which marks the overall false-hit rate.
KIND_COLORS = ("tab:blue", "tab:orange", "tab:green", "tab:purple", "tab:brown", "tab:pink", "tab:olive", "tab:cyan")
CSV_FIELDS = (
    "stages", "threshold", "hit_rate", "false_hit_rate", "false_hit_upper", "precision", "f1",
    "hits", "false_hits", "same_pairs", "must_not_pairs",
)


def to_json(report: SweepReport | ReplayReport | VCacheReport | LearnReport | FitReport) -> str:
    """The whole report as indented JSON (tuples become lists, missing rates become null)."""
    return json.dumps(dataclasses.asdict(report), indent=2, ensure_ascii=False)


def csv_rows(report: SweepReport) -> list[dict[str, Any]]:
    """Long format: one row per (stage set, threshold), with a `rate_<kind>` column per kind."""
    rows: list[dict[str, Any]] = []
    for sweep in report.sweeps:
        for point in sweep.points:
            row: dict[str, Any] = {
                "stages": stage_label(sweep.stages), "threshold": point.threshold, "hit_rate": point.hit_rate,
                "false_hit_rate": point.false_hit_rate, "false_hit_upper": point.false_hit_upper,
                "precision": point.precision, "f1": point.f1, "hits": point.hits,
                "false_hits": point.false_hits, "same_pairs": sweep.same_pairs,
                "must_not_pairs": sweep.must_not_pairs,
            }
            row.update({f"rate_{k.kind}": k.rate for k in point.kinds})
            rows.append(row)
    return rows


def write_csv(report: SweepReport, path: Path) -> None:
    rows = csv_rows(report)
    fields = list(CSV_FIELDS) + sorted({key for row in rows for key in row} - set(CSV_FIELDS))
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields)
        writer.writeheader()
        writer.writerows({k: "" if v is None else v for k, v in row.items()} for row in rows)


PLOTS_MISSING = "no plot: plotting needs matplotlib, the plots extra: pip install 'deja[plots]'"


def plots_available() -> bool:
    """Whether matplotlib (the `plots` extra) is installed: without it reports are written without their plot."""
    return importlib.util.find_spec("matplotlib") is not None


def plot_png(report: SweepReport, target: float | None = None) -> bytes:
    """Hit rate and per-kind false-hit rates against threshold, one panel per stage set (Agg, no pyplot)."""
    try:
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise ImportError(PLOTS_MISSING) from exc

    panels = max(1, len(report.sweeps))
    fig = Figure(figsize=(6.4 * panels, 4.4), layout="constrained")
    axes = fig.subplots(1, panels, squeeze=False, sharey=True)[0]
    for ax, sweep in zip(axes, report.sweeps, strict=False):
        _plot_sweep(ax, sweep, target)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside right upper", fontsize=8)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110)
    return buffer.getvalue()


def _plot_sweep(ax: Any, sweep: Sweep, target: float | None) -> None:
    xs = [p.threshold for p in sweep.points]
    ax.plot(xs, [_y(p.hit_rate) for p in sweep.points], color="black", linewidth=2.5, label="hit rate")
    kinds = [k.kind for k in sweep.points[0].kinds if not k.same_answer] if sweep.points else []
    for index, kind in enumerate(kinds):
        ys = [_y(next(k.rate for k in p.kinds if k.kind == kind and not k.same_answer)) for p in sweep.points]
        ax.plot(xs, ys, linewidth=1.3, color=KIND_COLORS[index % len(KIND_COLORS)], label=f"false hit: {kind}")
    overall = [_y(p.false_hit_rate) for p in sweep.points]
    ax.plot(xs, overall, color="red", linewidth=2, label="false hit: all")
    ax.plot(xs, [100 * p.false_hit_upper for p in sweep.points], color="red", linestyle=":",
            label="false hit: upper bound")
    if target is not None:
        ax.axhline(100 * target, color="grey", linestyle="--", linewidth=1, label="target")
    ax.set_title(f"stages: {stage_label(sweep.stages)}")
    ax.set_xlabel("min cosine similarity")
    ax.set_ylabel("% of pairs")
    ax.set_ylim(-2, 102)
    ax.grid(alpha=0.3)


def _y(value: float | None) -> float:
    return float("nan") if value is None else 100.0 * value


def html_page(report: SweepReport, png: bytes | None) -> str:
    """One self-contained page: summary, threshold choices, tables and the plot inlined as base64 (a line
    naming the plots extra instead when `png` is None)."""
    body = [f"<h1>Deja threshold sweep</h1><p>{html.escape(summary_line(report))}</p>"]
    body += [f"<p><b>{html.escape(choice_line(choice))}</b></p>" for choice in report.choices]
    body += [html_table(table) for table in sweep_tables(report)]
    if png is None:
        body.append(f"<p>{html.escape(PLOTS_MISSING)}</p>")
    else:
        encoded = base64.b64encode(png).decode("ascii")
        body.append(f'<img alt="hit and false-hit rates by threshold" src="data:image/png;base64,{encoded}">')
    style = ("body{font-family:system-ui,sans-serif;margin:2em;max-width:80em}"
             "table{border-collapse:collapse;margin:1em 0}th,td{border:1px solid #ccc;padding:2px 8px}"
             "td{text-align:right}td:first-child{text-align:left}img{max-width:100%}")
    return ("<!doctype html><html><head><meta charset=\"utf-8\"><title>Deja sweep</title>"
            f"<style>{style}</style></head><body>{''.join(body)}</body></html>\n")


def html_table(table: TableData) -> str:
    head = "".join(f"<th>{_cell(h)}</th>" for h in table.headers)
    rows = "".join("<tr>" + "".join(f"<td>{_cell(c)}</td>" for c in row) + "</tr>" for row in table.rows)
    return f"<table><caption>{html.escape(table.title)}</caption><tr>{head}</tr>{rows}</table>"


def _cell(text: str) -> str:
    return html.escape(text).replace("\n", "<br>")


def write_outputs(report: SweepReport, out_dir: Path, target: float | None = None) -> Sequence[Path]:
    """Write sweep.csv, sweep.json, sweep.png and sweep.html into `out_dir` (created if needed); without the plots
    extra, no sweep.png (the page says why)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    csv_path, json_path, png_path, html_path = (out_dir / f"sweep.{ext}" for ext in ("csv", "json", "png", "html"))
    write_csv(report, csv_path)
    json_path.write_text(to_json(report) + "\n", encoding="utf-8")
    png = plot_png(report, target) if plots_available() else None
    if png is not None:
        png_path.write_bytes(png)
    html_path.write_text(html_page(report, png), encoding="utf-8")
    return [csv_path, json_path, *([png_path] if png is not None else []), html_path]
