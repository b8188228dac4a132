"""The learned threshold through the in-process gateway at its defaults: a near miss is labelled in the background,
its label lands in the namespace's evidence, and `/deja/budget` and the overview show the threshold in force with
the evidence per band behind it."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from index.storage.decision_log import LabelSource
from support.inprocess import ADMIN_TOKEN, InProcessGateway, inprocess_gateway
from support.waiting import wait_for

ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}


def _shadows(gw: InProcessGateway) -> list[bool]:
    gw.runtime.flush_decisions()
    return [item.correct for item in gw.runtime.decisions.labeled() if item.source is LabelSource.SHADOW]


@pytest.mark.asyncio
async def test_a_near_miss_is_labelled_and_becomes_evidence_of_the_namespace_threshold(tmp_path: Path) -> None:
    # The label model (the stub calls the two questions different) labels the near miss within the allowance.
    async with inprocess_gateway(tmp_path, label_model="label-llm", audit_calls_per_hour=100) as gw:
        await gw.chat("how do i reset my password")
        near = await gw.chat("how do i reset my password please now")  # the lexical embedder: cosine 0.866
        assert (near.headers["x-deja-cache"], near.headers["x-deja-reason"]) == ("miss", "below_threshold")
        assert "x-deja-veto" not in near.headers
        assert await asyncio.to_thread(wait_for, lambda: _shadows(gw) == [False])
        await gw.upkeep()  # the pass that learns; the read below shows what it stored
        report = (await gw.client.get("/deja/budget", headers=ADMIN)).json()
        [row] = report["thresholds"]
        assert (row["threshold"], row["prior"], row["labels"]) == (0.92, 0.92, 1)
        [band] = [b for b in row["bands"] if b["requests"] > 0]
        assert (band["low"], band["wrong"], band["right"]) == (0.86, 1.0, 0.0)
        assert band["wrong_rate"] > 0.1  # a wrong label raises its band's estimate over the prior's
        assert row["holds"] == (row["upper"] <= report["budget"]) and report["confidence"] == 0.8
        assert await gw.metric(f'deja_threshold{{namespace="{row["namespace"]}"}}') == 0.92
        page = await gw.client.get("/deja/admin/overview", headers=ADMIN)
        assert page.status_code == 200 and '<table id="thresholds">' in page.text


@pytest.mark.asyncio
async def test_with_learning_off_no_threshold_is_learned(tmp_path: Path) -> None:
    async with inprocess_gateway(tmp_path, learn_threshold=False) as gw:
        await gw.chat("how do i reset my password")
        await gw.chat("how do i reset my password please now")
        await gw.upkeep()
        assert (await gw.client.get("/deja/budget", headers=ADMIN)).json()["thresholds"] == []


@pytest.mark.asyncio
async def test_without_a_label_model_a_near_miss_asks_once_more_to_measure_variation_then_is_labelled(
        tmp_path: Path) -> None:
    # The stub words every answer differently ("answer n to: ..."): with no measure of the upstream's variation
    # the two answers could not be compared, so the near miss asks once more (one call from the allowance).
    async with inprocess_gateway(tmp_path) as gw:
        await gw.chat("how do i reset my password")
        await gw.chat("how do i reset my password please now")
        assert await asyncio.to_thread(wait_for, lambda: len(_shadows(gw)) == 1)
        assert gw.upstream.chat_calls == 3
        assert await gw.metric('deja_label_calls_total{outcome="variation"}') == 1


@pytest.mark.asyncio
async def test_with_no_allowance_left_a_near_miss_asks_nothing_more(tmp_path: Path) -> None:
    async with inprocess_gateway(tmp_path, audit_calls_per_hour=0) as gw:
        await gw.chat("how do i reset my password")
        await gw.chat("how do i reset my password please now")
        assert await asyncio.to_thread(
            wait_for, lambda: gw.runtime.metrics.registry.get_sample_value(
                "deja_label_calls_total", {"outcome": "no_label"}) == 1)
        assert gw.upstream.chat_calls == 2 and _shadows(gw) == []
