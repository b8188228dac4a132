"""`eval sweep --traffic` on a small SQLite decision log built in a temp dir; expectations computed by hand.

The log (thresholds 0.80, 0.90, 0.95; labels resolved human > feedback > audit > shadow):

    ns-a  A1 0.97 right (audit)   A2 0.93 wrong (shadow says right, human says wrong)
          A3 0.85 wrong (audit)   A4 0.60 wrong (shadow)
    ns-b  B1 0.91 right (feedback)  B2 0.82 wrong (shadow)
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from eval.cli import app
from eval.sweep import SweepConfig
from eval.traffic import ALL_NAMESPACES, SAME_ANSWER_KIND, decision_log, scored_decisions, traffic_report
from index.match.outcome import Reason
from index.storage.decision_log import DecisionLog, DecisionRecord, Label, LabelSource
from index.storage.entries import make_engine
from index.storage.schema import metadata
from support.fakes import WordVeto

PAIRS = str(Path(__file__).parent / "fixtures" / "pairs.jsonl")
THRESHOLDS = "0.8,0.9,0.95"
# Wilson 95% upper bounds with zero false hits: 4 must-not -> 0.490, 3 -> 0.562, 1 -> 0.793.
TARGET = "0.6"

DECISIONS = [  # request id, namespace, similarity, [(source, correct), ...]
    ("A1", "ns-a", 0.97, [(LabelSource.AUDIT, True)]),
    ("A2", "ns-a", 0.93, [(LabelSource.SHADOW, True), (LabelSource.HUMAN, False)]),
    ("A3", "ns-a", 0.85, [(LabelSource.AUDIT, False)]),
    ("A4", "ns-a", 0.60, [(LabelSource.SHADOW, False)]),
    ("B1", "ns-b", 0.91, [(LabelSource.FEEDBACK, True)]),
    ("B2", "ns-b", 0.82, [(LabelSource.SHADOW, False)]),
]


def _record(request_id: str, namespace: str, similarity: float, prompt: str | None = None,
            vetoed_by: str | None = None) -> DecisionRecord:
    reason = Reason.HIT if vetoed_by is None else Reason.VETOED
    return DecisionRecord(request_id, namespace, "m", prompt or f"question {request_id}", 1,
                          f"cached question for {request_id}", similarity, 0.7, (), "miss", reason, vetoed_by, 1.0)


def _log(path: Path, decisions: list[tuple[DecisionRecord, list[tuple[LabelSource, bool]]]]) -> str:
    url = f"sqlite:///{path}"
    engine = make_engine(url)
    metadata.create_all(engine)
    log = DecisionLog(engine)
    log.record([record for record, _ in decisions])
    for record, labels in decisions:
        for at, (source, correct) in enumerate(labels):
            log.label(Label(record.request_id, source, correct, float(at)))
    engine.dispose()
    return url


@pytest.fixture
def url(tmp_path: Path) -> str:
    return _log(tmp_path / "deja.db", [(_record(rid, ns, sim), labels) for rid, ns, sim, labels in DECISIONS])


def _run(*args: str, env: dict[str, str | None] | None = None) -> tuple[int, str, str]:
    # Threshold mode: --apply stores cosine thresholds, what that mode serves by (judge mode refuses --apply).
    result = CliRunner().invoke(app, ["sweep", "--traffic", "--stages", "none", "--threshold", THRESHOLDS,
                                      "--decision", "threshold", *args], env=env)
    return result.exit_code, result.stdout, result.stderr


def _sweeps(out: str) -> dict[str, Any]:
    return {s["namespace"]: s for s in json.loads(out)["sweeps"]}


def _stored(url: str) -> dict[str, tuple[float, int]]:
    with decision_log(url) as log:
        return log.thresholds()


def test_traffic_sweep_scores_every_namespace_and_all_together(url: str) -> None:
    code, out, err = _run("--database-url", url, "--max-false-hit-rate", TARGET, "--json")
    assert code == 0, err
    sweeps = _sweeps(out)
    assert list(sweeps) == [ALL_NAMESPACES, "ns-a", "ns-b"]
    overall = sweeps[ALL_NAMESPACES]["report"]
    assert (overall["same_pairs"], overall["must_not_pairs"]) == (2, 4)  # A2 is wrong: the human label wins
    points = {p["threshold"]: p for p in overall["sweeps"][0]["points"]}
    assert [(points[t]["hits"], points[t]["false_hits"]) for t in (0.8, 0.9, 0.95)] == [(2, 3), (2, 1), (1, 0)]
    assert points[0.95]["false_hit_upper"] == pytest.approx(3.8415 / 7.8415, abs=1e-4)
    assert [sweeps[ns]["report"]["choices"][0]["threshold"] for ns in sweeps] == [0.95, 0.95, None]
    assert sweeps["ns-a"]["sources"] == [{"source": "human", "correct": 0, "wrong": 1},
                                         {"source": "audit", "correct": 1, "wrong": 1},
                                         {"source": "shadow", "correct": 0, "wrong": 1}]


def test_table_output_says_where_labels_came_from(url: str) -> None:
    code, out, _ = _run("--database-url", url, "--max-false-hit-rate", TARGET)
    assert code == 0
    assert "traffic, all namespaces: 6 pairs (2 same-answer, 4 must-not)" in out
    assert "traffic, namespace ns-b: 2 pairs (1 same-answer, 1 must-not)" in out
    assert "labels: 2 — feedback 1 (0 wrong) · shadow 1 (1 wrong)" in out
    assert "stages none: choose min similarity 0.95" in out


def test_apply_stores_each_chosen_threshold_and_nothing_where_none_qualifies(url: str) -> None:
    with decision_log(url) as log:
        log.set_threshold("ns-b", 0.88, label_count=9, at=0.0)
    code, out, err = _run("--database-url", url, "--max-false-hit-rate", TARGET, "--apply")
    assert code == 0, err
    assert out.splitlines()[-3:] == [
        "stored min similarity 0.95 for deployment default (*) (6 labels)",
        "stored min similarity 0.95 for namespace ns-a (4 labels)",
        "nothing stored for namespace ns-b: no threshold keeps the false-hit upper bound ≤ 60% (2 labels); "
        "0.88 stays stored",
    ]
    assert _stored(url) == {"*": (0.95, 6), "ns-a": (0.95, 4), "ns-b": (0.88, 9)}


def test_apply_one_namespace_leaves_the_default_alone(url: str) -> None:
    code, out, _ = _run("--database-url", url, "--namespace", "ns-a", "--max-false-hit-rate", TARGET, "--apply",
                        "--json")
    assert code == 0
    data = json.loads(out)
    assert [s["namespace"] for s in data["sweeps"]] == ["ns-a"]
    assert data["applied"] == [{"namespace": "ns-a", "min_similarity": 0.95, "labels": 4, "previous": None}]
    assert _stored(url) == {"ns-a": (0.95, 4)}


def test_when_nothing_qualifies_apply_says_so_in_one_line_and_exits_0(url: str) -> None:
    code, out, _ = _run("--database-url", url, "--max-false-hit-rate", "0.01", "--apply", "--namespace", "ns-b")
    assert code == 0
    assert [line for line in out.splitlines() if line.startswith(("stored", "nothing"))] == [
        "nothing stored for namespace ns-b: no threshold keeps the false-hit upper bound ≤ 1% (2 labels)"]
    assert _stored(url) == {}


def test_stages_rerun_on_logged_pairs_and_unrerunnable_vetoes_stay(tmp_path: Path) -> None:
    url = _log(tmp_path / "deja.db", [
        (_record("N1", "ns", 0.96, prompt="is it not refundable"), [(LabelSource.AUDIT, False)]),
        (_record("C1", "ns", 0.99, vetoed_by="polarity@context"), [(LabelSource.SHADOW, False)]),
        (_record("P1", "ns", 0.98), [(LabelSource.AUDIT, True)]),
    ])
    with decision_log(url) as log:
        labeled = log.labeled()
    config = SweepConfig((0.95,), ((), (WordVeto("polarity", "not"),)))
    (overall, _) = traffic_report(labeled, config, url).sweeps
    without, with_stage = (sweep.points[0] for sweep in overall.report.sweeps)
    assert (without.hits, without.false_hits) == (1, 1)  # C1's context veto holds at every threshold
    assert (with_stage.hits, with_stage.false_hits) == (1, 0)  # the stage catches N1, as in the gateway
    assert overall.fixed_vetoes == 1


def test_a_logged_decision_reads_as_candidate_cached_prompt_arriving(url: str) -> None:
    with decision_log(url) as log:
        (a1, *_) = scored_decisions(log.labeled("ns-a"))
    assert (a1.pair.a.prompt, a1.pair.b.prompt, a1.similarity) == ("cached question for A1", "question A1", 0.97)
    assert (a1.pair.kind, a1.pair.same_answer, a1.pair.domain) == (SAME_ANSWER_KIND, True, "ns-a")


def test_out_writes_reports_overall_and_per_namespace(url: str, tmp_path: Path) -> None:
    out_dir = tmp_path / "report"
    code, _, err = _run("--database-url", url, "--out", str(out_dir))
    assert code == 0, err
    for folder in (out_dir, out_dir / "ns-a", out_dir / "ns-b"):
        assert sorted(p.name for p in folder.glob("sweep.*")) == ["sweep.csv", "sweep.html", "sweep.json",
                                                                   "sweep.png"]
    assert json.loads((out_dir / "ns-b" / "sweep.json").read_text())["pairs"] == 2


def test_database_url_comes_from_the_environment_like_the_gateways(url: str, tmp_path: Path) -> None:
    code, out, _ = _run("--json", env={"DEJA_DATABASE_URL": url})
    assert code == 0 and len(json.loads(out)["sweeps"]) == 3
    code, out, _ = _run("--json", env={"DEJA_DATABASE_URL": None, "DEJA_DATA_DIR": str(tmp_path)})
    assert code == 0 and json.loads(out)["database"] == f"sqlite:///{tmp_path / 'deja.db'}"


def test_missing_log_exits_1_with_one_line(tmp_path: Path) -> None:
    code, out, err = _run("--database-url", f"sqlite:///{tmp_path / 'none.db'}")
    assert code == 1 and out == ""
    assert err.strip().splitlines() == [
        f"error: cannot use the decision log at sqlite:///{tmp_path / 'none.db'}: no such file: "
        f"{tmp_path / 'none.db'}"]
    assert not (tmp_path / "none.db").exists()


def test_an_empty_log_chooses_nothing_and_says_why(tmp_path: Path) -> None:
    url = _log(tmp_path / "deja.db", [])
    code, out, err = _run("--database-url", url, "--max-false-hit-rate", "0.05", "--apply")
    assert code == 0
    assert "no labelled decisions yet" in err
    assert out.splitlines()[-1].startswith("nothing stored for deployment default (*)")


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(["--apply"], id="apply-without-target"),
        pytest.param(["--dataset", PAIRS], id="dataset-and-traffic"),
    ],
)
def test_usage_errors_exit_2(url: str, args: list[str]) -> None:
    code, _, _ = _run("--database-url", url, *args)
    assert code == 2


def test_apply_and_namespace_need_traffic() -> None:
    for option in (["--apply"], ["--namespace", "ns-a"]):
        result = CliRunner().invoke(app, ["sweep", "--dataset", PAIRS, "--embedder", "hash", *option])
        assert result.exit_code == 2


def test_api_filter_sweeps_only_that_apis_decisions(tmp_path: Path) -> None:
    def record(rid: str, api: str, similarity: float) -> DecisionRecord:
        return dataclasses.replace(_record(rid, "ns", similarity), api=api)

    url = _log(tmp_path / "deja.db", [
        (record("C1", "chat", 0.97), [(LabelSource.AUDIT, True)]),
        (record("M1", "messages", 0.96), [(LabelSource.AUDIT, True)]),
        (record("M2", "messages", 0.91), [(LabelSource.SHADOW, False)]),
        (record("R1", "responses", 0.93), [(LabelSource.FEEDBACK, True)]),
    ])
    code, out, err = _run("--database-url", url, "--api", "messages", "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["api"] == "messages"
    assert _sweeps(out)[ALL_NAMESPACES]["labels"] == 2
    code, out, _ = _run("--database-url", url, "--json")
    assert code == 0 and json.loads(out)["api"] is None and _sweeps(out)[ALL_NAMESPACES]["labels"] == 4


@pytest.mark.parametrize("args", [
    pytest.param(["--api", "messages", "--apply", "--max-false-hit-rate", "0.5"], id="api-with-apply"),
])
def test_api_filter_cannot_choose_thresholds_for_every_api(url: str, args: list[str]) -> None:
    code, _, _ = _run("--database-url", url, *args)
    assert code == 2
