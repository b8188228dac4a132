"""The source panel: each source and part on its own row, each contender's cell, the default's target, the worst
source; public sets read in place (a missing one is a note, not a failure)."""

from __future__ import annotations

import json
from pathlib import Path

from eval.datasets import Conversation, LabeledPair, StreamRequest
from eval.panel import DEFAULT, Contender, contenders, run_panel, veto_columns, veto_name
from eval.panel_report import panel_table, to_json, verdict_lines, veto_table
from eval.sources import Origin, Source, all_sources, split_of
from index.embedding.embedder import HashEmbedder
from index.match.policy import DEFAULT_VETO_BELOW, LEARNED_VETO_BELOW, DecisionMode, MatchPolicy
from support.judges import FixedJudge

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


def test_the_guarded_rule_gets_veto_on_and_off_columns_at_the_default_and_below() -> None:
    entrants = contenders(MatchPolicy(0.92, stages=("polarity", "values")), FixedJudge(0.01), None)
    names = [e.name for e in entrants]
    assert names[0] == DEFAULT and DEFAULT_VETO_BELOW == 0.0
    assert entrants[0].judge is None  # the default reads no learned score
    for t in (0.92, 0.88, 0.85):
        on, off = (next(e for e in entrants if e.name == veto_name(t, v)) for v in (True, False))
        assert on.policy is not None and on.policy.veto_below == LEARNED_VETO_BELOW and on.judge is not None
        assert off.policy is not None and off.policy.veto_below == 0.0 and off.judge is None
        assert on.policy.min_similarity == off.policy.min_similarity == t


def test_the_veto_table_shows_what_the_veto_costs_per_source() -> None:
    synonyms = Source("synonyms", Origin.REAL, "dev", pairs=(
        pair("1", "What are the signs of dehydration?", "What are the symptoms of dehydration?", True),))
    # At cosine >= -1 every pair reaches the veto; a judge at P 0.01 vetoes the paraphrase.
    entrants = veto_columns(MatchPolicy(-1.0, stages=("polarity", "values")), FixedJudge(0.01), None, 0.6)
    report = run_panel([synonyms], HashEmbedder(dim=256), entrants, "guarded")
    table = veto_table(report)
    assert table.headers == ("source", "part", veto_name(-1.0, True), veto_name(-1.0, False), "cost")
    on, off = report.rows[0].cell(veto_name(-1.0, True)), report.rows[0].cell(veto_name(-1.0, False))
    assert on is not None and off is not None and (on.correct, off.correct) == (0, 1)
    assert table.rows[0][4] == "+100.0"
    assert all(not h.endswith(("veto on", "veto off")) for h in panel_table(report).headers)
