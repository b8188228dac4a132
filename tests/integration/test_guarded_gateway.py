"""The default decision (guarded) through a real gateway at Deja's defaults: real uvicorn, real MiniLM, a loopback
stub upstream that counts calls. The cosine serves, the gates and the rule stages veto (the learned veto is off by
default), and `X-Deja-Veto` names the step that decided.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import httpx
import pytest

from support.services import GatewayProcess
from support.stub_upstream import StubUpstream
from tests.integration.conftest import base_env


@pytest.fixture(scope="module")
def gateway(stub: StubUpstream, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    data_dir = tmp_path_factory.mktemp("guarded")
    gw = GatewayProcess(base_env(stub, data_dir), data_dir / "gateway.log").start()  # no DEJA_DECISION: the default
    yield gw
    gw.stop()


def chat(url: str, api_key: str, content: str) -> httpx.Response:
    response = httpx.post(url + "/v1/chat/completions", timeout=30, headers={"Authorization": f"Bearer {api_key}"},
                          json={"model": "m", "messages": [{"role": "user", "content": content}]})
    response.raise_for_status()
    return response


@pytest.mark.parametrize(("cached", "asked"), [
    ("How do I reset my password?", "How can I reset my password?"),  # the README's first example
    ("What are the symptoms of dehydration?", "What are the signs of dehydration?"),
], ids=["readme-example", "synonym"])
def test_a_rewording_is_served_from_cache_at_the_defaults(gateway: GatewayProcess, stub: StubUpstream,
                                                         cached: str, asked: str) -> None:
    key = f"sk-{uuid.uuid4().hex}"
    first = chat(gateway.url, key, cached)
    again = chat(gateway.url, key, asked)
    assert again.headers["x-deja-cache"] == "hit-semantic"
    assert "x-deja-probability" not in again.headers  # no learned score is read
    assert again.json()["choices"][0]["message"]["content"] == first.json()["choices"][0]["message"]["content"]
    assert len(stub.state.chat_calls()) == 1


@pytest.mark.parametrize(("cached", "asked", "step"), [
    ("threads about migrating from svn to git", "threads about migrating from git to svn", "order"),
    ("Is the API rate limited?", "Is the API not rate limited?", "polarity"),
    ("How do I pin a message in Slack?", "How do I unpin a message in Slack?", "contrast"),
], ids=["swapped-direction", "negation", "opposite-action"])
def test_a_contrast_is_not_served_and_the_veto_names_its_step(gateway: GatewayProcess, stub: StubUpstream,
                                                             cached: str, asked: str, step: str) -> None:
    key = f"sk-{uuid.uuid4().hex}"
    chat(gateway.url, key, cached)
    near = chat(gateway.url, key, asked)
    assert (near.headers["x-deja-cache"], near.headers["x-deja-reason"]) == ("miss", "vetoed")
    assert near.headers["x-deja-veto"] == step
    assert len(stub.state.chat_calls()) == 2


def test_a_definition_is_never_served_for_a_task_about_the_same_thing(gateway: GatewayProcess,
                                                                      stub: StubUpstream) -> None:
    """The learned scores give these P 0.99; the embedding does not support them, so they are not served."""
    key = f"sk-{uuid.uuid4().hex}"
    chat(gateway.url, key, "What is PyTorch?")
    task = chat(gateway.url, key, "How can I install PyTorch?")
    assert task.headers["x-deja-cache"] == "miss"
    assert task.headers["x-deja-reason"] == "below_threshold"
    assert float(task.headers["x-deja-similarity"]) < 0.92
    assert len(stub.state.chat_calls()) == 2
