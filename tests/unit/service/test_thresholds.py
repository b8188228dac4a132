"""The learned threshold through the in-process gateway at its defaults: a near miss is labelled in the background,
its label lands in the namespace's evidence, and `/deja/budget` and the overview show the threshold in force with
the evidence per band behind it."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from index.match.live_threshold import CONFIDENCE
from index.storage.decision_log import Label, LabelSource
from service.credentials import namespace_of
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
        assert row["holds"] == (row["upper"] <= report["budget"]) and report["confidence"] == CONFIDENCE
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


ADDED = ("shop", "store", "cafe", "kitchen", "counter", "stall", "van", "market", "corner")


def _conversation(topic: str, last: str) -> dict[str, object]:
    return {"model": "gpt-4o-mini", "messages": [
        {"role": "user", "content": f"i run a small {topic} and work there every morning"},
        {"role": "assistant", "content": f"that sounds lovely, how can i help with the {topic}"},
        {"role": "user", "content": last}]}


async def _conversation_hits(gw: InProcessGateway, key: str, topic: str, items: list[str]) -> None:
    """A conversation per item, then its last message with one word added (another each time: no remembered
    difference vetoes it): a conversation hit on its cosine, audited."""
    for n, (item, added) in enumerate(zip(items, ADDED, strict=False), start=1):
        asked = f"what price should i charge for a {item} in my {topic}"
        headers = {"Authorization": f"Bearer {key}"}
        first = await gw.client.post("/v1/chat/completions", json=_conversation(topic, asked), headers=headers)
        assert first.headers["x-deja-cache"] == "miss"
        hit = await gw.client.post("/v1/chat/completions", json=_conversation(topic, f"{asked} {added}"),
                                   headers=headers)
        assert hit.headers["x-deja-cache"] == "hit-semantic", hit.headers.get("x-deja-reason")
        assert await asyncio.to_thread(wait_for, lambda n=n: len(_audits(gw, topic)) == n)


def _audits(gw: InProcessGateway, topic: str) -> list[bool]:
    gw.runtime.flush_decisions()
    return [item.correct for item in gw.runtime.decisions.labeled()
            if item.source is LabelSource.AUDIT and topic in item.decision.prompt]


@pytest.mark.asyncio
async def test_a_namespace_whose_conversation_hits_are_audited_wrong_raises_its_conversation_threshold(
        tmp_path: Path) -> None:
    """Every hit audited; the label model calls the bakery's reworded questions different, the garden's the same.
    The bakery's conversation threshold rises over the hits' cosine and the next such hit is held back; its cosine
    threshold and the garden's conversation threshold stay at their priors."""
    items = ["loaf of sourdough bread", "bag of rye rolls", "tray of butter croissants", "box of cinnamon buns",
             "dozen plain bagels", "slice of carrot cake", "jar of plum jam", "tin of oat biscuits"]
    async with inprocess_gateway(tmp_path, audit_rate=1.0, label_model="label-llm", label_model_error_rate=0.0,
                                 threshold_interval_seconds=3600.0) as gw:
        gw.upstream.labels.rule = lambda question, cached, answer, fresh: "bakery" not in question
        await _conversation_hits(gw, "sk-bakery", "bakery", items)
        await _conversation_hits(gw, "sk-garden", "garden", items[:3])
        assert _audits(gw, "bakery") == [False] * len(items) and _audits(gw, "garden") == [True] * 3
        await gw.upkeep()
        rows = (await gw.client.get("/deja/budget", headers=ADMIN)).json()["thresholds"]
        learned = {(r["namespace"], r["kind"]): (r["threshold"], r["prior"]) for r in rows}
        bakery, garden = (_namespace(gw, key) for key in ("sk-bakery", "sk-garden"))
        threshold, prior = learned[(bakery, "conversation")]
        assert threshold > 0.97 > prior
        assert learned[(garden, "conversation")] == (prior, prior)
        assert (bakery, "cosine") not in learned or learned[(bakery, "cosine")] == (0.92, 0.92)
        asked = "what price should i charge for a pot of honey in my bakery"
        headers = {"Authorization": "Bearer sk-bakery"}
        await gw.client.post("/v1/chat/completions", json=_conversation("bakery", asked), headers=headers)
        held = await gw.client.post("/v1/chat/completions", json=_conversation("bakery", f"{asked} {ADDED[-1]}"),
                                    headers=headers)
        assert (held.headers["x-deja-cache"], held.headers["x-deja-reason"]) == ("miss", "below_threshold")


def _namespace(gw: InProcessGateway, key: str) -> str:
    namespace = namespace_of({"authorization": f"Bearer {key}"}, gw.runtime.credentials, gw.runtime.secret)
    assert namespace is not None
    return namespace


@pytest.mark.asyncio
async def test_a_pass_chooses_again_only_the_streams_whose_evidence_moved_and_a_round_of_upkeep_runs_none(
        tmp_path: Path) -> None:
    async with inprocess_gateway(tmp_path, shadow_labels=False, threshold_interval_seconds=3600.0) as gw:
        rt, keeper = gw.runtime, gw.runtime.threshold_keeper
        await gw.chat("how do i reset my password")
        near = await gw.chat("how do i reset my password please now")
        assert near.headers["x-deja-reason"] == "below_threshold"
        await gw.upkeep()
        assert keeper.chosen == 1  # the new stream, published when it was created
        await gw.upkeep()
        assert keeper.chosen == 0  # nothing moved: nothing chosen
        await gw.chat("please how do i reset my password now")
        await gw.upkeep()
        assert keeper.chosen == 1  # a young stream's mass doubled: published again (an old one's waits for an eighth)
        await gw.upkeep()
        assert keeper.chosen == 0
        label = Label(near.headers["x-deja-request-id"], LabelSource.HUMAN, False, gw.clock())
        await asyncio.to_thread(rt.decisions.label, label)
        version = keeper.version
        await asyncio.to_thread(rt.tick, False)
        assert keeper.version == version  # the upkeep round that replicas catch up in runs no learner pass
        await gw.upkeep()
        assert keeper.chosen == 1 and keeper.version > version
        [state] = keeper.view()
        assert state.labels == 1
