"""The context rule through the real gateway, in each API's shape: the same follow-up after another order number
is not served (and the veto header names the context difference); after the same context plus a greeting it is."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest

from support.stub_upstream import StubUpstream
from tests.integration.conftest import Deployment

pytestmark = pytest.mark.integration
SYSTEM = "You answer customers of Parcelly, an online homeware shop."
FOLLOW_UP = "Can you chase it for me?"


def context(order: str, greeting: str = "") -> list[tuple[str, str]]:
    """(role, text) turns before the follow-up."""
    return [("user", f"{greeting}My order {order} was supposed to arrive on Monday and it still isn't here."),
            ("assistant", f"I found order {order}. It left our warehouse with DHL and the tracking shows a delay.")]


def chat_body(turns: list[tuple[str, str]]) -> dict[str, Any]:
    messages = [{"role": "system", "content": SYSTEM}, *({"role": r, "content": t} for r, t in turns)]
    return {"model": "gpt-4o-mini", "messages": [*messages, {"role": "user", "content": FOLLOW_UP}]}


def messages_body(turns: list[tuple[str, str]]) -> dict[str, Any]:
    # blocks for the assistant turn, a string for the user turns: both shapes of Anthropic content
    messages = [{"role": r, "content": [{"type": "text", "text": t}] if r == "assistant" else t} for r, t in turns]
    return {"model": "claude-3-5-haiku-latest", "max_tokens": 200, "system": SYSTEM,
            "messages": [*messages, {"role": "user", "content": FOLLOW_UP}]}


def responses_body(turns: list[tuple[str, str]]) -> dict[str, Any]:
    items = [{"type": "message", "role": r,
              "content": [{"type": "output_text" if r == "assistant" else "input_text", "text": t}]}
             for r, t in turns]
    return {"model": "gpt-4o-mini", "instructions": SYSTEM,
            "input": [*items, {"role": "user", "content": FOLLOW_UP}]}


API: dict[str, tuple[str, Callable[[list[tuple[str, str]]], dict[str, Any]]]] = {
    "chat": ("/v1/chat/completions", chat_body),
    "messages": ("/v1/messages", messages_body),
    "responses": ("/v1/responses", responses_body),
}


def send(deployment: Deployment, api_key: str, api: str, turns: list[tuple[str, str]]) -> httpx.Response:
    path, build = API[api]
    headers = {"Authorization": f"Bearer {api_key}", "x-api-key": api_key, "anthropic-version": "2023-06-01"}
    response = httpx.post(deployment.url + path, json=build(turns), headers=headers, timeout=30)
    assert response.status_code == 200, response.text
    return response


@pytest.mark.parametrize("api", list(API))
def test_the_same_follow_up_after_another_order_number_is_not_served(
        deployment: Deployment, stub: StubUpstream, api_key: str, api: str) -> None:
    assert send(deployment, api_key, api, context("10427")).headers["x-deja-cache"] == "miss"
    other = send(deployment, api_key, api, context("10247"))
    assert other.headers["x-deja-cache"] == "miss"
    assert other.headers["x-deja-veto"] == "context:value"
    assert len(stub.state.calls_to(API[api][0])) == 2


@pytest.mark.parametrize("api", list(API))
def test_the_same_follow_up_after_the_same_context_and_a_greeting_is_served(
        deployment: Deployment, stub: StubUpstream, api_key: str, api: str) -> None:
    assert send(deployment, api_key, api, context("10427")).headers["x-deja-cache"] == "miss"
    again = send(deployment, api_key, api, context("10427", greeting="Hi there, hope you're well! "))
    assert again.headers["x-deja-cache"] == "hit-semantic"
    assert len(stub.state.calls_to(API[api][0])) == 1
