"""No credential style shares answers: the namespace comes from the credential the upstream sees."""

from __future__ import annotations

import uuid

import httpx
import pytest

from support.stub_upstream import StubUpstream
from tests.integration.conftest import Deployment

pytestmark = pytest.mark.integration


def post(deployment: Deployment, headers: dict[str, str], prompt: str) -> httpx.Response:
    return httpx.post(deployment.url + "/v1/chat/completions", headers=headers, timeout=30,
                      json={"model": "gpt-4o-mini", "messages": [{"role": "user", "content": prompt}]})


def answer(response: httpx.Response) -> str:
    assert response.status_code == 200, response.text
    return str(response.json()["choices"][0]["message"]["content"])


def test_api_key_styles_and_anonymous_callers_never_share_answers(
        deployment: Deployment, stub: StubUpstream) -> None:
    tag = uuid.uuid4().hex
    prompt = f"What is the boiling point of water at sea level? ({tag})"
    first = post(deployment, {"api-key": f"key-A-{tag}"}, prompt)
    assert first.headers["x-deja-cache"] == "miss"
    others = {
        "api-key-B": {"api-key": f"key-B-{tag}"},
        "x-api-key-C": {"x-api-key": f"key-C-{tag}"},
        "no-header": {},
        "empty-bearer": {"Authorization": "Bearer"},
    }
    for style, headers in others.items():
        response = post(deployment, headers, prompt)
        assert response.headers["x-deja-cache"] in ("miss", "bypass"), style
        assert answer(response) != answer(first), style
    assert len(stub.state.chat_calls()) == 1 + len(others)


@pytest.mark.parametrize("headers", [
    pytest.param({}, id="no-header"),
    pytest.param({"Authorization": "Bearer"}, id="empty-bearer"),
])
def test_request_without_credential_is_not_cached(deployment: Deployment, stub: StubUpstream,
                                                  headers: dict[str, str]) -> None:
    prompt = f"Who wrote the novel Middlemarch? ({uuid.uuid4().hex})"
    for _ in range(2):
        response = post(deployment, headers, prompt)
        assert response.headers["x-deja-cache"] == "bypass"
        assert response.headers["x-deja-policy"].startswith("bypass: no credential")
    assert len(stub.state.chat_calls()) == 2


def test_same_key_in_another_header_style_is_the_same_caller(deployment: Deployment) -> None:
    key = f"sk-{uuid.uuid4().hex}"
    prompt = f"How many moons does Mars have? ({key})"
    first = post(deployment, {"x-api-key": key}, prompt)
    second = post(deployment, {"Authorization": f"Bearer {key}"}, prompt)
    assert (first.headers["x-deja-cache"], second.headers["x-deja-cache"]) == ("miss", "hit-exact")
    assert answer(first) == answer(second)
