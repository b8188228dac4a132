"""The default decision's learned veto through a real gateway (off by default, turned on here at the bar it was fitted
for, `DEJA_VETO_BELOW=0.6`): real uvicorn, real MiniLM, the shipped judge and pair model. Each test says which step
decided (`X-Deja-Reason`, `X-Deja-Veto`, the logged stages), so none passes because another step happened to serve or
refuse: a changed question is refused by its own step, a paraphrase is served on its cosine with the learned score
read and logged, a plain rewording on its content with none read.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from index.judge.model import load_judge
from support.services import GatewayProcess
from support.stub_upstream import StubUpstream
from tests.integration.conftest import base_env

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def gateway(stub: StubUpstream, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[GatewayProcess, Path]]:
    data_dir = tmp_path_factory.mktemp("learned")
    env = base_env(stub, data_dir) | {"DEJA_DECISION": "guarded",  # the default, stated so the test says it
                                      "DEJA_VETO_BELOW": "0.6"}
    gw = GatewayProcess(env, data_dir / "gateway.log").start()
    yield gw, data_dir
    gw.stop()


def chat(url: str, api_key: str, content: str) -> httpx.Response:
    return httpx.post(url + "/v1/chat/completions", timeout=30, headers={"Authorization": f"Bearer {api_key}"},
                      json={"model": "m", "messages": [{"role": "user", "content": content}]})


def logged(db: Path, request_id: str, timeout: float = 10.0) -> dict[str, Any] | None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        conn = sqlite3.connect(db)
        try:
            row = conn.execute("SELECT stages, vetoed_by FROM deja_decisions WHERE request_id = ?",
                               (request_id,)).fetchone()
        finally:
            conn.close()
        if row is not None:
            return {"stages": json.loads(row[0]), "vetoed_by": row[1]}
        time.sleep(0.1)
    return None


@pytest.mark.parametrize(
    ("cached", "asked", "reason", "veto"),
    [
        ("Is the API rate limited?", "Is the API not rate limited?", "vetoed", "polarity"),
        ("How do I pin a message in Slack?", "How do I unpin a message in Slack?", "vetoed", "contrast"),
        ("What is 15% of 240?", "What is 15% of 420?", "below_threshold", None),
    ],
    ids=["negated", "opposite-action", "value-changed"],
)
def test_a_changed_question_is_not_served_and_says_which_step_refused_it(
        gateway: tuple[GatewayProcess, Path], cached: str, asked: str, reason: str, veto: str | None) -> None:
    gw, _ = gateway
    key = f"sk-{abs(hash(asked))}"
    chat(gw.url, key, cached)
    near = chat(gw.url, key, asked)
    assert (near.headers["x-deja-cache"], near.headers["x-deja-reason"]) == ("miss", reason)
    assert near.headers.get("x-deja-veto") == veto  # a veto names its step; a miss below the threshold has none


@pytest.mark.parametrize("reworded", ["Is the API rate-limited at all?", "What are the signs of dehydration?"])
def test_a_paraphrase_is_served_on_its_cosine_and_the_decision_logs_the_learned_score(
        gateway: tuple[GatewayProcess, Path], reworded: str) -> None:
    gw, data_dir = gateway
    cached = "Is the API rate limited?" if "API" in reworded else "What are the symptoms of dehydration?"
    key = f"sk-{abs(hash(reworded))}"
    first = chat(gw.url, key, cached)
    again = chat(gw.url, key, reworded)
    assert again.headers["x-deja-cache"] == "hit-semantic" and "x-deja-veto" not in again.headers
    assert again.json()["choices"][0]["message"]["content"] == first.json()["choices"][0]["message"]["content"]
    record = logged(data_dir / "deja.db", again.headers["x-deja-request-id"])
    assert record is not None and record["vetoed_by"] is None
    assert [s["stage"] for s in record["stages"]] == ["polarity", "values", "learned"]
    learned = record["stages"][-1]
    assert learned["passed"] and learned["score"] >= 0.6  # DEJA_VETO_BELOW
    assert learned["reason"].startswith(load_judge().version + "+pair-")
    assert float(again.headers["x-deja-probability"]) == pytest.approx(learned["score"], abs=1e-4)


def test_a_plain_rewording_is_served_on_its_content_without_a_learned_score(
        gateway: tuple[GatewayProcess, Path]) -> None:
    gw, data_dir = gateway
    chat(gw.url, "sk-para", "How do I cancel my subscription?")
    again = chat(gw.url, "sk-para", "how do i cancel my subscription")
    assert again.headers["x-deja-cache"] == "hit-semantic" and "x-deja-probability" not in again.headers
    record = logged(data_dir / "deja.db", again.headers["x-deja-request-id"])
    assert record is not None and record["stages"] == []
