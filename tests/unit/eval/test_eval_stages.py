"""Building stages by name: names, the gateway default, missing guards, and the per-pair memo."""

from __future__ import annotations

import pytest

from index.guards.registry import build_stages
from index.guards.stages import MemoStage, StepResult, parse_stage_names
from index.match.policy import DecisionMode
from index.settings import Settings


class Named:
    def __init__(self, name: str) -> None:
        self.name = name
        self.calls = 0

    def check(self, query: str, cached: str) -> StepResult:
        self.calls += 1
        return StepResult(self.name, query == cached)


def test_the_default_stages_are_every_rule_stage_in_gateway_order() -> None:
    assert Settings(decision=DecisionMode.THRESHOLD).policy().stages == ("polarity", "values")
    assert Settings().policy().stages == ("polarity", "values")  # judge mode: for conversations
    assert [s.name for s in build_stages(("values", "polarity"))] == ["polarity", "values"]  # gateway order
    assert [s.name for s in build_stages(("values",))] == ["values"]


def test_an_unknown_stage_cannot_be_built() -> None:
    with pytest.raises(ValueError, match="unknown stage 'verifier'"):
        build_stages(("verifier",))


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
    assert build_stages(()) == ()


def test_memo_stage_checks_each_pair_once() -> None:
    inner = Named("polarity")
    memo = MemoStage(inner)
    results = [memo.check("a", "b"), memo.check("a", "b"), memo.check("a", "a")]
    assert [r.passed for r in results] == [False, False, True]
    assert (inner.calls, memo.calls, memo.name) == (2, 2, "polarity")
