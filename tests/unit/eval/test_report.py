"""Report files: JSON round-trips, CSV rows per threshold, a real PNG, a self-contained HTML page."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from eval.datasets import Conversation, LabeledPair
from eval.report import html_page, plot_png, to_json, write_outputs
from eval.sweep import ScoredPair, SweepConfig, SweepReport, build_report
from eval.tables import choice_line, stage_table, sweep_table
from index.guards.stages import StepResult


class NotVeto:
    name = "polarity"

    def check(self, query: str, cached: str) -> StepResult:
        return StepResult(self.name, ("not" in query.split()) == ("not" in cached.split()))


def _report(target: float | None = 0.7) -> SweepReport:
    def pair(pair_id: str, kind: str, same: bool, b: str) -> LabeledPair:
        return LabeledPair(pair_id, Conversation.of("is it refundable"), Conversation.of(b), kind, same)

    scored = (
        ScoredPair(pair("P1", "paraphrase", True, "can I get a refund"), 0.91),
        ScoredPair(pair("N1", "negation", False, "is it not refundable"), 0.95),
        ScoredPair(pair("U1", "unrelated", False, "capital of France"), 0.2),
    )
    config = SweepConfig((0.8, 0.9, 0.95), ((), (NotVeto(),)), max_false_hit_rate=target)
    return build_report("toy.jsonl", "fake", scored, config)


def test_json_holds_the_whole_report() -> None:
    data = json.loads(to_json(_report()))
    assert data["dataset"] == "toy.jsonl"
    assert [s["stages"] for s in data["sweeps"]] == [[], ["polarity"]]
    point = data["sweeps"][1]["points"][0]
    assert point["threshold"] == 0.8 and point["false_hits"] == 0
    assert point["vetoes"][0]["caught"] == 1
    assert data["choices"][1]["threshold"] == 0.9  # ties go to the higher threshold


def test_sweep_table_has_a_row_per_threshold_and_a_column_per_must_not_kind() -> None:
    table = sweep_table(_report().sweeps[0])
    assert table.headers[:2] == ("min sim", "hit rate")
    assert "false hit\nnegation" in table.headers and "false hit\nunrelated" in table.headers
    assert [row[0] for row in table.rows] == ["0.80", "0.90", "0.95"]
    assert table.rows[0][1] == "100.0%"


def test_stage_table_counts_catches_at_the_lowest_and_the_chosen_threshold() -> None:
    table = stage_table(_report())
    assert table is not None
    assert table.headers[:3] == ("min sim", "stage", "must-not\ncaught")
    assert table.rows == (
        ("0.80", "polarity", "1/2", "1/1", "0/1", "0/1"),
        ("0.90", "polarity", "1/2", "1/1", "0/1", "0/1"),
    )


def test_choice_line_says_when_none_qualifies() -> None:
    report = _report(target=0.01)
    line = choice_line(report.choices[0])
    assert "no threshold" in line and "needs ≥ 381" in line
    assert "\n" not in line


def test_png_is_a_png() -> None:
    assert plot_png(_report(), 0.05).startswith(b"\x89PNG\r\n\x1a\n")


def test_html_is_self_contained_with_table_and_plot() -> None:
    page = html_page(_report(), b"\x89PNG")
    assert "<table>" in page and "false hit<br>negation" in page
    assert 'src="data:image/png;base64,' in page
    assert "http" not in page.replace("http-equiv", "")


def test_write_outputs_writes_four_parseable_files(tmp_path: Path) -> None:
    paths = write_outputs(_report(), tmp_path / "out", 0.5)
    assert [p.name for p in paths] == ["sweep.csv", "sweep.json", "sweep.png", "sweep.html"]
    with paths[0].open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 6
    assert {row["stages"] for row in rows} == {"none", "polarity"}
    assert "rate_negation" in rows[0]
    assert json.loads(paths[1].read_text())["pairs"] == 3
    assert paths[2].read_bytes()[:4] == b"\x89PNG"
    assert "<table>" in paths[3].read_text()
