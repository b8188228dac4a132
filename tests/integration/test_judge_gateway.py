"""Judge mode (DEJA_DECISION=judge, not the default) through a real gateway: real uvicorn, real MiniLM, the
shipped judge.

A negated or value-changed prompt is not served while a paraphrase is, and every decision logs the judge's
version and probability.
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from index.judge.model import load_judge
from index.match.policy import DecisionMode
from support.services import GatewayProcess
from support.stub_upstream import StubUpstream
from tests.integration.conftest import base_env

pytestmark = pytest.mark.integration
CACHED = "How do I cancel my subscription?"


@pytest.fixture(scope="module")
def gateway(stub: StubUpstream, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[GatewayProcess, Path]]:
    data_dir = tmp_path_factory.mktemp("judge")
    env = base_env(stub, data_dir) | {"DEJA_DECISION": "judge"}  # judge mode (not the default: guarded)
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
    ("cached", "asked", "reworded"),
    [
        # The controls are rewordings the same-content rule does not serve: the judge's P serves them.
        ("Is the API rate limited?", "Is the API not rate limited?", "Is the API rate-limited at all?"),
        ("What is 15% of 240?", "What is 15% of 420?", "What's 15 percent of 240?"),
        ("How do I freeze bread?", "How do I thaw bread?", "What's the best way to freeze bread?"),
    ],
    ids=["negated", "value-changed", "contrast"],
)
def test_a_changed_question_is_not_served_and_a_rewording_is(gateway: tuple[GatewayProcess, Path],
                                                             cached: str, asked: str, reworded: str) -> None:
    gw, _ = gateway
    key = f"sk-{abs(hash(asked))}"
    chat(gw.url, key, cached)
    assert chat(gw.url, key, asked).headers["x-deja-cache"] == "miss"
    # The control: the same cache serves a rewording, so the miss above is the judge reading the change.
    assert chat(gw.url, key, reworded).headers["x-deja-cache"] == "hit-semantic"


def test_a_paraphrase_is_served_and_the_decision_logs_the_judge(gateway: tuple[GatewayProcess, Path]) -> None:
    gw, data_dir = gateway
    first = chat(gw.url, "sk-para", CACHED)
    again = chat(gw.url, "sk-para", "how do i cancel my subscription")
    assert again.headers["x-deja-cache"] == "hit-semantic"
    assert again.json()["choices"][0]["message"]["content"] == first.json()["choices"][0]["message"]["content"]
    record = logged(data_dir / "deja.db", again.headers["x-deja-request-id"])
    assert record is not None and record["vetoed_by"] is None
    (stage,) = record["stages"]
    assert stage["stage"] == "judge" and stage["passed"] and stage["score"] > 0.5
    assert stage["reason"].startswith(load_judge().version)


def test_a_judge_miss_says_why(gateway: tuple[GatewayProcess, Path]) -> None:
    gw, _ = gateway
    chat(gw.url, "sk-why", "Is the API rate limited?")
    near = chat(gw.url, "sk-why", "Is the API not rate limited?")
    assert near.headers["x-deja-veto"] == "judge_below_bar"


def test_a_synonym_rewording_the_judge_alone_misses_is_served_by_the_pair_model(
        gateway: tuple[GatewayProcess, Path]) -> None:
    from index.embedding.embedder import make_embedder
    from index.match.decide import Deciders, decide
    from index.match.outcome import Candidate, Reason
    from index.settings import Settings

    cached, asked = "What are the symptoms of dehydration?", "What are the signs of dehydration?"
    settings = Settings()
    a, b = make_embedder(settings.embedder).embed([asked, cached])
    judged = dataclasses.replace(settings.policy(), decision=DecisionMode.JUDGE)
    alone = decide(asked, [Candidate(1, cached, float(a @ b))], judged, Deciders(judge=load_judge()))
    assert alone.reason is Reason.BELOW_BAR  # the control: the judge's P alone does not serve it
    gw, data_dir = gateway
    chat(gw.url, "sk-synonym", cached)
    again = chat(gw.url, "sk-synonym", asked)
    assert again.headers["x-deja-cache"] == "hit-semantic"
    record = logged(data_dir / "deja.db", again.headers["x-deja-request-id"])
    assert record is not None
    (stage,) = record["stages"]
    assert "+pair-" in stage["reason"] and stage["score"] >= 0.98
