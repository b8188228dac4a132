"""The label model's protocol: the message it sends and the only replies it reads as a label."""

from __future__ import annotations

import json
from typing import Any

import pytest

from eval.answers import CLOSING_SENTENCES, intent_answer, sampled_answer
from service.label_model import SYSTEM_PROMPT, LabelCase, label_body, parse_verdict
from support.label_stub import LabelStub


def reply(content: Any) -> dict[str, Any]:
    return {"choices": [{"index": 0, "message": {"role": "assistant", "content": content}}]}


@pytest.mark.parametrize(("payload", "expected"), [
    (reply('{"same": true}'), True),
    (reply(' {"same": false}\n'), False),
    (reply('{"same": "yes"}'), None),
    (reply('{"same": 1}'), None),
    (reply("Yes, the same."), None),
    (reply('["same"]'), None),
    (reply(None), None),
    ({"choices": []}, None),
    ({"error": {"message": "rate limited"}}, None),
    (None, None),
], ids=["true", "false-with-spaces", "string", "number", "prose", "list", "null-content", "no-choice", "error",
        "no-body"])
def test_only_a_same_boolean_is_a_label(payload: Any, expected: bool | None) -> None:
    assert parse_verdict(payload) is expected


def test_the_last_user_message_is_one_json_object_and_the_fresh_answer_only_when_fetched() -> None:
    case = LabelCase("ns", "how do i unpin a chat", "how do i pin a chat", served=True)
    body = label_body("label-llm", case, "Tap and hold, then Pin.", None)
    assert body["model"] == "label-llm" and body["messages"][0] == {"role": "system", "content": SYSTEM_PROMPT}
    assert json.loads(body["messages"][-1]["content"]) == {
        "question": "how do i unpin a chat", "cached_question": "how do i pin a chat",
        "cached_answer": "Tap and hold, then Pin."}
    fresh = label_body("label-llm", case, "Tap and hold, then Pin.", "Tap and hold, then Unpin.")
    assert json.loads(fresh["messages"][-1]["content"])["fresh_answer"] == "Tap and hold, then Unpin."


def test_the_label_stub_errs_at_its_set_rate() -> None:
    stub = LabelStub(error_rate=0.1)
    body = label_body("m", LabelCase("ns", "reset my router", "reset my router", True), "a", "b")
    verdicts = [json.loads(stub.content(body))["same"] for _ in range(2000)]
    assert 0.08 < verdicts.count(False) / len(verdicts) < 0.12  # the same questions: every False is an error
    assert all(json.loads(LabelStub().content(body))["same"] for _ in range(20))


def test_the_stub_upstream_can_vary_an_answers_closing_sentence_between_calls() -> None:
    content = intent_answer("router")
    samples = {sampled_answer(content, call) for call in range(len(CLOSING_SENTENCES))}
    assert len(samples) == len(CLOSING_SENTENCES) and all(s.startswith(content) for s in samples)
