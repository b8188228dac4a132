"""Issue 12's cases in-process (milliseconds): hostile input is a 4xx in OpenAI's shape, credentials never share
answers, broken upstream answers are errors and never stored. The same cases run against a real uvicorn
gateway in tests/integration/test_hostile_input.py and test_credentials.py."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from support.inprocess import ADMIN_TOKEN, InProcessGateway, inprocess_gateway

pytestmark = pytest.mark.asyncio

ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
PROMPT = "how do i reset my password"


@pytest_asyncio.fixture
async def gw(tmp_path: Path) -> AsyncIterator[InProcessGateway]:
    async with inprocess_gateway(tmp_path) as gateway:
        yield gateway


def assert_error(status: int, response: object) -> None:
    assert response.status_code == status, response.text  # type: ignore[attr-defined]
    assert response.json()["error"]["message"]  # type: ignore[attr-defined]
    assert response.headers["x-deja-cache"] == "error"  # type: ignore[attr-defined]


@pytest.mark.parametrize("body", [
    pytest.param(b'{"model":"m","messages":[{"role":"user","content":"hi"}],"x":' + b"[" * 3000 + b"]" * 3000
                 + b"}", id="deep"),
    pytest.param(b'{"model":"m","messages":[{"role":"user","content":"\\ud800"}]}', id="escaped-surrogate"),
    pytest.param(b'{"model":"m","messages":[{"role":"user","content":"\xed\xa0\x80"}]}', id="raw-surrogate"),
])
@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/deja/feedback", "/deja/invalidate"])
async def test_hostile_json_is_a_400(gw: InProcessGateway, path: str, body: bytes) -> None:
    response = await gw.client.post(path, content=body, headers={"Content-Type": "application/json", **ADMIN})
    assert_error(400, response)


async def test_validation_errors_are_openai_shaped_400s(gw: InProcessGateway) -> None:
    response = await gw.client.post("/v1/deja/feedback", json={"request_id": 5}, headers=ADMIN)
    assert_error(400, response)
    assert response.json()["error"]["param"] in ("request_id", "correct")


@pytest.mark.parametrize("max_age", ["inf", "1e999", "nan", "-1"])
async def test_unusable_max_age_is_a_400(gw: InProcessGateway, max_age: str) -> None:
    assert_error(400, await gw.chat(PROMPT, headers={"Cache-Control": f"max-age={max_age}"}))


async def test_max_age_zero_is_never_served(gw: InProcessGateway) -> None:
    await gw.chat(PROMPT, headers={"Cache-Control": "max-age=0"})
    assert (await gw.chat(PROMPT)).headers["x-deja-cache"] == "miss"


@pytest.mark.parametrize("method", ["GET", "DELETE"])
async def test_entry_id_beyond_64_bits_is_a_400(gw: InProcessGateway, method: str) -> None:
    assert_error(400, await gw.client.request(method, f"/deja/entries/{2**64}", headers=ADMIN))


async def test_control_character_in_pass_through_path_is_a_400(gw: InProcessGateway) -> None:
    assert_error(400, await gw.client.get("/v1/files%0D", headers=ADMIN))
    assert gw.upstream.requests == []


@pytest.mark.parametrize("headers", [
    pytest.param({"api-key": "key-B"}, id="api-key"), pytest.param({"x-api-key": "key-C"}, id="x-api-key"),
    pytest.param({}, id="none"), pytest.param({"Authorization": "Bearer "}, id="empty-bearer")])
async def test_other_credential_styles_never_get_key_a_answer(gw: InProcessGateway, headers: dict[str, str]) -> None:
    first = await gw.chat(PROMPT, key=None, headers={"api-key": "key-A"})
    other = await gw.chat(PROMPT, key=None, headers=headers)
    assert other.headers["x-deja-cache"] in ("miss", "bypass")
    assert other.json()["choices"] != first.json()["choices"]


async def test_shared_namespace_is_an_explicit_opt_in(tmp_path: Path) -> None:
    async with inprocess_gateway(tmp_path, shared_namespace="local-model") as gw:
        verdicts = [(await gw.chat(PROMPT, key=None)).headers["x-deja-cache"] for _ in range(2)]
        assert verdicts == ["miss", "hit-exact"]
        assert (await gw.chat(PROMPT, key="sk-real")).headers["x-deja-cache"] == "miss"


async def test_truncated_upstream_body_is_a_502_and_not_stored(gw: InProcessGateway) -> None:
    gw.upstream.failures.append("truncate")
    assert_error(502, await gw.chat(PROMPT))
    assert (await gw.chat(PROMPT)).headers["x-deja-cache"] == "miss"


async def test_stream_without_done_ends_with_an_error_event_and_is_not_stored(gw: InProcessGateway) -> None:
    gw.upstream.failures.append("no-done")
    response = await gw.chat(PROMPT, stream=True)
    last = [line for line in response.text.splitlines() if line.startswith("data:")][-1]
    assert "error" in json.loads(last[5:])
    assert (await gw.chat(PROMPT)).headers["x-deja-cache"] == "miss"


async def test_upstream_timeout_says_x_deja_cache_error(gw: InProcessGateway) -> None:
    gw.upstream.failures.append("timeout")
    assert_error(504, await gw.chat(PROMPT))
