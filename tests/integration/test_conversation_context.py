"""The context rule through the real gateway at the defaults, in each API's shape: the same follow-up after another
order number is not served (and the veto header names the context difference); after the same context plus a
greeting, told at length past the embedder's window with small talk (numbers, names, a "not"), or after an
unrelated earlier exchange, it is."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest

from index.embedding.window import beyond_window
from support.stub_upstream import StubUpstream
from tests.integration.conftest import Deployment

pytestmark = pytest.mark.integration
SYSTEM = "You answer customers of Parcelly, an online homeware shop."
FOLLOW_UP = "Can you chase it for me?"


def context(order: str, greeting: str = "") -> list[tuple[str, str]]:
    """(role, text) turns before the follow-up."""
    return [("user", f"{greeting}My order {order} was supposed to arrive on Monday and it still isn't here."),
            ("assistant", f"I found order {order}. It left our warehouse with DHL and the tracking shows a delay.")]


# Small talk around the request: a number, names, a negation, none of which the follow-up depends on.
SMALL_TALK = ("Hi there! My daughter Emma starts school on Monday, so it's been a hectic few days of buying uniforms "
              "and labelling every single sock. I'm writing this from a café in Porto, the coffee here is amazing "
              "and so cheap. I don't usually contact support, I hate bothering people with questions like this. "
              "We had 3 inches of snow last night back home, so my husband Tom is stuck in the house anyway. "
              "I've had about 2 hours of sleep because the baby was up all night, so bear with me. My colleague "
              "Priya said you were really helpful last time she had an issue, and she's never wrong about these "
              "things. It's my 40th birthday tomorrow, ha, so I'd like this off my plate before the party on "
              "Saturday. Anyway, here's the thing. ")
UNRELATED = [("user", "Do you sell gift vouchers?"),
             ("assistant", "We do, in any amount you like, and they never expire.")]


def told_at_length(order: str) -> list[tuple[str, str]]:
    (_, user), (_, assistant) = context(order)
    return [("user", f"{SMALL_TALK}{user} Many thanks, and sorry for the essay!"),
            ("assistant", f"Good luck to Emma on her first day! {assistant}")]


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


@pytest.mark.parametrize("api", list(API))
def test_the_same_follow_up_after_small_talk_that_gives_details_is_not_served(
        deployment: Deployment, stub: StubUpstream, api_key: str, api: str) -> None:
    """Every detail the user gave may be what the answer depends on (a date, a place, a count): when in doubt, a
    miss. The thread told at length differs past the embedder's window, or in its values."""
    assert beyond_window(" ".join(t for _, t in told_at_length("10427")))
    assert send(deployment, api_key, api, context("10427")).headers["x-deja-cache"] == "miss"
    again = send(deployment, api_key, api, told_at_length("10427"))
    assert again.headers["x-deja-cache"] == "miss", dict(again.headers)
    assert len(stub.state.calls_to(API[api][0])) == 2


@pytest.mark.parametrize("api", list(API))
def test_the_same_follow_up_after_an_unrelated_earlier_exchange_is_served(
        deployment: Deployment, stub: StubUpstream, api_key: str, api: str) -> None:
    assert send(deployment, api_key, api, context("10427")).headers["x-deja-cache"] == "miss"
    again = send(deployment, api_key, api, [*UNRELATED, *context("10427")])
    assert again.headers["x-deja-cache"] == "hit-semantic", dict(again.headers)


@pytest.mark.parametrize("api", list(API))
def test_another_order_number_told_at_length_is_not_served(
        deployment: Deployment, stub: StubUpstream, api_key: str, api: str) -> None:
    assert send(deployment, api_key, api, context("10427")).headers["x-deja-cache"] == "miss"
    other = send(deployment, api_key, api, told_at_length("10247"))
    assert other.headers["x-deja-cache"] == "miss"
    assert (other.headers.get("x-deja-reason"), other.headers.get("x-deja-veto")) in {
        ("vetoed", "context:value"), ("beyond_window", None)}
