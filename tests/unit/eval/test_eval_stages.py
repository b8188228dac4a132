"""Building stages by name: names, the gateway default, missing guards, and the per-pair memo."""

from __future__ import annotations

import sys
import types

import pytest

from index.errors import StageUnavailable
from index.policy import DecisionMode, MatchPolicy, build_policy
from index.settings import Settings
from index.stages import MemoStage, Stage, StageResult, build_stages, parse_stage_names


class Named:
    def __init__(self, name: str) -> None:
        self.name = name
        self.calls = 0

    def check(self, query: str, cached: str) -> StageResult:
        self.calls += 1
        return StageResult(self.name, query == cached)


def _fake_guards(monkeypatch: pytest.MonkeyPatch) -> list[tuple[bool, bool]]:
    """Install a stand-in `index.guards` exporting `rule_stages`; returns the calls it receives."""
    calls: list[tuple[bool, bool]] = []

    def rule_stages(polarity: bool, values: bool) -> tuple[Stage, ...]:
        calls.append((polarity, values))
        return tuple(Named(name) for name, on in (("polarity", polarity), ("values", values)) if on)

    module = types.ModuleType("index.guards")
    module.rule_stages = rule_stages  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "index.guards", module)
    return calls


def _policy(*stages: str) -> MatchPolicy:
    return MatchPolicy(0.9, stages=stages)


def test_a_stage_that_cannot_load_is_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "index.guards", None)
    with pytest.raises(StageUnavailable, match="could not be loaded"):
        build_stages(_policy("polarity"))


def test_with_guards_the_default_is_every_rule_stage(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _fake_guards(monkeypatch)
    assert build_policy(Settings(decision=DecisionMode.THRESHOLD)).stages == ("polarity", "values")
    assert build_policy(Settings()).stages == ("polarity", "values")  # judge mode: for conversations
    assert [s.name for s in build_stages(_policy("values", "polarity"))] == ["polarity", "values"]  # gateway order
    assert [s.name for s in build_stages(_policy("values"))] == ["values"]
    assert calls[-1] == (False, True)


@pytest.mark.parametrize(
    ("text", "names"),
    [
        pytest.param("none", (), id="none"),
        pytest.param("", (), id="empty"),
        pytest.param("polarity, values", ("polarity", "values"), id="list"),
    ],
)
def test_stage_names_parse(text: str, names: tuple[str, ...]) -> None:
    assert parse_stage_names(text) == names


def test_unknown_stage_name_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown stage 'vibes'"):
        parse_stage_names("polarity,vibes")


def test_no_stage_names_build_no_stages() -> None:
    assert build_stages(_policy()) == ()


def test_memo_stage_checks_each_pair_once() -> None:
    inner = Named("polarity")
    memo = MemoStage(inner)
    results = [memo.check("a", "b"), memo.check("a", "b"), memo.check("a", "a")]
    assert [r.passed for r in results] == [False, False, True]
    assert (inner.calls, memo.calls, memo.name) == (2, 2, "polarity")
