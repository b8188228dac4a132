"""Property: whatever the mix of credentials, header styles, identical and paraphrased prompts, no answer ever
reaches a caller other than the one whose credential produced it. The stub tags every answer with the
credentials it saw, so a crossing is visible in the answer itself."""

from __future__ import annotations

import json
import re
import uuid
from collections import Counter
from collections.abc import Iterator

import httpx
import pytest
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

from support.stub_upstream import StubUpstream
from tests.integration.conftest import Deployment

pytestmark = pytest.mark.integration

# Intents, each asked in words that the semantic tier serves from one another.
INTENTS = {
    "password": ["How do I reset my password?", "How can I reset my password?"],
    "csv": ["How do I export my data as CSV?", "How can I export my data as a CSV file?"],
    "docker": ["How do I install Docker on Ubuntu?", "How can I install Docker on Ubuntu?"],
    "2fa": ["How do I enable two-factor authentication?", "How can I turn on two-factor authentication?"],
}
PROMPTS = [(intent, prompt) for intent, prompts in INTENTS.items() for prompt in prompts]
KEYS = [f"key-{i}-{uuid.uuid4().hex[:8]}" for i in range(5)]
# Header styles a caller may use; the same secret in two styles is the same caller (see README).
STYLES = {
    "bearer": lambda key: {"Authorization": f"Bearer {key}"},
    "bearer-lowercase": lambda key: {"authorization": f"bearer {key}"},
    "api-key": lambda key: {"api-key": key},
    "x-api-key": lambda key: {"x-api-key": key},
    "bearer+x-api-key": lambda key: {"Authorization": f"Bearer {key}", "x-api-key": KEYS[0]},
    "none": lambda key: {},
    "empty-bearer": lambda key: {"Authorization": "Bearer"},
}
TAG = re.compile(r"\[credential: ([^\]]*)\]")
REQUEST = st.tuples(st.sampled_from(KEYS), st.sampled_from(sorted(STYLES)), st.sampled_from(PROMPTS),
                    st.booleans())


def expected_tag(key: str, style: str) -> str:
    if style in ("none", "empty-bearer"):
        return "none"
    if style == "bearer+x-api-key":
        return " + ".join(sorted({key, KEYS[0]}))
    return key


@pytest.fixture
def tagging_stub(stub: StubUpstream) -> Iterator[StubUpstream]:
    stub.state.answers = {prompt: intent for intent, prompt in PROMPTS}
    stub.state.tag_credentials = True
    yield stub
    stub.state.tag_credentials = False
    stub.state.answers = {}


def answer_of(response: httpx.Response, stream: bool) -> str:
    assert response.status_code == 200, response.text
    if not stream:
        return str(response.json()["choices"][0]["message"]["content"])
    parts = [json.loads(line[5:]) for line in response.text.splitlines()
             if line.startswith("data:") and line[5:].strip() != "[DONE]"]
    return "".join(str(c["delta"].get("content") or "") for p in parts for c in p.get("choices", []))


def test_no_answer_crosses_credentials(deployment: Deployment, tagging_stub: StubUpstream) -> None:
    verdicts: Counter[str] = Counter()
    crossings: list[str] = []

    @seed(12)
    @settings(max_examples=5, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(requests=st.lists(REQUEST, min_size=20, max_size=40))
    def run(requests: list[tuple[str, str, tuple[str, str], bool]]) -> None:
        for key, style, (_, prompt), stream in requests:
            response = httpx.post(deployment.url + "/v1/chat/completions", headers=STYLES[style](key), timeout=30,
                                  json={"model": "gpt-4o-mini", "stream": stream,
                                        "messages": [{"role": "user", "content": prompt}]})
            answer = answer_of(response, stream)
            verdicts[response.headers["x-deja-cache"]] += 1
            tags = TAG.findall(answer)
            if tags != [expected_tag(key, style)]:
                crossings.append(f"{style} {key} got {tags} ({response.headers['x-deja-cache']}): {prompt}")

    run()
    print(f"\nisolation: {sum(verdicts.values())} requests, {dict(verdicts)}, crossings: {len(crossings)}")
    assert crossings == []
    # The property only means something if the cache served answers: both tiers must have answered.
    assert verdicts["hit-exact"] > 0 and verdicts["hit-semantic"] > 0 and verdicts["bypass"] > 0
