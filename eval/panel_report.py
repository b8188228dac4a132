"""The source panel as tables (terminal and HTML), a PNG of wrong / served per source, a JSON record, and the
one-line verdicts (the worst source, whether every real source holds its target)."""

from __future__ import annotations

import base64
import dataclasses
import html
import io
import json
from pathlib import Path
from typing import Any

from eval.panel import DEFAULT, PanelReport, PanelRow
from eval.report import PLOTS_MISSING, html_table, plots_available
from eval.tables import TableData, pct


def _cell_text(row: PanelRow, contender: str) -> str:
    cell = row.cell(contender)
    if cell is None:
        return "–"
    return f"{pct(cell.correct_rate)} · {pct(cell.wrong_per_served)} (≤{pct(cell.upper)})"


def panel_table(report: PanelReport) -> TableData:
    """One row per source and part: for each contender, correct (of requests, or of same-answer pairs) and wrong /
    served with its 95% upper bound; the default's target and whether it holds."""
    headers = ("source", "part", "kind", "n", "target", *report.contenders, "holds")
    rows = []
    for row in report.rows:
        cells = tuple(_cell_text(row, name) for name in report.contenders)
        rows.append((f"{row.source} [{row.origin}]", row.part, row.kind, str(row.size), pct(row.target), *cells,
                     "yes" if row.holds else "NO"))
    return TableData("correct · wrong ÷ served (95% upper bound); correct is of all requests (trace) or of the "
                     "same-answer pairs (pairs)", headers, tuple(rows))


def verdict_lines(report: PanelReport) -> list[str]:
    """The worst real source, the worst source of all, and whether every real source holds."""
    lines = [f"default: {report.default}"]
    for label, origin in (("worst real-user source", "real users"), ("worst source", None)):
        row = report.worst(origin)
        cell = None if row is None else row.cell(DEFAULT)
        if row is not None and cell is not None:
            lines.append(f"{label}: {row.source} ({row.part}) wrong ÷ served {pct(cell.wrong_per_served)} "
                         f"(upper {pct(cell.upper)}) against {pct(row.target)}, correct {pct(cell.correct_rate)}")
    lines.append("every real-user source holds its target" if report.real_sources_hold
                 else "A REAL-USER SOURCE BREAKS ITS TARGET")
    lines += list(report.notes)
    return lines


def to_json(report: PanelReport) -> str:
    def row(r: PanelRow) -> dict[str, Any]:
        out = dataclasses.asdict(r)
        out["cells"] = [{**dataclasses.asdict(c), "wrong": c.wrong, "correct_rate": c.correct_rate,
                         "wrong_per_served": c.wrong_per_served, "upper": c.upper} for c in r.cells]
        out["holds"] = r.holds
        return out

    return json.dumps({"default": report.default, "contenders": report.contenders,
                       "rows": [row(r) for r in report.rows], "notes": report.notes,
                       "real_sources_hold": report.real_sources_hold}, indent=1, ensure_ascii=False)


def plot_png(report: PanelReport) -> bytes:
    """Bars of wrong / served per source (each contender a bar; the target a tick), and correct beside it."""
    try:
        import matplotlib
    except ImportError as exc:
        raise ImportError(PLOTS_MISSING) from exc

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [f"{r.source} ({r.part})" for r in report.rows]
    fig, axes = plt.subplots(1, 2, figsize=(16, max(4.0, 0.42 * len(labels) + 1.5)), sharey=True)
    height = 0.8 / max(1, len(report.contenders))
    for k, name in enumerate(report.contenders):
        ys = [i + k * height for i in range(len(labels))]
        wrong = [_pct(r.cell(name), "wrong") for r in report.rows]
        correct = [_pct(r.cell(name), "correct") for r in report.rows]
        axes[0].barh(ys, wrong, height, label=name)
        axes[1].barh(ys, correct, height, label=name)
    for i, row in enumerate(report.rows):
        axes[0].plot([100 * row.target] * 2, [i - 0.1, i + 0.9], color="black", linewidth=1.5)
    axes[0].set_yticks([i + 0.4 for i in range(len(labels))], labels)
    axes[0].invert_yaxis()
    axes[0].set_xlabel("wrong ÷ served, % (black tick: the source's target)")
    axes[1].set_xlabel("correct, % of requests (trace) or of same-answer pairs (pairs)")
    axes[1].legend(loc="lower right", fontsize=8)
    for ax in axes:
        ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90)
    plt.close(fig)
    return buffer.getvalue()


def _pct(cell: Any, what: str) -> float:
    if cell is None:
        return 0.0
    value = cell.wrong_per_served if what == "wrong" else cell.correct_rate
    return 0.0 if value is None else 100.0 * value


def html_page(report: PanelReport, png: bytes | None) -> str:
    body = ["<h1>Deja source panel</h1>"]
    body += [f"<p>{html.escape(line)}</p>" for line in verdict_lines(report)]
    body.append(html_table(panel_table(report)))
    if png is None:
        body.append(f"<p>{html.escape(PLOTS_MISSING)}</p>")
    else:
        encoded = base64.b64encode(png).decode("ascii")
        body.append(f'<img alt="wrong ÷ served and correct per source" src="data:image/png;base64,{encoded}">')
    style = ("body{font-family:system-ui,sans-serif;margin:2em}table{border-collapse:collapse;margin:1em 0;"
             "font-size:90%}th,td{border:1px solid #ccc;padding:2px 6px}td{text-align:right}"
             "td:first-child{text-align:left}img{max-width:100%}")
    return ("<!doctype html><html><head><meta charset=\"utf-8\"><title>Deja source panel</title>"
            f"<style>{style}</style></head><body>{''.join(body)}</body></html>\n")


def write_outputs(report: PanelReport, out_dir: Path) -> list[Path]:
    """panel.json, panel.png and panel.html in `out_dir` (created if needed); without the plots extra, no
    panel.png (the page says why)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    png = plot_png(report) if plots_available() else None
    json_path, png_path, html_path = out_dir / "panel.json", out_dir / "panel.png", out_dir / "panel.html"
    json_path.write_text(to_json(report) + "\n", encoding="utf-8")
    if png is not None:
        png_path.write_bytes(png)
    html_path.write_text(html_page(report, png), encoding="utf-8")
    return [json_path, *([png_path] if png is not None else []), html_path]
