"""Exploration in the gateway: which judge hits go upstream instead, and how the lookup then reads."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from eval.refit import refit_judge
from index.judge.features import JudgeInput
from index.judge.model import Judge
from index.match.decide import Deciders, decide
from index.match.explore import Exploration
from index.match.outcome import Candidate, Decision, Reason
from index.match.policy import DecisionMode, MatchPolicy
from index.storage.decision_log import LabelSource
from index.storage.judge_models import JudgeStore
from service.runtime import Parts
from support.inprocess import InProcessGateway, inprocess_gateway
from support.judges import FixedJudge
from support.waiting import wait_for

JUDGED = MatchPolicy(0.5, decision=DecisionMode.JUDGE)


def _decide(p: float, rate: float, draw: float) -> Decision:
    deciders = Deciders(judge=FixedJudge(p), exploration=Exploration(rate=rate), draw=lambda: draw)
    return decide("how do i freeze my card", [Candidate(7, "freeze my card", 0.8)], JUDGED, deciders)


@pytest.mark.parametrize(("draw", "goes_upstream"), [(0.3, True), (0.5, False)], ids=["drawn", "not-drawn"])
def test_an_uncertain_judge_hit_is_explored_at_its_share(draw: float, goes_upstream: bool) -> None:
    # p = 0.92 over a bar of 0.90 at budget 0.02 and rate 0.1: explored with probability 0.1 * 0.08 / 0.02 = 0.4.
    decision = _decide(0.92, 0.1, draw)
    assert decision.reason is (Reason.EXPLORED if goes_upstream else Reason.HIT)
    assert decision.chosen == 0 and decision.probability == 0.92 and decision.bar == 0.90


def test_sure_hits_and_misses_are_never_explored() -> None:
    assert _decide(0.99, 1.0, 0.0).reason is Reason.HIT  # above the uncertain band
    assert _decide(0.80, 1.0, 0.0).reason is Reason.BELOW_BAR


def _explore_labels(gw: InProcessGateway) -> list[bool]:
    gw.runtime.flush_decisions()
    return [item.correct for item in gw.runtime.decisions.labeled() if item.source is LabelSource.EXPLORE]


def _judging(p: float, draw: float = 0.0) -> Parts:
    """Every candidate scores `p` (P(same)) against a bar of 0.90; exploration draws `draw`."""
    return Parts(judge=FixedJudge(p), draw=lambda: draw)


@pytest.mark.asyncio
async def test_an_explored_hit_goes_upstream_and_is_labelled_in_the_background(tmp_path: Path) -> None:
    async with inprocess_gateway(tmp_path, _judging(0.93), decision="judge", explore_rate=1.0) as gw:
        await gw.chat("how do i freeze my card")
        explored_response = await gw.chat("how do i freeze my card please")
        assert (explored_response.headers["x-deja-cache"], explored_response.headers["x-deja-reason"]) == (
            "miss", "explored")
        assert gw.upstream.chat_calls == 2
        # The stub answers "answer n to: <prompt>", so the two answers differ; how much this upstream's answers
        # vary is not known yet, so no label. Once the namespace's audits have measured it: a "different" label.
        assert await asyncio.to_thread(wait_for, lambda: gw.runtime.metrics.registry.get_sample_value(
            "deja_label_calls_total", {"outcome": "no_label"}) == 1)
        gw.runtime.flush_decisions()
        decision = gw.runtime.decisions.get(explored_response.headers["x-deja-request-id"])
        assert decision is not None
        for _ in range(5):
            gw.runtime.answer_baselines.add(decision.namespace, 0.99)
        await gw.chat("how do i freeze my card thanks")
        assert await asyncio.to_thread(wait_for, lambda: _explore_labels(gw)) == [False]


@pytest.mark.asyncio
async def test_a_sure_hit_is_served(tmp_path: Path) -> None:
    async with inprocess_gateway(tmp_path, _judging(0.99), decision="judge", explore_rate=1.0) as gw:
        await gw.chat("how do i freeze my card")
        assert (await gw.chat("how do i freeze my card please")).headers["x-deja-cache"] == "hit-semantic"


@pytest.mark.asyncio
async def test_an_uncertain_hit_with_an_unlucky_draw_is_served(tmp_path: Path) -> None:
    # p = 0.93 at rate 0.1 explores with probability 0.35; a draw of 0.5 serves it.
    async with inprocess_gateway(tmp_path, _judging(0.93, draw=0.5), decision="judge", explore_rate=0.1) as gw:
        await gw.chat("how do i freeze my card")
        assert (await gw.chat("please how do i freeze my card")).headers["x-deja-cache"] == "hit-semantic"


def _fitted(prior: Judge, seed: int) -> Judge:
    items = [JudgeInput(f"how do i freeze my card {i}", f"freeze my card please {i}", 0.9) for i in range(20)]
    items += [JudgeInput(f"how do i freeze my card {i}", f"how do i unfreeze my card {i}", 0.93) for i in range(20)]
    return refit_judge(items, [True] * 20 + [False] * 20, prior, seed)


@pytest.mark.asyncio
async def test_an_applied_judge_is_put_in_force_live_and_recorded_with_each_decision(tmp_path: Path) -> None:
    async with inprocess_gateway(tmp_path, decision="judge") as gw:
        rt = gw.runtime
        prior = rt.cache.deciders.judge
        assert prior is not None
        fitted = _fitted(prior, seed=3)
        store = JudgeStore(rt.engine)
        store.save(fitted, 40, 1.0)
        store.apply(fitted.version, 1.0)
        await asyncio.to_thread(rt.tick, False)
        assert rt.cache.deciders.judge is not None and rt.cache.deciders.judge.version == fitted.version
        await gw.chat("how do i freeze my card")
        response = await gw.chat("how do i freeze my card please")
        rt.flush_decisions()
        logged = rt.decisions.get(response.headers["x-deja-request-id"])
        assert logged is not None and fitted.version in logged.stages[0].reason
        store.rollback()
        await asyncio.to_thread(rt.tick, False)
        assert rt.cache.deciders.judge.version == prior.version
