from __future__ import annotations

from index.embedding.embedder import HashEmbedder
from service.labels import answer_text, compare_answers


def completion(text: str) -> dict[str, object]:
    return {"choices": [{"index": 0, "message": {"role": "assistant", "content": text}}]}


def test_same_text_modulo_case_and_punctuation_agrees_without_embedding() -> None:
    result = compare_answers("Yes, it is.", "yes it is", HashEmbedder(), 0.99)
    assert result.same and result.detail == "same text"


def test_different_answers_disagree_once_the_upstreams_variation_is_known() -> None:
    fresh, cached = "Enable it in Settings > Security.", "Paris is the capital of France."
    assert compare_answers(fresh, cached, HashEmbedder(), 0.95).same is None  # variation unknown: no label
    result = compare_answers(fresh, cached, HashEmbedder(), 0.95, second_fresh="Enable it in Settings > Security!")
    assert result.same is False and result.similarity < 0.95


def test_answer_text_includes_tool_calls() -> None:
    body = {"choices": [{"message": {"content": None, "tool_calls": [
        {"function": {"name": "lookup", "arguments": "{\"id\": 1}"}}]}}]}
    assert answer_text(body) == "\nlookup({\"id\": 1})"
    assert answer_text(completion("hi")) == "hi"
