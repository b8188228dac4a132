"""Multi-turn requests through the real gateway: same situation reworded hits, a changed situation misses."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from support.stub_upstream import StubUpstream
from tests.integration.conftest import Deployment

pytestmark = pytest.mark.integration
SYSTEM = {"role": "system", "content": "You are the support assistant of a subscription marketplace."}


def chat(deployment: Deployment, api_key: str, messages: list[dict[str, Any]]) -> httpx.Response:
    return httpx.post(deployment.url + "/v1/chat/completions", timeout=30,
                      headers={"Authorization": f"Bearer {api_key}"},
                      json={"model": "gpt-4o-mini", "messages": [SYSTEM, *messages]})


def turns(*texts: str) -> list[dict[str, Any]]:
    roles = ["user", "assistant"]
    return [{"role": roles[i % 2], "content": text} for i, text in enumerate(texts)]


STREAMING = turns("I pay monthly for the StreamMax video streaming plan.",
                  "Thanks, I can see your StreamMax monthly subscription.", "Cancel it.")
STREAMING_REWORDED = turns("Hello!", "Hi! How can I help?",
                           "I have a monthly StreamMax video streaming subscription.",
                           "Got it, your StreamMax monthly subscription is on file.", "Cancel it.")
GREETED = [*turns("Hello there!", "Hi! How can I help?"), *STREAMING]
GYM = turns("I pay monthly for the FitClub gym membership plan.",
            "Thanks, I can see your FitClub monthly membership.", "Cancel it.")


def test_a_greeting_before_the_same_thread_is_a_semantic_hit(deployment: Deployment, stub: StubUpstream,
                                                             api_key: str) -> None:
    first = chat(deployment, api_key, STREAMING)
    second = chat(deployment, api_key, GREETED)
    assert (first.headers["x-deja-cache"], second.headers["x-deja-cache"]) == ("miss", "hit-semantic")
    assert second.json()["choices"][0]["message"]["content"] == first.json()["choices"][0]["message"]["content"]
    assert len(stub.state.chat_calls()) == 1


def test_a_reworded_thread_is_a_miss_not_a_guess(deployment: Deployment, stub: StubUpstream, api_key: str) -> None:
    """What a follow-up depends on is compared word for word: a changed word may be a changed detail."""
    chat(deployment, api_key, STREAMING)
    second = chat(deployment, api_key, STREAMING_REWORDED)
    assert (second.headers["x-deja-cache"], second.headers.get("x-deja-veto")) == ("miss", "context:content")
    assert len(stub.state.chat_calls()) == 2


SETTLED = turns("My card ending 4242 was charged twice for order 7781.",
                "I can see both charges on card 4242; the second one is refunded today.")
STANDALONE = "How do I reset my router password?"


def test_a_question_that_stands_on_its_own_after_unrelated_history_is_served_a_single_turn_answer(
        deployment: Deployment, stub: StubUpstream, api_key: str) -> None:
    first = chat(deployment, api_key, turns(STANDALONE))
    second = chat(deployment, api_key, [*SETTLED, *turns(STANDALONE)])
    assert (first.headers["x-deja-cache"], second.headers["x-deja-cache"]) == ("miss", "hit-semantic")
    assert len(stub.state.chat_calls()) == 1


def test_small_talk_the_thread_takes_nothing_from_is_a_semantic_hit(deployment: Deployment, stub: StubUpstream,
                                                                    api_key: str) -> None:
    chat(deployment, api_key, STREAMING)
    talk = turns("Big fan of your catalogue, it got me through a rainy winter.", "That's lovely to hear!")
    second = chat(deployment, api_key, [*talk, *STREAMING])
    assert second.headers["x-deja-cache"] == "hit-semantic", dict(second.headers)
    assert len(stub.state.chat_calls()) == 1


def test_a_follow_up_that_asks_to_act_after_the_same_history_is_not_a_single_turn(
        deployment: Deployment, stub: StubUpstream, api_key: str) -> None:
    """"Can you cancel my subscription?" acts on the thread's subscription: another thread is another situation."""
    chat(deployment, api_key, [*STREAMING[:2], *turns("Can you cancel my subscription?")])
    other = chat(deployment, api_key, [*GYM[:2], *turns("Can you cancel my subscription?")])
    assert other.headers["x-deja-cache"] == "miss"
    assert len(stub.state.chat_calls()) == 2


def test_same_last_message_about_another_entity_is_a_miss(deployment: Deployment, stub: StubUpstream,
                                                          api_key: str) -> None:
    chat(deployment, api_key, STREAMING)
    other = chat(deployment, api_key, GYM)
    assert other.headers["x-deja-cache"] == "miss"
    # a candidate was found and refused, not just absent
    assert other.headers["x-deja-reason"] in ("vetoed", "context_below_threshold")
    assert len(stub.state.chat_calls()) == 2


def test_a_message_without_a_question_of_its_own_is_exact_only(deployment: Deployment, api_key: str) -> None:
    first = chat(deployment, api_key, turns("Write a haiku about autumn.", "Leaves fall...", "continue"))
    again = chat(deployment, api_key, turns("Write a short haiku about autumn.", "Leaves fall...", "continue"))
    assert first.headers["x-deja-policy"] == "exact_only: no question of its own"
    assert again.headers["x-deja-cache"] == "miss"


def tool_turns(result: str) -> list[dict[str, Any]]:
    call = {"id": "call_1", "type": "function", "function": {"name": "get_order", "arguments": "{\"id\": 7}"}}
    return [{"role": "user", "content": "Where is my order 7?"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "call_1", "content": result}]


def test_identical_tool_results_hit_exactly_and_different_ones_never_share(
        deployment: Deployment, stub: StubUpstream, api_key: str) -> None:
    shipped = tool_turns("{\"status\": \"shipped\"}")
    assert chat(deployment, api_key, shipped).headers["x-deja-cache"] == "miss"
    again = chat(deployment, api_key, shipped)
    assert again.headers["x-deja-cache"] == "hit-exact"
    lost = chat(deployment, api_key, tool_turns("{\"status\": \"lost\"}"))
    assert lost.headers["x-deja-cache"] == "miss"
    follow_up = [*shipped, {"role": "assistant", "content": "It has shipped."},
                 {"role": "user", "content": "When will it arrive?"}]
    follow_up_lost = [*tool_turns("{\"status\": \"lost\"}"), {"role": "assistant", "content": "It has shipped."},
                      {"role": "user", "content": "When will it arrive?"}]
    chat(deployment, api_key, follow_up)
    assert chat(deployment, api_key, follow_up_lost).headers["x-deja-cache"] == "miss"
    assert len(stub.state.chat_calls()) == 4
