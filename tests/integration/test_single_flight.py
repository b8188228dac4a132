"""Bursts of identical requests through the real server: 20 at once, the stub upstream answering after 500 ms,
make one upstream call (at most two: one that arrives just as the first is stored may look up, miss, and lead
again) and every caller gets the same answer, plain and streamed, on all three APIs."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import openai
import pytest

from support.stub_upstream import StubUpstream
from tests.integration.conftest import Deployment

pytestmark = pytest.mark.integration

BURST = 20
UPSTREAM_DELAY = 0.5
MESSAGES, RESPONSES = "/v1/messages", "/v1/responses"


@pytest.fixture
def slow_stub(stub: StubUpstream) -> Iterator[StubUpstream]:
    stub.state.delay = UPSTREAM_DELAY
    yield stub
    stub.state.delay = 0.0


def together(send: Callable[[], tuple[str, str]]) -> list[tuple[str, str]]:
    """`BURST` calls of `send` released at the same moment; each returns (answer text, X-Deja-Cache)."""
    start = threading.Barrier(BURST)

    def one() -> tuple[str, str]:
        start.wait()
        return send()

    with ThreadPoolExecutor(BURST) as pool:
        return list(pool.map(lambda _: one(), range(BURST)))


def check(results: list[tuple[str, str]], calls: int) -> None:
    texts = {text for text, _ in results}
    verdicts = sorted(verdict for _, verdict in results)
    assert 1 <= calls <= 2, verdicts
    assert len(texts) == 1 and next(iter(texts)).startswith("answer "), texts
    assert verdicts.count("miss") == calls and verdicts.count("hit-coalesced") + calls + verdicts.count(
        "hit-exact") == BURST


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_a_burst_of_identical_chat_requests_makes_one_upstream_call(
        deployment: Deployment, slow_stub: StubUpstream, api_key: str, stream: bool) -> None:
    question = f"What is the tallest mountain in Africa? ({'streamed' if stream else 'plain'})"

    def send() -> tuple[str, str]:
        with openai.OpenAI(base_url=deployment.url + "/v1", api_key=api_key, max_retries=0, timeout=20) as c:
            messages: list[openai.types.chat.ChatCompletionMessageParam] = [{"role": "user", "content": question}]
            if not stream:
                raw = c.chat.completions.with_raw_response.create(model="gpt-4o-mini", messages=messages)
                return raw.parse().choices[0].message.content or "", raw.headers["x-deja-cache"]
            with c.chat.completions.with_streaming_response.create(
                    model="gpt-4o-mini", messages=messages, stream=True) as sse:
                text = "".join(ch.choices[0].delta.content or "" for ch in sse.parse() if ch.choices)
                return text, sse.headers["x-deja-cache"]

    results = together(send)
    check(results, len(slow_stub.state.chat_calls()))
    assert "hit-coalesced" in {verdict for _, verdict in results}


@pytest.mark.parametrize("path", [MESSAGES, RESPONSES], ids=["messages", "responses"])
def test_a_burst_on_the_other_apis_makes_one_upstream_call(
        deployment: Deployment, slow_stub: StubUpstream, api_key: str, path: str) -> None:
    if path == MESSAGES:
        body: dict[str, object] = {"model": "claude-test", "max_tokens": 64,
                                   "messages": [{"role": "user", "content": "Why is the sea salty?"}]}
        headers = {"x-api-key": api_key, "anthropic-version": "2023-06-01"}
    else:
        body, headers = {"model": "gpt-test", "input": "Why is the sea salty?"}, {"Authorization": f"Bearer {api_key}"}

    def send() -> tuple[str, str]:
        response = httpx.post(deployment.url + path, json=body, headers=headers, timeout=20)
        assert response.status_code == 200, response.text
        text = response.text[response.text.index("answer "):].split('"')[0]
        return text, response.headers["x-deja-cache"]

    results = together(send)
    check(results, len(slow_stub.state.calls_to(path)))
