from __future__ import annotations

from typing import Any

import pytest

from index.request.keys import ContextMatch, LookupMode, build_key, namespace_for

BODY: dict[str, Any] = {
    "model": "gpt-4o-mini", "temperature": 0.2,
    "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is DNS?"}],
}


def test_key_ignores_field_order_and_transport_fields() -> None:
    reordered = {"messages": BODY["messages"], "temperature": 0.2, "model": "gpt-4o-mini", "stream": True,
                 "user": "u-1", "stream_options": {"include_usage": True}}
    assert build_key("ns", reordered).exact == build_key("ns", BODY).exact


@pytest.mark.parametrize("change", [
    pytest.param({"model": "gpt-4o"}, id="model"),
    pytest.param({"temperature": 0.9}, id="temperature"),
    pytest.param({"tools": [{"type": "function", "function": {"name": "f"}}]}, id="tools"),
    pytest.param({"response_format": {"type": "json_object"}}, id="response-format"),
])
def test_parameters_change_exact_and_context_keys(change: dict[str, Any]) -> None:
    a, b = build_key("ns", BODY), build_key("ns", {**BODY, **change})
    assert a.exact != b.exact and a.context != b.context


def test_last_message_changes_exact_key_but_not_context() -> None:
    other = {**BODY, "messages": [BODY["messages"][0], {"role": "user", "content": "What is BGP?"}]}
    a, b = build_key("ns", BODY), build_key("ns", other)
    assert a.exact != b.exact and a.context == b.context
    assert b.prompt == "What is BGP?"


def test_namespace_separates_everything() -> None:
    a, b = build_key("ns1", BODY), build_key("ns2", BODY)
    assert a.exact != b.exact and a.context != b.context


def test_namespace_is_an_hmac_not_the_key() -> None:
    ns = namespace_for("sk-secret", b"server-secret")
    assert "sk-secret" not in ns
    assert ns == namespace_for("sk-secret", b"server-secret") != namespace_for("sk-secret", b"other")


def test_null_parameters_equal_absent_ones() -> None:
    assert build_key("ns", {**BODY, "top_p": None}).exact == build_key("ns", BODY).exact


@pytest.mark.parametrize("body, reason", [
    pytest.param({**BODY, "n": 3}, "n>1", id="n"),
    pytest.param({**BODY, "messages": [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": "x"}}]}]}, "non-text content", id="image"),
    pytest.param({**BODY, "messages": [*BODY["messages"], {"role": "tool", "content": "42",
                                                           "tool_call_id": "c1"}]},
                 "last message is tool", id="tool-result"),
    pytest.param({**BODY, "messages": [{"role": "user", "content": "  "}]}, "no question of its own", id="empty"),
    pytest.param({**BODY, "messages": [{"role": "user", "content": "ok, continue"}]}, "no question of its own",
                 id="acknowledgement"),
])
def test_unsafe_requests_are_exact_only(body: dict[str, Any], reason: str) -> None:
    key = build_key("ns", body)
    assert key.mode is LookupMode.EXACT_ONLY and key.mode_reason == reason


def test_text_parts_are_joined_into_the_prompt() -> None:
    body = {**BODY, "messages": [{"role": "user", "content": [{"type": "text", "text": "Hello"},
                                                              {"type": "text", "text": "world"}]}]}
    key = build_key("ns", body)
    assert key.mode is LookupMode.FULL and key.prompt == "Hello\nworld"


CONVERSATION: dict[str, Any] = {"model": "m", "messages": [
    {"role": "system", "content": "Be brief."}, {"role": "user", "content": "I use the Team plan."},
    {"role": "assistant", "content": "Noted."}, {"role": "user", "content": "How much is it per seat?"}]}


def test_semantic_context_keys_conversations_by_scope_and_relevant_context() -> None:
    reworded = {**CONVERSATION, "messages": [CONVERSATION["messages"][0],
                                             {"role": "user", "content": "We are on the Team plan."},
                                             *CONVERSATION["messages"][2:]]}
    a, b = build_key("ns", CONVERSATION), build_key("ns", reworded)
    assert a.context != b.context and a.scope == b.scope
    assert a.context_text is not None and "Team plan" in a.context_text


def test_exact_context_match_keeps_the_old_rule() -> None:
    key = build_key("ns", CONVERSATION, ContextMatch.EXACT)
    assert key.scope == key.context and key.context_text is None


def test_tool_conversations_keep_exact_context() -> None:
    body = {**CONVERSATION, "messages": [*CONVERSATION["messages"][:2],
                                         {"role": "assistant", "tool_calls": [{"id": "1"}]},
                                         {"role": "tool", "tool_call_id": "1", "content": "{}"},
                                         {"role": "user", "content": "And the price?"}]}
    key = build_key("ns", body)
    assert key.scope == key.context and key.context_text is None


def test_small_talk_and_unrelated_turns_drop_out_of_the_context() -> None:
    body = {"model": "m", "messages": [
        {"role": "user", "content": "Hi there!"}, {"role": "assistant", "content": "Hello!"},
        {"role": "user", "content": "Is there a dark mode in the editor?"}, {"role": "assistant", "content": "Yes."},
        {"role": "user", "content": "My invoice for March shows a duplicate charge."},
        {"role": "assistant", "content": "I see the duplicate charge on your March invoice."},
        {"role": "user", "content": "Can you refund it?"}]}
    context = build_key("ns", body).context_text
    assert context is not None and "March" in context and "dark mode" not in context and "Hi there" not in context
