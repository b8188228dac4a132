"""Keys read text in one Unicode form without invisible characters, and numbers in one spelling; requests longer
than the decision's cap are matched exactly only."""

from __future__ import annotations

from typing import Any

import pytest

from index.request.keys import LookupMode, build_key, chat_request, key_for
from index.request.textnorm import canonical_value, matching_text

NFC, NFD = "Where is the caf\u00e9 near the station?", "Where is the cafe\u0301 near the station?"


def chat(text: str, **params: Any) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "user", "content": text}], **params}


@pytest.mark.parametrize("variant", [
    pytest.param(NFD, id="decomposed"),
    pytest.param("Where is the caf\u00e9\u200d near the station?", id="zero-width-joiner"),
    pytest.param("Where is the caf\u00e9 near the\u200b station?", id="zero-width-space"),
    pytest.param("\ufeffWhere is the caf\u00e9 near the station?", id="byte-order-mark"),
    pytest.param("Where is the caf\u00e9 near the sta\u00adtion?", id="soft-hyphen"),
    pytest.param("Where is the caf\u00e9 near the\u00a0station?", id="no-break-space"),
    pytest.param("Where is the cafe\u200b\u0301 near the station?", id="mark-after-invisible"),
])
def test_unicode_spellings_of_one_prompt_share_the_exact_key_and_prompt(variant: str) -> None:
    assert variant != NFC
    a, b = build_key("ns", chat(NFC)), build_key("ns", chat(variant))
    assert a.exact == b.exact and a.prompt == b.prompt == NFC


@pytest.mark.parametrize("a, b", [
    pytest.param({"temperature": 0}, {"temperature": 0.0}, id="temperature"),
    pytest.param({"top_p": 1}, {"top_p": 1.0}, id="top-p"),
    pytest.param({"max_tokens": 100}, {"max_tokens": 100.0}, id="max-tokens"),
    pytest.param({"tools": [{"type": "function", "function": {"name": "f", "parameters": {"minimum": 2}}}]},
                 {"tools": [{"type": "function", "function": {"name": "f", "parameters": {"minimum": 2.0}}}]},
                 id="nested"),
])
def test_number_spellings_share_one_key(a: dict[str, Any], b: dict[str, Any]) -> None:
    assert build_key("ns", chat(NFC, **a)).exact == build_key("ns", chat(NFC, **b)).exact


@pytest.mark.parametrize("a, b", [
    pytest.param({"temperature": 0.5}, {"temperature": 0.0}, id="other-number"),
    pytest.param({"logprobs": True}, {"logprobs": 1}, id="bool-is-not-a-number"),
])
def test_different_values_keep_different_keys(a: dict[str, Any], b: dict[str, Any]) -> None:
    assert build_key("ns", chat(NFC, **a)).exact != build_key("ns", chat(NFC, **b)).exact


def test_accent_that_changes_the_word_changes_the_key() -> None:
    assert build_key("ns", chat("How old is the a\u00f1o?")).exact != build_key("ns", chat("How old is the ano?")).exact


def test_canonical_value_never_mutates_its_input() -> None:
    body = {"t": 1.0, "m": [{"c": NFD}]}
    assert canonical_value(body) == {"t": 1, "m": [{"c": NFC}]}
    assert body == {"t": 1.0, "m": [{"c": NFD}]}
    assert matching_text("plain ascii") == "plain ascii"


def test_prompt_past_the_decision_cap_gets_exact_hits_only() -> None:
    short, long = chat("x" * 99 + "?"), chat("x" * 100 + "?")
    assert key_for("ns", chat_request(short), max_decision_chars=100).mode is LookupMode.FULL
    key = key_for("ns", chat_request(long), max_decision_chars=100)
    assert key.mode is LookupMode.EXACT_ONLY and key.mode_reason == "prompt longer than 100 characters"
