"""The false-hit budget through a real gateway (uvicorn, MiniLM: the default decision) with `DEJA_LABEL_MODEL`
set: audits are labelled by a chat completion the loopback stub answers by a rule the test sets, and
`GET /deja/budget` shows what the upkeep's pass counted: the tallies, and the learner's one statistic per namespace
and kind."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from index.match.live_threshold import CONFIDENCE
from service.label_model import SYSTEM_PROMPT
from support.services import GatewayProcess
from support.stub_upstream import StubUpstream, intent_answer
from support.waiting import wait_for
from tests.integration.conftest import base_env

pytestmark = pytest.mark.integration
ADMIN = {"Authorization": "Bearer admin-secret"}
CANCEL = ("How do I cancel my subscription?", "how do i cancel my subscription", "How do I cancel my subscription",
          "How can I cancel my subscription?")


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[GatewayProcess, StubUpstream]]:
    """A stub of its own: every hit here is audited, and audits must not land on the shared stub's counts."""
    data_dir = tmp_path_factory.mktemp("budget")
    with StubUpstream(answers={prompt: "cancel" for prompt in CANCEL}) as stub:
        # The default decision, stated so the test says it; every hit is audited so that the test knows which
        # ones are. The stub's label model never errs, and is configured so.
        # The budget's pass runs every half second: a read shows what the last one stored.
        env = base_env(stub, data_dir) | {"DEJA_DECISION": "guarded", "DEJA_LABEL_MODEL": "label-llm",
                                          "DEJA_AUDIT_RATE": "1.0", "DEJA_LABEL_MODEL_ERROR_RATE": "0",
                                          "DEJA_THRESHOLD_INTERVAL_SECONDS": "0.5"}
        gw = GatewayProcess(env, data_dir / "gateway.log").start()
        yield gw, stub
        gw.stop()


def chat(url: str, api_key: str, content: str) -> httpx.Response:
    response = httpx.post(url + "/v1/chat/completions", timeout=30, headers={"Authorization": f"Bearer {api_key}"},
                          json={"model": "m", "messages": [{"role": "user", "content": content}]})
    response.raise_for_status()
    return response


def budget(url: str) -> dict[str, Any]:
    report: dict[str, Any] = httpx.get(url + "/deja/budget", headers=ADMIN, timeout=10).json()
    assert (report["budget"], report["confidence"]) == (0.02, CONFIDENCE)
    return report


def budget_row(url: str, audited: int) -> dict[str, Any] | None:
    rows = [row for row in budget(url)["namespaces"] if row["audited"] == audited]
    return rows[0] if rows else None


def test_audits_are_labelled_by_the_label_model_and_counted_beside_the_learners_statistic(
        deployment: tuple[GatewayProcess, StubUpstream]) -> None:
    gw, stub = deployment
    key = "sk-budget"
    chat(gw.url, key, CANCEL[0])
    assert chat(gw.url, key, CANCEL[1]).headers["x-deja-cache"] == "hit-semantic"
    right = wait_for(lambda: budget_row(gw.url, audited=1))
    assert right is not None and (right["served"], right["wrong"]) == (1, 0)
    assert set(right) == {"namespace", "api", "served", "audited", "wrong"}  # counts: the statistic is the learner's

    [label_call] = [c for c in stub.state.chat_calls() if json.loads(c["body"])["model"] == "label-llm"]
    body = json.loads(label_call["body"])
    assert body["messages"][0] == {"role": "system", "content": SYSTEM_PROMPT}
    assert json.loads(body["messages"][-1]["content"]) == {
        "question": CANCEL[1], "cached_question": CANCEL[0], "cached_answer": stub_answer(stub, CANCEL[0]),
        "fresh_answer": stub_answer(stub, CANCEL[1])}
    assert label_call["headers"]["authorization"] == f"Bearer {key}"  # the caller's credential pays for it

    stub.state.labels.rule = lambda *_: False  # the label model now says every cached answer is wrong
    assert chat(gw.url, key, CANCEL[2]).headers["x-deja-cache"] == "hit-semantic"
    once = wait_for(lambda: budget_row(gw.url, audited=2))
    assert once is not None and (once["served"], once["wrong"]) == (2, 1)
    assert chat(gw.url, key, CANCEL[3]).headers["x-deja-cache"] == "hit-semantic"
    twice = wait_for(lambda: budget_row(gw.url, audited=3))
    assert twice is not None and (twice["served"], twice["wrong"]) == (3, 2)
    # The one statistic, per namespace and kind: the learner's upper bound on wrong ÷ served at its confidence.
    report = budget(gw.url)
    rows = [row for row in report["thresholds"] if row["namespace"] == twice["namespace"]]
    # A namespace whose every hit was a plain rewording (served on its content) has no threshold evidence yet.
    assert report["at"] is not None and {row["kind"] for row in rows} <= {"cosine"}
    assert all(row["holds"] == (row["upper"] <= report["budget"]) for row in rows)
    evidence = httpx.get(gw.url + "/deja/budget/evidence", headers=ADMIN, timeout=10).json()
    assert set(evidence) == {"differences", "threshold_moves"}
    metrics = httpx.get(gw.url + "/metrics", timeout=10).text
    assert 'deja_label_calls_total{outcome="labelled"} 3.0' in metrics
    assert f'deja_budget_wrong{{api="chat",namespace="{twice["namespace"]}"}} 2.0' in metrics
    assert all(f'deja_budget_upper{{kind="{row["kind"]}",namespace="{row["namespace"]}"}}' in metrics for row in rows)
    assert "deja_bar" not in metrics


def stub_answer(stub: StubUpstream, prompt: str) -> str:
    return intent_answer(stub.state.answers[prompt])
