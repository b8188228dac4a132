"""One policy from `Settings`: what the gateway runs is what `eval` measures."""

from __future__ import annotations

import pytest

from index.keys import ContextMatch
from index.policy import DEFAULT_MIN_CONTEXT_SIMILARITY, DEFAULT_MIN_SIMILARITY, MatchPolicy, build_policy
from index.settings import Settings


def test_default_settings_give_the_documented_policy() -> None:
    assert build_policy(Settings()) == MatchPolicy(DEFAULT_MIN_SIMILARITY, DEFAULT_MIN_CONTEXT_SIMILARITY,
                                                   ("polarity", "values"), None, ContextMatch.SEMANTIC)


def test_every_policy_setting_reaches_the_policy_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {"MIN_SIMILARITY": "0.8", "MIN_CONTEXT_SIMILARITY": "0.55", "GUARD_POLARITY": "false",
                        "VERIFIER": "true", "VERIFIER_MIN_PROBABILITY": "0.3", "CONTEXT_MATCH": "exact"}.items():
        monkeypatch.setenv(f"DEJA_{name}", value)
    assert build_policy(Settings()) == MatchPolicy(0.8, 0.55, ("values", "verifier"), 0.3, ContextMatch.EXACT)


def test_the_default_sqlite_file_lives_in_the_data_dir() -> None:
    assert Settings(data_dir="x").sql_url == "sqlite:///x/deja.db"  # type: ignore[arg-type]
    assert Settings(database_url="postgresql://h/db").sql_url == "postgresql://h/db"
