"""One policy from `Settings`: what the gateway runs is what `eval` measures."""

from __future__ import annotations

import logging

import pytest

from index.match.policy import (
    DEFAULT_GUARDED_CANDIDATES,
    DEFAULT_GUARDED_MIN_SIMILARITY,
    DEFAULT_MAX_FALSE_HIT_RATE,
    DEFAULT_MIN_CONTEXT_SIMILARITY,
    DEFAULT_MIN_SIMILARITY,
    DecisionMode,
    MatchPolicy,
)
from index.request.keys import ContextMatch
from index.settings import RETIRED, Settings, with_retired


def test_default_settings_give_the_documented_policy() -> None:
    assert Settings().policy() == MatchPolicy(
        DEFAULT_GUARDED_MIN_SIMILARITY, DEFAULT_MIN_CONTEXT_SIMILARITY, ("polarity", "values"),
        ContextMatch.SEMANTIC, DecisionMode.GUARDED, DEFAULT_MAX_FALSE_HIT_RATE, DEFAULT_GUARDED_CANDIDATES)


def test_threshold_mode_keeps_its_own_default_threshold_and_stages() -> None:
    assert Settings(decision=DecisionMode.THRESHOLD).policy() == MatchPolicy(
        DEFAULT_MIN_SIMILARITY, DEFAULT_MIN_CONTEXT_SIMILARITY, ("polarity", "values"), ContextMatch.SEMANTIC,
        DecisionMode.THRESHOLD)


def test_the_record_default_is_the_default_mode() -> None:
    assert MatchPolicy(0.9).decision is Settings().decision is DecisionMode.GUARDED


def test_every_policy_setting_reaches_the_policy_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {"MIN_SIMILARITY": "0.8", "MIN_CONTEXT_SIMILARITY": "0.55", "GUARD_POLARITY": "false",
                        "CONTEXT_MATCH": "exact",
                        "DECISION": "threshold", "MAX_FALSE_HIT_RATE": "0.05", "GUARDED_CANDIDATES": "3"}.items():
        monkeypatch.setenv(f"DEJA_{name}", value)
    assert Settings().policy() == MatchPolicy(0.8, 0.55, ("values",), ContextMatch.EXACT,
                                                DecisionMode.THRESHOLD, 0.05, 3)


def test_a_conversation_keeps_the_decision_and_its_last_message_takes_the_conversation_threshold() -> None:
    policy = Settings().policy()
    assert policy.for_request(conversation=False) == policy
    conversation = policy.for_request(conversation=True)
    assert conversation.decision is DecisionMode.GUARDED and conversation.min_similarity == DEFAULT_MIN_SIMILARITY
    assert conversation.stages == ("polarity", "values")


def test_the_retired_judge_mode_is_refused_with_the_alternatives() -> None:
    with pytest.raises(ValueError, match=r"'judge' was retired.*'guarded'.*'threshold'"):
        Settings(decision="judge")  # type: ignore[arg-type]


def test_a_budget_outside_zero_one_is_refused() -> None:
    with pytest.raises(ValueError):
        Settings(max_false_hit_rate=0.0)
    with pytest.raises(ValueError):
        MatchPolicy(0.5, max_false_hit_rate=1.0)


def test_the_default_sqlite_file_lives_in_the_data_dir() -> None:
    assert Settings(data_dir="x").sql_url == "sqlite:///x/deja.db"  # type: ignore[arg-type]
    assert Settings(database_url="postgresql://h/db").sql_url == "postgresql://h/db"


@pytest.mark.parametrize("name", ["VETO_BELOW", "JUDGE_MODEL", "PAIR_MODEL", "EXPLORE_RATE", "VERIFIER"])
def test_a_retired_setting_still_starts_and_is_named_in_one_warning(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, name: str) -> None:
    monkeypatch.setenv(f"DEJA_{name}", "0.6")
    with caplog.at_level(logging.WARNING, logger="deja.settings"):
        settings = Settings()
    assert settings.policy() == MatchPolicy(DEFAULT_GUARDED_MIN_SIMILARITY, DEFAULT_MIN_CONTEXT_SIMILARITY,
                                            ("polarity", "values"))  # the defaults: the value left no trace
    assert [r.getMessage() for r in caplog.records] == [f"DEJA_{name} is retired and ignored: "
                                                       f"{RETIRED[name.lower()].why}"]
    assert name.lower() not in Settings.model_fields


def test_a_retired_keyword_is_ignored_too(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="deja.settings"):
        Settings(veto_below=0.6)  # type: ignore[call-arg]
    assert [r.getMessage().split(" is ")[0] for r in caplog.records] == ["DEJA_VETO_BELOW"]


def test_a_renamed_setting_carries_its_value_unless_the_new_one_is_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEJA_JUDGE_CANDIDATES", "3")
    assert Settings().policy().guarded_candidates == 3
    monkeypatch.setenv("DEJA_GUARDED_CANDIDATES", "7")
    assert Settings().guarded_candidates == 7
    data, lines = with_retired({"judge_candidates": 4}, {})
    assert data == {"guarded_candidates": 4} and lines == [
        "DEJA_JUDGE_CANDIDATES is retired (renamed with the learned veto's removal): its value is read as "
        "DEJA_GUARDED_CANDIDATES"]
