"""The budget through the in-process gateway: `GET /deja/budget` and its gauges (the tallies and the learner's one
statistic, as the last upkeep pass stored them: a read computes nothing), the label model (`DEJA_LABEL_MODEL`)
speaking to the upstream and the remembered difference that keeps a later near-twin from being served."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from index.match.live_threshold import CONFIDENCE
from index.storage.decision_log import LabelSource
from support.inprocess import ADMIN_TOKEN, InProcessGateway, inprocess_gateway
from support.waiting import wait_for

ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
T = TypeVar("T")


def _no_label_count(gw: InProcessGateway) -> float:
    return gw.runtime.metrics.registry.get_sample_value("deja_label_calls_total", {"outcome": "no_label"}) or 0.0


def _labels(gw: InProcessGateway, source: LabelSource) -> list[bool]:
    gw.runtime.flush_decisions()
    return [item.correct for item in gw.runtime.decisions.labeled() if item.source is source]


@pytest.mark.asyncio
async def test_budget_needs_the_admin_token(tmp_path: Path) -> None:
    async with inprocess_gateway(tmp_path) as gw:
        response = await gw.client.get("/deja/budget")
        assert response.status_code == 401 and "error" in response.json()


@pytest.mark.asyncio
async def test_budget_reports_the_tallies_and_the_learners_one_statistic_as_the_last_pass_stored_them(
        tmp_path: Path) -> None:
    # The default decision: these rewordings are served on their content, whatever the lexical embedder's cosine.
    async with inprocess_gateway(tmp_path) as gw:
        assert (await gw.client.get("/deja/budget", headers=ADMIN)).json() == {
            "budget": 0.02, "confidence": CONFIDENCE, "at": None, "namespaces": [], "thresholds": []}
        await gw.chat("how do i reset my password")
        ids = []
        for prompt in ("how do i reset my password please", "please how do i reset my password",
                       "how do i reset my password thanks"):
            hit = await gw.chat(prompt)
            assert hit.headers["x-deja-cache"] == "hit-semantic"
            ids.append(hit.headers["x-deja-request-id"])
        for request_id, correct in zip(ids[:2], (True, False), strict=True):
            feedback = await gw.client.post("/v1/deja/feedback", json={"request_id": request_id, "correct": correct},
                                            headers={"Authorization": "Bearer sk-test"})
            assert feedback.status_code == 200
        # A near miss (the lexical embedder: cosine 0.866): evidence of the namespace's cosine threshold.
        assert (await gw.chat("how do i reset my password please now")).headers["x-deja-reason"] == "below_threshold"
        await gw.upkeep()
        report = (await gw.client.get("/deja/budget", headers=ADMIN)).json()
        assert report["at"] == gw.clock.now
        [row] = report["namespaces"]
        assert row == {"namespace": row["namespace"], "api": "chat", "served": 3, "audited": 2, "wrong": 1}
        labels = f'api="chat",namespace="{row["namespace"]}"'
        assert await gw.metric(f"deja_budget_served{{{labels}}}") == 3
        assert await gw.metric(f"deja_budget_wrong{{{labels}}}") == 1
        assert await gw.metric("deja_budget_max_false_hit_rate") == 0.02
        # The one statistic is the learner's, per namespace and kind: its upper bound on wrong ÷ served at the
        # threshold in force, at its confidence; the budget holds where it is at most the budget.
        [learned] = report["thresholds"]
        assert (learned["namespace"], learned["kind"], learned["threshold"]) == (row["namespace"], "cosine", 0.92)
        assert learned["holds"] == (learned["upper"] <= 0.02)
        assert await gw.metric(f'deja_budget_upper{{kind="cosine",namespace="{row["namespace"]}"}}') == (
            pytest.approx(learned["upper"]))
        # The wrong feedback is one label of its difference (the inserted "please"): not enough to veto.
        evidence = (await gw.client.get("/deja/budget/evidence", headers=ADMIN)).json()
        assert [(d["a"], d["b"], d["same"], d["wrong"], d["right"], d["labels"], d["vetoes"])
                for d in evidence["differences"]] == [("", "please", False, 1.0, 0.0, 1, False)]


@pytest.mark.asyncio
async def test_reading_the_budget_and_the_overview_runs_no_upkeep_pass(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """GETs read, never recompute: no tally, learner pass, evidence read or difference sync happens on a read,
    and a read after the pass shows exactly what it stored."""
    # The background loops wait an hour before their first round: every pass here is the test's own.
    async with inprocess_gateway(tmp_path, sync_interval_seconds=3600.0, threshold_interval_seconds=3600.0) as gw:
        rt = gw.runtime
        calls: Counter[str] = Counter()
        seams = {"tallies": (rt.budget, "refresh"), "learner": (rt.threshold_keeper, "refresh"),
                 "evidence": (rt.threshold_keeper.evidence, "changed"), "differences": (rt.differences, "sync")}
        for name, (owner, attribute) in seams.items():
            monkeypatch.setattr(owner, attribute, _counted(getattr(owner, attribute), calls, name))
        await gw.chat("how do i reset my password")
        assert (await gw.chat("how do i reset my password please")).headers["x-deja-cache"] == "hit-semantic"
        assert (await gw.chat("how do i reset my password please now")).headers["x-deja-reason"] == "below_threshold"

        async def read() -> dict[str, Any]:
            page = await gw.client.get("/deja/admin/overview", headers=ADMIN)
            assert page.status_code == 200
            assert (await gw.client.get("/deja/budget/evidence", headers=ADMIN)).status_code == 200
            report: dict[str, Any] = (await gw.client.get("/deja/budget", headers=ADMIN)).json()
            return report

        assert (await read())["namespaces"] == [] and calls == Counter()  # nothing computed yet, nothing on a read
        await gw.upkeep()
        assert calls == Counter({"tallies": 1, "learner": 1, "evidence": 1, "differences": 1})
        report = await read()
        assert [(r["served"], r["audited"]) for r in report["namespaces"]] == [(1, 0)]
        assert [r["kind"] for r in report["thresholds"]] == ["cosine"]
        assert calls == Counter({"tallies": 1, "learner": 1, "evidence": 1, "differences": 1})


def _counted(real: Callable[..., T], calls: Counter[str], name: str) -> Callable[..., T]:
    def counted(*args: Any, **kwargs: Any) -> T:
        calls[name] += 1
        return real(*args, **kwargs)

    return counted


@pytest.mark.asyncio
async def test_a_label_model_labels_audits_and_agreeing_wrong_hits_veto_their_difference(tmp_path: Path) -> None:
    # The audits' labels and the remembered differences; the learned threshold has tests of its own
    # (tests/unit/service/test_thresholds.py). One word swapped for another is a changed slot, never served until
    # labels show it: held here at the cosine threshold like any candidate, as this test is about audits.
    async with inprocess_gateway(tmp_path, min_similarity=0.5, audit_rate=1.0, learn_threshold=False,
                                 slot_min_similarity=0.5, alternative_min_similarity=0.5,
                                 label_model="gpt-4o-mini", label_model_error_rate=0.0) as gw:
        for n, words in enumerate(("archive old slack", "rename my discord", "mute every teams"), start=1):
            assert (await gw.chat(f"{words} channel")).headers["x-deja-cache"] == "miss"
            hit = await gw.chat(f"{words} thread")
            assert hit.headers["x-deja-cache"] == "hit-semantic"
            # The audit re-asks upstream, then the label model compares: the stub says "different" questions.
            assert await asyncio.to_thread(wait_for, lambda n=n: len(_labels(gw, LabelSource.AUDIT)) == n)
        case = gw.upstream.labels.calls[0]
        assert case == {"question": "archive old slack thread", "cached_question": "archive old slack channel",
                        "cached_answer": "answer 1 to: archive old slack channel",
                        "fresh_answer": "answer 2 to: archive old slack thread"}
        assert await gw.metric('deja_label_calls_total{outcome="labelled"}') == 3
        # Each label call's 10 prompt and 5 completion tokens at gpt-4o-mini's rates (USD per 1M tokens).
        assert await gw.metric('deja_label_cost_usd_total{model="gpt-4o-mini"}') == pytest.approx(
            3 * (10 * 0.15 + 5 * 0.60) / 1e6)

        await gw.upkeep()
        report = (await gw.client.get("/deja/budget", headers=ADMIN)).json()
        [row] = report["namespaces"]
        assert (row["served"], row["audited"], row["wrong"]) == (3, 3, 3)
        assert report["thresholds"] == []  # learning off: the prior serves, and no statistic is read
        gw.runtime.audit_sampler.rate = 0.0  # no more audits
        await gw.chat("delete this zoom channel")
        vetoed = await gw.chat("delete this zoom thread")
        assert (vetoed.headers["x-deja-cache"], vetoed.headers["x-deja-veto"]) == ("miss", "difference")
        evidence = (await gw.client.get("/deja/budget/evidence", headers=ADMIN)).json()
        assert [(d["a"], d["b"], d["wrong"], d["labels"], d["vetoes"], d["changed"])
                for d in evidence["differences"]] == [("channel", "thread", 3.0, 3, True, 1)]
        assert set(evidence) == {"differences", "threshold_moves"}


@pytest.mark.asyncio
async def test_a_label_reply_that_is_not_a_verdict_gives_no_label(tmp_path: Path) -> None:
    async with inprocess_gateway(tmp_path, min_similarity=0.5, audit_rate=1.0, slot_min_similarity=0.5,
                                 label_model="label-llm") as gw:
        gw.upstream.labels.reply = "I think they are the same."
        await gw.chat("archive old slack channel")
        # A served hit, audited (rate 1.0): the label model is asked about it and answers no verdict.
        assert (await gw.chat("archive old slack thread")).headers["x-deja-cache"] == "hit-semantic"
        assert await asyncio.to_thread(wait_for, lambda: gw.upstream.labels.calls)
        assert gw.upstream.labels.calls[0]["question"] == "archive old slack thread"
        assert await asyncio.to_thread(wait_for, lambda: _no_label_count(gw) == 1)
        assert _labels(gw, LabelSource.AUDIT) == []


@pytest.mark.asyncio
async def test_over_the_hourly_allowance_a_shadow_is_compared_by_answers_and_unknown_variation_teaches_nothing(
        tmp_path: Path) -> None:
    # The default decision: the near miss below its cosine threshold is what gets shadow-labelled.
    async with inprocess_gateway(tmp_path, label_model="label-llm", audit_calls_per_hour=0) as gw:
        await gw.chat("how do i reset my password")
        near = await gw.chat("how do i reset my password please now")
        assert near.headers["x-deja-reason"] == "below_threshold"
        # The two answers differ, but how much this upstream's answers vary is not known yet: no label.
        assert await asyncio.to_thread(wait_for, lambda: _no_label_count(gw) == 1)
        assert _labels(gw, LabelSource.SHADOW) == []
        assert gw.upstream.labels.calls == []
        assert gw.runtime.metrics.registry.get_sample_value(
            "deja_label_calls_total", {"outcome": "over_allowance"}) == 1
