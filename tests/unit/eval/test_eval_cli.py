"""The `eval` CLI through typer's CliRunner, with the hash embedder so no model is loaded."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from eval.cli import app

FIXTURES = Path(__file__).parent / "fixtures"
PAIRS = str(FIXTURES / "pairs.jsonl")
FAST = ["--embedder", "hash", "--decision", "threshold", "--threshold", "0.5:0.9:0.1"]


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_sweep_prints_a_table_per_threshold() -> None:
    code, out, err = _run("sweep", "--dataset", PAIRS, "--stages", "none", *FAST)
    assert code == 0, err
    assert "pairs.jsonl: 6 pairs (2 same-answer, 4 must-not)" in out
    assert "min sim" in out and "negation" in out and "ROC-AUC" in out
    assert [line.split()[0] for line in out.splitlines() if line.strip().startswith("0.")] == [
        "0.50", "0.60", "0.70", "0.80", "0.90"]
    assert "embedding" in err  # progress goes to stderr


def test_sweep_json_parses_and_stdout_holds_nothing_else() -> None:
    code, out, _ = _run("sweep", "--dataset", PAIRS, "--stages", "none", "--json", *FAST)
    assert code == 0
    data = json.loads(out)
    assert len(data["sweeps"][0]["points"]) == 5


def test_sweep_picks_a_threshold_with_a_confidence_bound() -> None:
    code, out, _ = _run("sweep", "--dataset", PAIRS, "--stages", "none", "--max-false-hit-rate", "0.01", *FAST)
    assert code == 0
    (line,) = [line for line in out.splitlines() if line.startswith("stages none:")]
    assert "no threshold keeps the 95% upper bound" in line and "needs ≥ 381" in line


def test_sweep_compare_shows_both_sweeps_and_stage_catches() -> None:
    code, out, _ = _run("sweep", "--dataset", PAIRS, "--compare", *FAST)
    assert code == 0
    assert "stages: none" in out and "stages: polarity,values" in out
    assert "caught by stage" in out
    assert [line.split()[:2] for line in out.splitlines() if "polarity " in line] == [["0.50", "polarity"]]


def test_default_stages_are_the_gateways() -> None:
    code, out, _ = _run("sweep", "--dataset", PAIRS, "--json", *FAST)
    assert code == 0
    assert json.loads(out)["sweeps"][0]["stages"] == ["polarity", "values"]


def test_sweep_out_writes_csv_json_png_html(tmp_path: Path) -> None:
    out_dir = tmp_path / "report"
    code, _, err = _run("sweep", "--dataset", PAIRS, "--stages", "none", "--out", str(out_dir), *FAST)
    assert code == 0, err
    with (out_dir / "sweep.csv").open(newline="") as handle:
        assert len(list(csv.DictReader(handle))) == 5
    assert json.loads((out_dir / "sweep.json").read_text())["pairs"] == 6
    assert (out_dir / "sweep.png").read_bytes().startswith(b"\x89PNG")
    page = (out_dir / "sweep.html").read_text()
    assert "<table>" in page and "false hit<br>negation" in page


def test_sweep_reads_tsv() -> None:
    code, out, _ = _run("sweep", "--dataset", str(FIXTURES / "qqp.tsv"), "--stages", "none", "--format", "tsv",
                        *FAST)
    assert code == 0
    assert "qqp.tsv: 2 pairs" in out


def test_bad_dataset_line_exits_1_with_one_line() -> None:
    code, out, err = _run("sweep", "--dataset", str(FIXTURES / "bad.jsonl"), "--stages", "none", *FAST)
    assert code == 1
    assert out == ""
    assert err.strip().splitlines() == [f"error: {FIXTURES / 'bad.jsonl'}:2: label must be 0/1 or true/false, "
                                        "got 'maybe'"]


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(["--stages", "vibes"], id="unknown-stage"),
        pytest.param(["--threshold", "1.5"], id="threshold-out-of-range"),
        pytest.param(["--max-false-hit-rate", "2"], id="target-out-of-range"),
    ],
)
def test_usage_errors_exit_2(args: list[str]) -> None:
    code, _, _ = _run("sweep", "--dataset", PAIRS, "--embedder", "hash", *args)
    assert code == 2


def test_replay_prints_a_row_per_threshold() -> None:
    stream = str(FIXTURES / "stream.jsonl")
    code, out, _ = _run("replay", "--stream", stream, "--stages", "none", "--embedder", "hash", "--threshold",
                        "0.5,0.9")
    assert code == 0
    assert "stream.jsonl: 6 requests, 3 intents" in out
    assert "wrong" in out and "oracle" in out
    assert [line.split()[0] for line in out.splitlines() if line.strip().startswith("0.")] == ["0.50", "0.90"]


def test_replay_json_reports_vetoes_per_stage() -> None:
    code, out, _ = _run("replay", "--stream", str(FIXTURES / "stream.jsonl"), "--embedder", "hash",
                        "--decision", "threshold", "--threshold", "0.5", "--json")
    assert code == 0
    row = json.loads(out)["rows"][0]
    assert [v["stage"] for v in row["vetoes"]] == ["polarity", "values"]
    assert row["requests"] == 6


def test_replay_of_the_default_decision_prints_a_row_per_threshold() -> None:
    code, out, err = _run("replay", "--stream", str(FIXTURES / "stream.jsonl"), "--embedder", "hash",
                          "--decision", "guarded", "--threshold", "0.5,0.9", "--json")
    assert code == 0, err
    rows = json.loads(out)["rows"]
    assert [row["threshold"] for row in rows] == [0.5, 0.9] and all(row["requests"] == 6 for row in rows)


@pytest.mark.parametrize("command", ["sweep", "replay"])
def test_the_retired_judge_mode_is_a_usage_error(command: str) -> None:
    source = ("--dataset", PAIRS) if command == "sweep" else ("--stream", str(FIXTURES / "stream.jsonl"))
    code, _, _ = _run(command, *source, "--embedder", "hash", "--decision", "judge")
    assert code == 2


def test_replay_of_one_part_keeps_only_that_split(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"seq": 1, "intent": "a", "prompt": "how do I freeze a card", "part": "dev"}\n'
                     '{"seq": 2, "intent": "b", "prompt": "how do I thaw a card", "part": "test"}\n'
                     '{"seq": 3, "intent": "b", "prompt": "how do I thaw a card", "part": "test"}\n')
    code, out, _ = _run("replay", "--stream", str(trace), "--part", "test", "--stages", "none", "--embedder",
                        "hash", "--threshold", "0.9", "--json")
    assert code == 0
    report = json.loads(out)
    assert report["stream"] == "t.jsonl (test)" and report["requests"] == 2
    assert report["rows"][0]["exact_hits"] == 1


def test_replay_of_a_part_the_trace_lacks_fails_in_one_line() -> None:
    code, _, err = _run("replay", "--stream", str(FIXTURES / "stream.jsonl"), "--part", "test", "--embedder", "hash")
    assert code == 1 and "no requests in part 'test'" in err and len(err.strip().splitlines()) == 1


def test_replay_of_clusters_treats_each_cluster_as_an_intent(tmp_path: Path) -> None:
    clusters = tmp_path / "c.json"
    clusters.write_text('[["what is x", "what is x?", "x meaning"], ["install y"]]')
    code, out, _ = _run("replay", "--clusters", str(clusters), "--stages", "none", "--embedder", "hash",
                        "--threshold", "0.99", "--json")
    assert code == 0
    report = json.loads(out)
    assert (report["requests"], report["intents"]) == (4, 2)
    assert report["rows"][0]["oracle"] == 2


def test_replay_needs_exactly_one_source() -> None:
    code, _, _ = _run("replay", "--embedder", "hash")
    assert code == 2


def test_replay_vcache_baseline_reports_a_row_per_budget() -> None:
    code, out, _ = _run("replay", "--stream", str(FIXTURES / "stream.jsonl"), "--decision", "vcache", "--budget",
                        "0.05,0.02", "--embedder", "hash", "--json")
    assert code == 0
    report = json.loads(out)
    assert report["decision"] == "vcache" and [row["delta"] for row in report["rows"]] == [0.02, 0.05]
    row = report["rows"][0]
    assert row["requests"] == 6 and row["exact_hits"] == 2  # the two byte-identical repeats


@pytest.mark.parametrize("budget", ["0", "1.5", "x"], ids=["zero", "above-one", "not-a-number"])
def test_replay_vcache_refuses_a_budget_outside_zero_one(budget: str) -> None:
    code, _, _ = _run("replay", "--stream", str(FIXTURES / "stream.jsonl"), "--decision", "vcache", "--budget",
                      budget, "--embedder", "hash")
    assert code == 2


def test_replay_learn_json_has_the_learning_replay_beside_fixed_thresholds_in_halves() -> None:
    code, out, err = _run("replay", "--stream", str(FIXTURES / "stream.jsonl"), "--learn", "--compare", "0.85,0.92",
                          "--embedder", "hash", "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["learning"]["learned"] is True
    assert [row["prior"] for row in report["fixed"]] == [0.85, 0.92]
    for half in ("first", "second"):
        assert set(report["learning"][half]) >= {"requests", "served", "correct", "wrong_per_served"}
    assert report["learning"]["first"]["requests"] + report["learning"]["second"]["requests"] == 6


def test_a_threshold_range_sweeps_thresholds_at_the_default_decision(tmp_path: Path) -> None:
    out_dir = tmp_path / "report"
    code, out, err = _run("sweep", "--dataset", PAIRS, "--embedder", "hash", "--threshold", "0.60:0.99:0.01",
                          "--out", str(out_dir))
    assert code == 0, err
    assert json.loads((out_dir / "sweep.json").read_text())["sweeps"][0]["points"][0]["threshold"] == 0.6
    assert (out_dir / "sweep.png").read_bytes().startswith(b"\x89PNG") and (out_dir / "sweep.html").exists()
    assert "guarded rule" in out and "eval panel" in out  # the default decision named beside the thresholds


def test_a_sweep_writes_its_report_files_by_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, err = _run("sweep", "--dataset", PAIRS, "--embedder", "hash", "--threshold", "0.6:0.9:0.1")
    assert code == 0, err
    assert {p.name for p in (tmp_path / "reports" / "sweep-pairs").iterdir()} >= {"sweep.json", "sweep.png",
                                                                                   "sweep.html"}
