"""Vetoes no decision mode overrides: an accent that changes a word (año/ano, schön/schon, pâte/pâté) and a text
past the decision's cap are never served, in threshold mode (`by_threshold`) and in judge mode (`judge`)."""

from __future__ import annotations

import pytest

from index.guards.safety import ACCENT_STAGE, LENGTH_STAGE, accent_swap, pair_veto
from index.judge.model import load_judge
from index.match.judged import JudgeSetup, judge
from index.match.outcome import Candidate, Reason
from index.match.policy import MatchPolicy
from index.match.threshold import by_threshold

ACCENTS = [
    pytest.param("How many a\u00f1os does the warranty last?", "How many anos does the warranty last?", id="ano"),
    pytest.param("Is the Sch\u00f6n bridge open today?", "Is the Schon bridge open today?", id="schon"),
    pytest.param("How long should I rest the p\u00e2te?", "How long should I rest the p\u00e2t\u00e9?", id="pate"),
]


@pytest.mark.parametrize("query, cached", ACCENTS)
def test_threshold_mode_never_serves_a_word_changed_by_its_accent(query: str, cached: str) -> None:
    decision = by_threshold(query, Candidate(1, cached, 0.99), MatchPolicy(0.9))
    assert decision.reason is Reason.VETOED and decision.vetoed_by == ACCENT_STAGE


@pytest.mark.parametrize("query, cached", ACCENTS)
def test_judge_mode_never_serves_a_word_changed_by_its_accent(query: str, cached: str) -> None:
    setup = JudgeSetup(load_judge(), candidates=2)
    same = query.replace("?", " ?")  # a control the judge may serve: same words
    judgement = judge(query, [Candidate(1, cached, 0.99), Candidate(2, same, 0.98)], setup)
    assert judgement.probabilities[0] == 0.0 and judgement.vetoes[0].startswith(ACCENT_STAGE)
    assert judgement.probabilities[1] > 0.0 and not judgement.vetoes[1]
    assert judgement.chosen != 0


def test_unicode_spellings_of_one_word_are_not_an_accent_change() -> None:
    assert accent_swap("Where is the caf\u00e9?", "Where is the cafe\u0301?") is None
    assert accent_swap("Where is the caf\u00e9?", "Where is the caf\u00e9 please?") is None


def test_accent_change_in_the_context_of_a_conversation_vetoes() -> None:
    veto = pair_veto("and tomorrow?", "and tomorrow?", "I fly to S\u00e3o Paulo", "I fly to Sao Paulo")
    assert veto is not None and veto.stage == f"{ACCENT_STAGE}@context"


def test_text_past_the_cap_is_never_served_in_either_mode() -> None:
    long_query, long_cached = "why " * 60 + "?", "why " * 61 + "?"
    decision = by_threshold(long_query, Candidate(1, long_cached, 0.99), MatchPolicy(0.9, max_decision_chars=200))
    assert decision.vetoed_by == LENGTH_STAGE
    setup = JudgeSetup(load_judge(), max_decision_chars=200)
    judgement = judge(long_query, [Candidate(1, long_cached, 0.99)], setup)
    assert not judgement.hit and "longer than 200" in judgement.vetoes[0]
