"""The veto check (`training.veto_check`): the guarded rule at the default threshold and below, the learned veto on
and off, side by side per source, with what the veto costs."""

from __future__ import annotations

from eval.datasets import Conversation, LabeledPair, StreamRequest
from eval.sources import Origin, Source
from index.embedding.embedder import HashEmbedder
from index.match.policy import MatchPolicy
from tests.unit.training.judges import FixedJudge
from training.judge.learned import VETO_BELOW, LearnedScores
from training.veto_check import lines, run, thresholds_of, veto_name


def test_the_default_threshold_and_those_below_it_are_checked() -> None:
    assert thresholds_of(MatchPolicy(0.92)) == [0.92, 0.88, 0.85]
    assert thresholds_of(MatchPolicy(0.86)) == [0.86, 0.85]


def test_the_check_shows_what_the_veto_costs_per_source() -> None:
    synonyms = Source("synonyms", Origin.REAL, "dev", pairs=(LabeledPair(
        "1", Conversation.of("What are the signs of dehydration?"),
        Conversation.of("What are the symptoms of dehydration?"), "same", True),))
    # At cosine >= -1 every pair reaches the veto; a judge at P 0.01 vetoes the paraphrase.
    policy = MatchPolicy(-1.0, stages=("polarity", "values"))
    report = run([synonyms], HashEmbedder(dim=256), policy, LearnedScores(FixedJudge(0.01), None, VETO_BELOW))
    on, off = report.rows[0].cell(veto_name(-1.0, True)), report.rows[0].cell(veto_name(-1.0, False))
    assert on is not None and off is not None and (on.correct, off.correct) == (0, 1)
    assert lines(report, [-1.0]) == ["synonyms (dev) [real users] | -1.00: on 0.0%/0.0% off 100.0%/0.0% cost +100.0"]


def test_a_trace_is_replayed_with_the_veto_after_the_products_decision() -> None:
    trace = Source("trace", Origin.OURS, "test", requests=(
        StreamRequest(1, "reset", "How do I reset my password?"),
        StreamRequest(2, "reset", "How do I reset my password now?"),
        StreamRequest(3, "reset", "How do I reset my password now?"),  # an exact repeat: never vetoed
    ))
    policy = MatchPolicy(-1.0, stages=("polarity", "values"))
    report = run([trace], HashEmbedder(dim=256), policy, LearnedScores(FixedJudge(0.01), None, VETO_BELOW))
    on, off = report.rows[0].cell(veto_name(-1.0, True)), report.rows[0].cell(veto_name(-1.0, False))
    assert on is not None and off is not None
    assert (off.served, off.correct) == (2, 2)  # the semantic hit, then the exact repeat
    assert (on.served, on.correct) == (1, 1)  # the semantic hit vetoed; its answer stored, then repeated
