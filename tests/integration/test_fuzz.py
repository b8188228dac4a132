"""Fuzzing a real gateway: every operation of its OpenAPI schema (schemathesis, valid and invalid inputs) and the
cached API routes, chat first (hypothesis: hostile JSON, surrogates, NUL, control characters, deep nesting, odd
headers). Fixed seed, bounded examples; any 5xx fails. A 4xx must be an error object in the API's shape."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode

from support.stub_upstream import StubUpstream
from tests.integration.conftest import Deployment

pytestmark = pytest.mark.integration

FUZZ_SEED = 20261201
EXAMPLES_PER_OPERATION = 25  # per generation mode (valid, invalid)
CHAT_EXAMPLES = 150  # per cached API route and body shape
ADMIN = {"Authorization": "Bearer admin-secret"}

# Phases without shrinking's long tail: a failure is reported as found, with its request.
FUZZ = settings(max_examples=EXAMPLES_PER_OPERATION, database=None, deadline=None, phases=[Phase.generate],
                suppress_health_check=list(HealthCheck))


def no_server_error(response: httpx.Response | Any, what: str) -> None:
    """httpx responses, or schemathesis's (whose headers map a name to a list of values)."""
    assert response.status_code < 500, f"{what} -> {response.status_code}: {response.text[:500]}"
    content_type = response.headers.get("content-type") or ""
    content_type = content_type[0] if isinstance(content_type, list) else content_type
    if 400 <= response.status_code < 500 and content_type.startswith("application/json") and response.content:
        body = response.json()
        assert "error" in body and body["error"].get("message"), f"{what}: not OpenAI-shaped: {body}"


@pytest.fixture
def examples() -> Iterator[list[int]]:
    counter = [0]
    yield counter
    print(f"\nfuzz examples sent: {counter[0]}")


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE], ids=["valid", "invalid"])
def test_openapi_operations_never_answer_5xx(deployment: Deployment, stub: StubUpstream, examples: list[int],
                                             mode: GenerationMode) -> None:
    schema = schemathesis.openapi.from_url(deployment.url + "/openapi.json", headers=ADMIN)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 10
    for operation in operations:
        if operation.path == "/readyz":
            continue  # 503 while the index loads is its contract

        @seed(FUZZ_SEED)
        @FUZZ
        @given(case=operation.as_strategy(generation_mode=mode))
        def check(case: Any) -> None:
            headers = {**ADMIN, **(case.headers or {})}
            response = case.call(base_url=deployment.url, headers=headers, timeout=30)
            examples[0] += 1
            no_server_error(response, f"{case.method} {case.formatted_path} {case.body!r:.200}")

        try:
            check()
        except Unsatisfiable:  # nothing invalid to generate (an operation without parameters)
            continue


# Any code point, surrogates and controls included.
ANY_TEXT = st.text(st.characters(exclude_categories=()), max_size=30)
JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | ANY_TEXT,
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(ANY_TEXT, inner, max_size=3),
                    max_leaves=12)
PROMPT = st.sampled_from(["What is the capital of France?", "How do I reset my password?",
                          "How can I reset my password?", "Is \ud800 a letter?", "Tell me\u0000 more?"]) | ANY_TEXT
MESSAGE = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "system", "assistant", "tool", "bogus"]) | JSON},
    optional={"content": PROMPT | st.lists(st.fixed_dictionaries({"type": st.just("text"), "text": PROMPT}),
                                           max_size=2) | JSON,
              "name": ANY_TEXT, "tool_calls": JSON})
CHAT_BODY = st.fixed_dictionaries(
    {"model": st.sampled_from(["gpt-4o-mini", ""]) | ANY_TEXT | JSON,
     "messages": st.lists(MESSAGE, min_size=0, max_size=3) | JSON},
    optional={"stream": st.booleans() | JSON, "n": st.integers(-2, 300) | JSON,
              "temperature": st.floats() | JSON, "max_tokens": st.integers() | JSON, "tools": JSON,
              "stream_options": st.just({"include_usage": True}) | JSON, "seed": st.integers()})
MESSAGES_BODY = st.fixed_dictionaries(
    {"model": st.sampled_from(["claude-sonnet-4-5"]) | ANY_TEXT | JSON,
     "max_tokens": st.integers(-1, 5000) | JSON,
     "messages": st.lists(MESSAGE.filter(lambda m: m.get("role") != "system"), max_size=3) | JSON},
    optional={"system": PROMPT | JSON, "stream": st.booleans() | JSON, "temperature": st.floats() | JSON,
              "tools": JSON, "metadata": JSON})
RESPONSES_BODY = st.fixed_dictionaries(
    {"model": st.sampled_from(["gpt-4.1-mini"]) | ANY_TEXT | JSON,
     "input": PROMPT | st.lists(MESSAGE, max_size=3) | JSON},
    optional={"instructions": PROMPT | JSON, "stream": st.booleans() | JSON, "previous_response_id": JSON,
              "store": JSON, "text": JSON, "tools": JSON})
BODIES = {"/v1/chat/completions": CHAT_BODY, "/v1/messages": MESSAGES_BODY, "/v1/responses": RESPONSES_BODY}
# Any byte a client may put in a header value (visible ASCII, space, tab, and obs-text 0x80-0xFF).
HEADER_BYTES = st.binary(max_size=20).map(lambda b: bytes(c for c in b if c == 9 or 32 <= c <= 126 or c >= 128)
                                          .strip())
CACHE_CONTROL = st.sampled_from(["no-cache", "no-store", "max-age=0", "max-age=60", "max-age=inf", "max-age=-1",
                                 "max-age=1e999", "max-age=nan", "max-age=" + "9" * 30]) | HEADER_BYTES
CREDENTIAL = st.sampled_from([{}, {"Authorization": "Bearer sk-fuzz-a"}, {"Authorization": "Bearer"},
                              {"api-key": "key-fuzz-b"}, {"x-api-key": "key-fuzz-c"},
                              {"x-api-key": "key-fuzz-c", "anthropic-version": "2023-06-01"}])


def encode(body: Any, how: str) -> bytes:
    if how == "escaped":
        return json.dumps(body, ensure_ascii=True).encode()
    if how == "raw":  # lone surrogates as raw (invalid UTF-8) bytes
        return json.dumps(body, ensure_ascii=False).encode("utf-8", "surrogatepass")
    return b'{"model":"m","messages":[{"role":"user","content":"hi?"}],"tools":' + b"[" * 3000 + b"]" * 3000 + b"}"


@pytest.mark.parametrize("shape", ["json", "bytes"])
@pytest.mark.parametrize("path", sorted(BODIES))
def test_cached_api_routes_never_answer_5xx(deployment: Deployment, stub: StubUpstream, examples: list[int],
                                           path: str, shape: str) -> None:
    """The routes that read JSON themselves (no OpenAPI body schema): Chat Completions, Messages, Responses."""
    body_bytes = (st.tuples(BODIES[path], st.sampled_from(["escaped", "escaped", "raw", "deep"]))
                  .map(lambda pair: encode(*pair)) if shape == "json" else st.binary(max_size=200))

    @seed(FUZZ_SEED)
    @settings(FUZZ, max_examples=CHAT_EXAMPLES)
    @given(content=body_bytes, credential=CREDENTIAL, cache_control=st.none() | CACHE_CONTROL,
           extra=st.none() | HEADER_BYTES)
    def check(content: bytes, credential: dict[str, str], cache_control: Any, extra: bytes | None) -> None:
        headers: dict[str, Any] = {"Content-Type": "application/json", **credential}
        if cache_control is not None:
            headers["Cache-Control"] = cache_control
        if extra is not None:
            headers["X-Client-Note"] = extra
        response = httpx.post(deployment.url + path, content=content, headers=headers, timeout=30)
        examples[0] += 1
        no_server_error(response, f"{path} {headers!r:.200} {content!r:.300}")

    check()
