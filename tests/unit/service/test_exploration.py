"""Exploration in the gateway: which judge hits go upstream instead, and how the lookup then reads."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from eval.refit import refit_judge
from index.decision_log import LabelSource
from index.explore import Exploration
from index.judge import Judge
from index.judge_features import JudgeInput
from index.judge_store import JudgeStore
from index.records import CachedResponse, Lookup, Verdict
from index.rule import Decision, Reason
from index.stages import StageResult
from service.gateway import explored
from support.inprocess import InProcessGateway, inprocess_gateway
from support.waiting import wait_for


def _hit(p: float | None, verdict: Verdict = Verdict.SEMANTIC_HIT) -> Lookup:
    stages = () if p is None else (StageResult("judge", True, "judge-x p bar", p),)
    return Lookup(verdict, CachedResponse(7, {"choices": []}, 0.0), 0.8, Decision(Reason.HIT, 0.8, stages=stages),
                  "cached prompt", 7, candidate_response={"choices": []})


@pytest.mark.parametrize(("draw", "goes_upstream"), [(0.3, True), (0.5, False)], ids=["drawn", "not-drawn"])
def test_an_uncertain_judge_hit_is_explored_at_its_share(draw: float, goes_upstream: bool) -> None:
    # p = 0.92 over a bar of 0.90 at budget 0.02 and rate 0.1: explored with probability 0.1 * 0.08 / 0.02 = 0.4.
    after = explored(_hit(0.92), 0.90, 0.02, Exploration(rate=0.1), draw)
    if goes_upstream:
        assert after.verdict is Verdict.MISS and after.response is None
        assert after.decision is not None and after.decision.reason is Reason.EXPLORED
        assert after.candidate_response is not None  # kept, to compare with the fresh answer
    else:
        assert after == _hit(0.92)


@pytest.mark.parametrize("lookup", [_hit(0.99), _hit(None), _hit(0.92, Verdict.EXACT_HIT)],
                         ids=["sure-hit", "threshold-mode-hit", "exact-hit"])
def test_sure_hits_rule_hits_and_exact_hits_are_never_explored(lookup: Lookup) -> None:
    assert explored(lookup, 0.90, 0.02, Exploration(rate=1.0), 0.0) == lookup


class FixedJudge:
    """A judge fake: every candidate scores `p` against a bar of 0.90 (the real judge's seam: cut, probabilities)."""

    def __init__(self, p: float, version: str = "judge-fixed") -> None:
        self.p, self.version = p, version

    def cut(self, max_false_hit_rate: float) -> float:
        return 0.90

    def probabilities(self, items: Sequence[object]) -> np.ndarray:
        return np.full(len(items), self.p)


def _explore_labels(gw: InProcessGateway) -> list[bool]:
    gw.runtime.flush_decisions()
    return [item.correct for item in gw.runtime.decisions.labeled() if item.source is LabelSource.EXPLORE]


async def _store_then_judge(gw: InProcessGateway, p: float) -> None:
    """Store one answer, then judge every candidate `p` (P(same)) with exploration's draw always 0."""
    gw.runtime.cache.judge = FixedJudge(p)  # type: ignore[assignment]
    gw.runtime.draw = lambda: 0.0
    await gw.chat("how do i freeze my card")


@pytest.mark.asyncio
async def test_an_explored_hit_goes_upstream_and_is_labelled_in_the_background(tmp_path: Path) -> None:
    async with inprocess_gateway(tmp_path, decision="judge", explore_rate=1.0) as gw:
        await _store_then_judge(gw, 0.93)
        explored_response = await gw.chat("how do i freeze my card please")
        assert (explored_response.headers["x-deja-cache"], explored_response.headers["x-deja-veto"]) == (
            "miss", "explored")
        assert gw.upstream.chat_calls == 2
        # The stub answers "answer n to: <prompt>", so the two answers differ: a "different" label.
        assert await asyncio.to_thread(wait_for, lambda: _explore_labels(gw)) == [False]


@pytest.mark.asyncio
async def test_a_sure_hit_is_served_and_an_unlucky_draw_serves_too(tmp_path: Path) -> None:
    async with inprocess_gateway(tmp_path, decision="judge", explore_rate=1.0) as gw:
        await _store_then_judge(gw, 0.99)
        assert (await gw.chat("how do i freeze my card please")).headers["x-deja-cache"] == "hit-semantic"
        gw.runtime.cache.judge = FixedJudge(0.93)  # type: ignore[assignment]
        gw.runtime.exploration = Exploration(rate=0.1)  # explores this hit with probability 0.35
        gw.runtime.draw = lambda: 0.5
        assert (await gw.chat("please how do i freeze my card")).headers["x-deja-cache"] == "hit-semantic"


def _fitted(prior: Judge, seed: int) -> Judge:
    items = [JudgeInput(f"how do i freeze my card {i}", f"freeze my card please {i}", 0.9) for i in range(20)]
    items += [JudgeInput(f"how do i freeze my card {i}", f"how do i unfreeze my card {i}", 0.93) for i in range(20)]
    return refit_judge(items, [True] * 20 + [False] * 20, prior, seed)


@pytest.mark.asyncio
async def test_an_applied_judge_is_put_in_force_live_and_recorded_with_each_decision(tmp_path: Path) -> None:
    async with inprocess_gateway(tmp_path, decision="judge") as gw:
        rt = gw.runtime
        prior = rt.cache.judge
        assert prior is not None
        fitted = _fitted(prior, seed=3)
        store = JudgeStore(rt.engine)
        store.save(fitted, 40, 1.0)
        store.apply(fitted.version, 1.0)
        await asyncio.to_thread(rt.tick, False)
        assert rt.cache.judge is not None and rt.cache.judge.version == fitted.version
        await gw.chat("how do i freeze my card")
        response = await gw.chat("how do i freeze my card please")
        rt.flush_decisions()
        logged = rt.decisions.get(response.headers["x-deja-request-id"])
        assert logged is not None and fitted.version in logged.stages[0].reason
        store.rollback()
        await asyncio.to_thread(rt.tick, False)
        assert rt.cache.judge.version == prior.version
