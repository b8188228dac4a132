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
        report = (await gw.client.get("/deja/budget", headers=ADMIN)).json()
        [row] = report["thresholds"]
        assert (row["threshold"], row["prior"], row["labels"]) == (0.92, 0.92, 1)
        [band] = [b for b in row["bands"] if b["requests"] > 0]
        assert (band["low"], band["wrong"], band["right"]) == (0.86, 1.0, 0.0)
        assert band["wrong_rate"] > 0.1  # a wrong label raises its band's estimate over the prior's
        assert await gw.metric(f'deja_threshold{{namespace="{row["namespace"]}"}}') == 0.92
        page = await gw.client.get("/deja/admin/overview", headers=ADMIN)
        assert page.status_code == 200 and '<table id="thresholds">' in page.text


@pytest.mark.asyncio
async def test_with_learning_off_no_threshold_is_learned(tmp_path: Path) -> None:
    async with inprocess_gateway(tmp_path, learn_threshold=False) as gw:
        await gw.chat("how do i reset my password")
        await gw.chat("how do i reset my password please now")
        assert (await gw.client.get("/deja/budget", headers=ADMIN)).json()["thresholds"] == []
