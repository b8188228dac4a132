"""The live false-hit budget through a real gateway (uvicorn, MiniLM, the shipped judge: the default decision)
with `DEJA_LABEL_MODEL` set: audits are labelled by a chat completion the loopback stub answers by a rule the test
sets, `GET /deja/budget` counts them with their bound, and agreeing wrong audits raise the namespace's bar."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

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
        env = base_env(stub, data_dir) | {"DEJA_DECISION": "guarded", "DEJA_LABEL_MODEL": "label-llm",
                                          "DEJA_AUDIT_RATE": "1.0", "DEJA_LABEL_MODEL_ERROR_RATE": "0"}
        gw = GatewayProcess(env, data_dir / "gateway.log").start()
        yield gw, stub
        gw.stop()


def chat(url: str, api_key: str, content: str) -> httpx.Response:
    response = httpx.post(url + "/v1/chat/completions", timeout=30, headers={"Authorization": f"Bearer {api_key}"},
                          json={"model": "m", "messages": [{"role": "user", "content": content}]})
    response.raise_for_status()
    return response


def budget_row(url: str, audited: int) -> dict[str, Any] | None:
    report = httpx.get(url + "/deja/budget", headers=ADMIN, timeout=10).json()
    assert report["budget"] == 0.02
    rows = [row for row in report["namespaces"] if row["audited"] == audited]
    return rows[0] if rows else None


def test_audits_are_labelled_by_the_label_model_and_agreeing_wrong_ones_raise_the_bar(
        deployment: tuple[GatewayProcess, StubUpstream]) -> None:
    gw, stub = deployment
    key = "sk-budget"
    chat(gw.url, key, CANCEL[0])
    assert chat(gw.url, key, CANCEL[1]).headers["x-deja-cache"] == "hit-semantic"
    right = wait_for(lambda: budget_row(gw.url, audited=1))
    assert right is not None and (right["served"], right["wrong"], right["estimate"]) == (1, 0, 0.0)
    prior_bar = right["bar"]
    assert 0.0 < prior_bar < 1.0

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
    assert once is not None and (once["served"], once["wrong"], once["estimate"]) == (2, 1, 0.5)
    assert once["upper"] == pytest.approx(0.9747, abs=1e-4)  # one-sided 95% Clopper-Pearson, 1 of 2
    assert once["bar"] == pytest.approx(prior_bar)  # one wrong label is an anecdote
    assert chat(gw.url, key, CANCEL[3]).headers["x-deja-cache"] == "hit-semantic"
    twice = wait_for(lambda: budget_row(gw.url, audited=3))
    assert twice is not None and (twice["served"], twice["wrong"]) == (3, 2)
    assert twice["bar"] == pytest.approx(1 - (1 - prior_bar) / 2)  # one step up
    assert twice["audits_to_trust"] is not None and twice["audits_to_trust"] > 0
    evidence = httpx.get(gw.url + "/deja/budget/evidence", headers=ADMIN, timeout=10).json()
    assert [(c["old_level"], c["new_level"], c["audited"], c["wrong"]) for c in evidence["bar_changes"]] == [
        (0, 1, 3, 2)]
    metrics = httpx.get(gw.url + "/metrics", timeout=10).text
    assert 'deja_label_calls_total{outcome="labelled"} 3.0' in metrics
    assert f'deja_budget_wrong{{api="chat",namespace="{twice["namespace"]}"}} 2.0' in metrics


def stub_answer(stub: StubUpstream, prompt: str) -> str:
    return intent_answer(stub.state.answers[prompt])
