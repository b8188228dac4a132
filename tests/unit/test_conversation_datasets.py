"""datasets/conv2-*.jsonl (`python -m training.data.make_conversations`) and conv3-*.jsonl
(`python -m training.data.make_natural_conversations`): made by their generators, split by family, every kind in
both parts, and each pair in its API's shape reduced by the real dialect to the key `eval` compares."""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

import pytest

from eval.datasets import MUST_NOT_KINDS, SAME_ANSWER_KINDS, load_pairs
from eval.sweep import request_key
from index.request.keys import ContextMatch, key_for
from service.dialects.messages import MessagesDialect
from service.dialects.responses import ResponsesDialect

ROOT = Path(__file__).resolve().parents[2]
PARTS = ("dev", "test")
EXTRA_PARTS = {"conv2": (), "conv3": ("holdout",)}
GENERATORS = {"conv2": "training.data.make_conversations", "conv3": "training.data.make_natural_conversations"}
KINDS = {
    "conv2": {"reworded_context", "chatter", "irrelevant_history", "value_changed", "changed_quantity",
              "changed_account", "swapped_choice", "option_order", "other_intent", "different_context"},
    "conv3": {"reworded_context", "chatter", "irrelevant_history", "reworded_follow_up", "value_changed",
              "swapped_choice", "other_intent", "different_context"},
}
SAME = SAME_ANSWER_KINDS | {"reworded_follow_up"}


def rows(name: str, part: str) -> list[dict[str, Any]]:
    text = (ROOT / "datasets" / f"{name}-{part}.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines()]


@pytest.mark.parametrize("name", GENERATORS)
def test_the_files_are_what_the_generator_makes(name: str) -> None:
    built = importlib.import_module(GENERATORS[name]).build()
    parts = (*PARTS, *EXTRA_PARTS[name])
    assert {part: built[part] for part in parts} == {part: rows(name, part) for part in parts}


@pytest.mark.parametrize("name", GENERATORS)
def test_no_family_is_in_both_parts_and_every_kind_is_in_each(name: str) -> None:
    parts = (*PARTS, *EXTRA_PARTS[name])
    families = {part: {row["family"] for row in rows(name, part)} for part in parts}
    assert all(not families[a] & families[b] for a in parts for b in parts if a < b)
    for part in parts:
        assert {row["kind"] for row in rows(name, part)} == KINDS[name]
        for row in rows(name, part):
            assert row["same_answer"] is (row["kind"] in SAME)
            assert row["kind"] in SAME | MUST_NOT_KINDS


def _messages_body(messages: list[dict[str, str]]) -> dict[str, Any]:
    turns = [{"role": m["role"], "content": [{"type": "text", "text": m["content"]}] if i % 2 else m["content"]}
             for i, m in enumerate(messages) if m["role"] != "system"]
    system = next(m["content"] for m in messages if m["role"] == "system")
    return {"model": "eval", "max_tokens": 100, "system": system, "messages": turns}


def _responses_body(messages: list[dict[str, str]]) -> dict[str, Any]:
    kind = {"user": "input_text", "assistant": "output_text"}
    items = [{"type": "message", "role": m["role"], "content": [{"type": kind[m["role"]], "text": m["content"]}]}
             for m in messages if m["role"] != "system"]
    system = next(m["content"] for m in messages if m["role"] == "system")
    return {"model": "eval", "instructions": system, "input": items}


@pytest.mark.parametrize("name", GENERATORS)
@pytest.mark.parametrize("part", PARTS)
def test_each_pair_in_its_api_shape_gives_the_prompt_and_context_eval_compares(name: str, part: str) -> None:
    pairs = {pair.id: pair for pair in load_pairs(ROOT / "datasets" / f"{name}-{part}.jsonl")}
    dialects = {"messages": (MessagesDialect(), _messages_body), "responses": (ResponsesDialect(), _responses_body)}
    for row in rows(name, part):
        if row["api"] not in dialects:
            continue  # chat: eval's own key is the chat dialect's
        dialect, body = dialects[row["api"]]
        for side in ("a", "b"):
            request = dialect.canonical(dialect.parse(json.dumps(body(row[side])).encode()), {})
            key = key_for("eval", request)
            expected = request_key(getattr(pairs[row["id"]], side), ContextMatch.SEMANTIC)
            assert (key.prompt, key.context_text) == (expected.prompt, expected.context_text), row["id"]

