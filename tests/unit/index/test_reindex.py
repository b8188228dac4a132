"""`deja reindex`: stored prompts re-embedded for another model; each model's index holds only its own vectors."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from index.cache import Cache, CacheConfig
from index.embedder import Embedder, HashEmbedder, Vector
from index.exact import LruExactCache
from index.hnsw import SemanticIndex
from index.keys import build_key
from index.maintenance import Maintainer
from index.policy import MatchPolicy
from index.records import Verdict
from index.reindex import reindex
from index.store import EntryStore, make_engine


class ReversedWords(HashEmbedder):
    """Another 'model': same dims, different vectors for the same text."""

    model_id = "fake/reversed-words"

    def embed(self, texts: Sequence[str]) -> Vector:
        return super().embed([" ".join(w[::-1] + "x" for w in t.split()) for t in texts])


def make_cache(db: Path, embedder: Embedder) -> Cache:
    store = EntryStore(make_engine(f"sqlite:///{db}"))
    store.create_schema()
    return Cache(LruExactCache(), store, SemanticIndex(embedder.dim), embedder, CacheConfig(MatchPolicy(0.7)))


def body(text: str) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "user", "content": text}]}


ANSWER = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}]}
PROMPTS = ["how do i reset my account password today", "how do i cancel my yearly plan today"]


def test_reindex_moves_entries_to_the_new_model_while_the_old_index_keeps_serving(tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite"
    old = make_cache(db, HashEmbedder())
    for prompt in PROMPTS:
        old.store_answer(build_key("ns", body(prompt)), ANSWER)

    fresh_new = make_cache(db, ReversedWords())
    assert Maintainer(fresh_new, None).start().added == 0  # the old model's vectors are never loaded

    assert reindex(old.store, ReversedWords(), batch=1) == 2
    assert reindex(old.store, ReversedWords()) == 0  # idempotent

    paraphrase = build_key("ns", body("how do i reset my account password now"))
    assert old.lookup(paraphrase).verdict is Verdict.SEMANTIC_HIT  # old replica still serves from memory
    new = make_cache(db, ReversedWords())
    assert Maintainer(new, None).start().added == 2
    assert new.lookup(paraphrase).verdict is Verdict.SEMANTIC_HIT
    assert Maintainer(make_cache(db, HashEmbedder()), None).start().added == 0
