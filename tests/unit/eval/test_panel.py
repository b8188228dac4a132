"""The source panel: each source and part on its own row, each contender's cell, the default's target, the worst
source; public sets read in place (a missing one is a note, not a failure)."""

from __future__ import annotations

import json
from pathlib import Path

from eval.datasets import Conversation, LabeledPair, StreamRequest
from eval.learn import LearnConfig
from eval.panel import DEFAULT, Contender, contenders, run_panel
from eval.panel_report import panel_table, to_json, verdict_lines
from eval.sources import Origin, Source, all_sources, split_of
from index.embedding.embedder import HashEmbedder
from index.match.policy import DecisionMode, MatchPolicy

ROOT = Path(__file__).resolve().parents[3]


def pair(pid: str, a: str, b: str, same: bool) -> LabeledPair:
    return LabeledPair(pid, Conversation.of(a), Conversation.of(b), "same" if same else "other", same)


PAIRS = Source("pairs", Origin.REAL, "dev", pairs=(
    pair("1", "How do I reset my password?", "how do i reset my password", True),
    pair("2", "Is the API rate limited?", "Is the API not rate limited?", False),
    pair("3", "How do I pin a message?", "How do I unpin a message?", False),
))
TRACE = Source("trace", Origin.OURS, "test", requests=(
    StreamRequest(1, "reset", "How do I reset my password?"),
    StreamRequest(2, "reset", "how do i reset my password"),
    StreamRequest(3, "limits", "Is the API rate limited?"),
    StreamRequest(4, "limits-negated", "Is the API not rate limited?"),
))
ENTRANTS = (Contender(DEFAULT, MatchPolicy(0.92, stages=("polarity", "values"))),
            Contender("cosine 0.50", MatchPolicy(0.5, decision=DecisionMode.THRESHOLD)))


def test_every_source_gets_a_row_with_each_contender() -> None:
    report = run_panel([PAIRS, TRACE], HashEmbedder(dim=256), ENTRANTS, "guarded")
    assert [(r.source, r.part, r.kind) for r in report.rows] == [("pairs", "dev", "pairs"), ("trace", "test", "trace")]
    pairs = report.rows[0]
    default, loose = pairs.cell(DEFAULT), pairs.cell("cosine 0.50")
    assert default is not None and (default.served, default.correct, default.base) == (1, 1, 1)
    assert loose is not None and loose.wrong >= 1  # the negation, served by a bare cosine
    assert pairs.holds and report.real_sources_hold
    trace = report.rows[1].cell(DEFAULT)
    assert trace is not None and trace.correct == 1 and trace.wrong == 0


def test_the_report_names_the_worst_source_and_a_broken_target() -> None:
    loose_default = (Contender(DEFAULT, MatchPolicy(0.5, decision=DecisionMode.THRESHOLD, stages=())),)
    report = run_panel([PAIRS], HashEmbedder(dim=256), loose_default, "a loose cosine")
    assert not report.real_sources_hold
    lines = verdict_lines(report)
    assert any(line.startswith("worst real-user source: pairs (dev)") for line in lines)
    assert "A REAL-USER SOURCE BREAKS ITS TARGET" in lines
    assert panel_table(report).rows[0][-1] == "NO"
    assert json.loads(to_json(report))["real_sources_hold"] is False


def test_splits_are_stable_and_a_missing_public_set_is_a_note(tmp_path: Path) -> None:
    assert split_of("some question") == split_of("some question") and split_of("x") in ("dev", "test")
    found, missing = all_sources(tmp_path / "nowhere", ROOT / "datasets")
    assert {s.origin for s in found} == {Origin.OURS, Origin.CONVERSATIONS}
    assert len(missing) == 5 and all("not read" in note for note in missing)


def test_the_contenders_are_the_default_the_cosine_baselines_and_vcache() -> None:
    entrants = contenders(LearnConfig(MatchPolicy(0.92, stages=("polarity", "values"))))
    assert [e.name for e in entrants] == [DEFAULT, "cosine 0.85 + rules", "cosine 0.90 + rules",
                                          "cosine 0.95 + rules", "vCache δ=0.02"]
    assert all(e.policy is None or not e.policy.guarded for e in entrants[1:])
    assert entrants[0].live is not None and all(e.live is None for e in entrants[1:])


def test_the_default_replays_a_trace_as_a_live_gateway_with_its_learner_and_labels() -> None:
    """The panel's default on a trace is the product's labelling loop and learner, not a decision at the prior."""
    live = Contender(DEFAULT, MatchPolicy(0.92, stages=("polarity", "values")),
                     live=LearnConfig(MatchPolicy(0.92, stages=("polarity", "values")), answer_variation=True))
    report = run_panel([TRACE], HashEmbedder(dim=256), [live], "guarded")
    cell = report.rows[0].cell(DEFAULT)
    assert cell is not None and cell.base == len(TRACE.requests) and cell.correct == 1 and cell.wrong == 0
