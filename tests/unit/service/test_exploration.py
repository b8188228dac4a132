"""Exploration in the gateway's default decision: which hits the learned score doubts go upstream instead, and how
the lookup then reads."""

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
from index.match.policy import LEARNED_VETO_BELOW, MatchPolicy
from index.storage.decision_log import LabelSource
from index.storage.judge_models import JudgeStore
from service.runtime import Parts
from support.inprocess import InProcessGateway, inprocess_gateway
from support.judges import FixedJudge
from support.waiting import wait_for

# The default decision with its learned veto turned on (off by default): exploration reads the veto's P, and its
# bar is 0.6, doubted below 0.8.
GUARDED = MatchPolicy(0.5, veto_below=LEARNED_VETO_BELOW)
ASKED, CACHED = "how do i freeze my card", "how do i lock my card"


def _decide(p: float, rate: float, draw: float, cached: str = CACHED) -> Decision:
    deciders = Deciders(judge=FixedJudge(p), exploration=Exploration(rate=rate), draw=lambda: draw)
    return decide(ASKED, [Candidate(7, cached, 0.8)], GUARDED, deciders)


@pytest.mark.parametrize(("draw", "goes_upstream"), [(0.05, True), (0.5, False)], ids=["drawn", "not-drawn"])
def test_a_doubted_hit_of_the_default_decision_is_explored_at_its_share(draw: float, goes_upstream: bool) -> None:
    decision = _decide(0.7, 0.1, draw)  # P 0.7: above the veto's bar (0.6), in the doubted lower half
    assert decision.reason is (Reason.EXPLORED if goes_upstream else Reason.HIT)
    assert decision.chosen == 0 and decision.probability == 0.7 and decision.bar == 0.6


def test_sure_hits_vetoes_and_plain_rewordings_are_never_explored() -> None:
    assert _decide(0.9, 1.0, 0.0).reason is Reason.HIT  # the learned score is sure
    assert _decide(0.5, 1.0, 0.0).vetoed_by == "learned"  # below the bar: a veto, not an exploration
    assert _decide(0.7, 1.0, 0.0, cached="How do I freeze my card?").basis == "same content"


def _explore_labels(gw: InProcessGateway) -> list[bool]:
    gw.runtime.flush_decisions()
    return [item.correct for item in gw.runtime.decisions.labeled() if item.source is LabelSource.EXPLORE]


def _judging(p: float, draw: float = 0.0) -> Parts:
    """Every candidate scores `p` (P(same)) against the veto's bar of 0.6; exploration draws `draw`."""
    return Parts(judge=FixedJudge(p), draw=lambda: draw)


@pytest.mark.asyncio
async def test_an_explored_hit_goes_upstream_and_is_labelled_in_the_background(tmp_path: Path) -> None:
    async with inprocess_gateway(tmp_path, _judging(0.7), min_similarity=0.5, veto_below=LEARNED_VETO_BELOW,
                                 explore_rate=1.0) as gw:
        await gw.chat("how do i freeze my card")
        explored_response = await gw.chat("how do i freeze my debit card")
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
        await gw.chat("how do i freeze my credit card")
        assert await asyncio.to_thread(wait_for, lambda: _explore_labels(gw)) == [False]


@pytest.mark.asyncio
async def test_a_sure_hit_is_served(tmp_path: Path) -> None:
    async with inprocess_gateway(tmp_path, _judging(0.99), min_similarity=0.5, veto_below=LEARNED_VETO_BELOW,
                                 explore_rate=1.0) as gw:
        await gw.chat("how do i freeze my card")
        assert (await gw.chat("how do i freeze my debit card")).headers["x-deja-cache"] == "hit-semantic"


@pytest.mark.asyncio
async def test_an_uncertain_hit_with_an_unlucky_draw_is_served(tmp_path: Path) -> None:
    # a doubted P at rate 0.1 explores one hit in ten; a draw of 0.5 serves it.
    async with inprocess_gateway(tmp_path, _judging(0.7, draw=0.5), min_similarity=0.5, veto_below=LEARNED_VETO_BELOW,
                                 explore_rate=0.1) as gw:
        await gw.chat("how do i freeze my card")
        assert (await gw.chat("how do i freeze my debit card")).headers["x-deja-cache"] == "hit-semantic"


def _fitted(prior: Judge, seed: int) -> Judge:
    items = [JudgeInput(f"how do i freeze my card {i}", f"freeze my card please {i}", 0.9) for i in range(20)]
    items += [JudgeInput(f"how do i freeze my card {i}", f"how do i unfreeze my card {i}", 0.93) for i in range(20)]
    return refit_judge(items, [True] * 20 + [False] * 20, prior, seed)


@pytest.mark.asyncio
async def test_an_applied_judge_is_put_in_force_live_and_recorded_with_each_decision(tmp_path: Path) -> None:
    async with inprocess_gateway(tmp_path, min_similarity=0.5, veto_below=LEARNED_VETO_BELOW) as gw:
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
        response = await gw.chat("how do i freeze my debit card")
        rt.flush_decisions()
        logged = rt.decisions.get(response.headers["x-deja-request-id"])
        assert logged is not None and logged.stages[-1].stage == "learned"
        assert fitted.version in logged.stages[-1].reason
        store.rollback()
        await asyncio.to_thread(rt.tick, False)
        assert rt.cache.deciders.judge.version == prior.version
