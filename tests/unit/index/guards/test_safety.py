"""Vetoes no decision mode overrides: an accent that changes a word (año/ano, schön/schon, pâte/pâté) and a text
past the decision's cap are never served, in guarded mode (the default) and in threshold mode."""

from __future__ import annotations

import pytest

from index.guards.safety import ACCENT_STAGE, LENGTH_STAGE, accent_swap, pair_veto
from index.match.decide import Deciders, decide
from index.match.outcome import Candidate, Reason
from index.match.policy import DecisionMode, MatchPolicy

ACCENTS = [
    pytest.param("How many a\u00f1os does the warranty last?", "How many anos does the warranty last?", id="ano"),
    pytest.param("Is the Sch\u00f6n bridge open today?", "Is the Schon bridge open today?", id="schon"),
    pytest.param("How long should I rest the p\u00e2te?", "How long should I rest the p\u00e2t\u00e9?", id="pate"),
]


MODES = [pytest.param(DecisionMode.GUARDED, id="guarded"), pytest.param(DecisionMode.THRESHOLD, id="threshold")]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("query, cached", ACCENTS)
def test_no_mode_serves_a_word_changed_by_its_accent(query: str, cached: str, mode: DecisionMode) -> None:
    decision = decide(query, [Candidate(1, cached, 0.99)], MatchPolicy(0.9, decision=mode),
                      Deciders())
    assert decision.reason is Reason.VETOED and decision.vetoed_by == ACCENT_STAGE


def test_the_next_candidate_is_still_served_after_an_accent_veto() -> None:
    query, cached = ACCENTS[0].values
    same = str(query).replace("?", " ?")  # a control: the same words
    decision = decide(str(query), [Candidate(1, str(cached), 0.99), Candidate(2, same, 0.98)], MatchPolicy(0.9),
                      Deciders())
    assert decision.hit and decision.chosen == 1


def test_unicode_spellings_of_one_word_are_not_an_accent_change() -> None:
    assert accent_swap("Where is the caf\u00e9?", "Where is the cafe\u0301?") is None
    assert accent_swap("Where is the caf\u00e9?", "Where is the caf\u00e9 please?") is None


def test_accent_change_in_the_context_of_a_conversation_vetoes() -> None:
    veto = pair_veto("and tomorrow?", "and tomorrow?", "I fly to S\u00e3o Paulo", "I fly to Sao Paulo")
    assert veto is not None and veto.stage == f"{ACCENT_STAGE}@context"


@pytest.mark.parametrize("mode", MODES)
def test_text_past_the_cap_is_never_served_in_either_mode(mode: DecisionMode) -> None:
    long_query, long_cached = "why " * 60 + "?", "why " * 61 + "?"
    policy = MatchPolicy(0.9, max_decision_chars=200, decision=mode)
    decision = decide(long_query, [Candidate(1, long_cached, 0.99)], policy, Deciders())
    assert decision.vetoed_by == LENGTH_STAGE and "longer than 200" in decision.stages[-1].reason
