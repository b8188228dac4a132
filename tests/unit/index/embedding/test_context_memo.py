"""Conversation contexts are embedded once: repeated context text reuses the memoised (or stored) vector."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from index.embedding.embedder import HashEmbedder, Vector
from index.embedding.memo import ContextMemo
from index.request.keys import build_key
from support.caches import ANSWER, sqlite_cache


class CountingEmbedder(HashEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str]) -> Vector:
        self.texts.extend(texts)
        return super().embed(texts)


def conversation(question: str, context: str = "I am on the Team plan of the billing portal.") -> dict[str, Any]:
    return {"model": "m", "messages": [
        {"role": "user", "content": context},
        {"role": "assistant", "content": "Thanks, I can see the Team plan on your account."},
        {"role": "user", "content": question}]}


def test_a_repeated_context_is_embedded_once(tmp_path: Path) -> None:
    embedder = CountingEmbedder()
    cache = sqlite_cache(tmp_path / "db.sqlite", embedder)
    first = build_key("ns", conversation("How do I reset my password there?"))
    second = build_key("ns", conversation("How can I reset my password there?"))
    assert first.context_text is not None and first.context_text == second.context_text

    cache.store_answer(first, ANSWER)
    embedder.texts.clear()
    vectors = cache.embed_request(second)

    assert embedder.texts == [second.prompt]  # the context was not embedded again
    expected = HashEmbedder().embed([second.prompt, first.context_text])
    assert vectors.context is not None and np.allclose(vectors.context, expected[1])
    assert np.allclose(vectors.prompt, expected[0])


def test_a_stored_context_vector_is_reused_by_another_replica(tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite"
    writer = sqlite_cache(db)
    key = build_key("ns", conversation("How do I reset my password there?"))
    writer.store_answer(key, ANSWER)
    embedder = CountingEmbedder()
    reader = sqlite_cache(db, embedder)
    reader.warm()

    # A reworded context: embedded here, and the stored entry is read as a candidate.
    reworded = build_key("ns", conversation("How can I reset my password there?",
                                            "We are on the Team plan of the billing portal."))
    assert reader.lookup(reworded).candidate_id is not None
    embedder.texts.clear()
    reader.embed_request(build_key("ns", conversation("Where do I change my password there?")))

    assert embedder.texts == ["Where do I change my password there?"]  # the writer's context, from SQL


def test_a_different_context_or_model_is_embedded() -> None:
    memo = ContextMemo(max_items=2)
    memo.put("model-a", "context one", np.ones(4, dtype=np.float32))
    assert memo.get("model-b", "context one") is None
    assert memo.get("model-a", "context one ") is None
    assert memo.get("model-a", "context one") is not None


def test_the_memo_is_bounded_and_evicts_the_least_recently_used() -> None:
    memo = ContextMemo(max_items=2)
    for text in ("a", "b"):
        memo.put("m", text, np.ones(4, dtype=np.float32))
    assert memo.get("m", "a") is not None  # a is now the most recent
    memo.put("m", "c", np.ones(4, dtype=np.float32))
    assert len(memo) == 2 and memo.get("m", "b") is None and memo.get("m", "a") is not None
    off = ContextMemo(max_items=0)
    off.put("m", "a", np.ones(4, dtype=np.float32))
    assert off.get("m", "a") is None
