"""`deja reindex`: stored prompts re-embedded for another model; each model's index holds only its own vectors."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from index.embedding.embedder import HashEmbedder, Vector
from index.maintenance import Maintainer
from index.records import Verdict
from index.request.keys import build_key
from index.storage.reindex import reindex
from support.caches import ANSWER, chat_body, sqlite_cache


class ReversedWords(HashEmbedder):
    """Another 'model': same dims, different vectors for the same text."""

    model_id = "fake/reversed-words"

    def embed(self, texts: Sequence[str]) -> Vector:
        return super().embed([" ".join(w[::-1] + "x" for w in t.split()) for t in texts])


PROMPTS = ["how do i reset my account password today", "how do i cancel my yearly plan today"]


def test_reindex_moves_entries_to_the_new_model_while_the_old_index_keeps_serving(tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite"
    old = sqlite_cache(db, HashEmbedder())
    for prompt in PROMPTS:
        old.store_answer(build_key("ns", chat_body(prompt)), ANSWER)

    fresh_new = sqlite_cache(db, ReversedWords())
    assert Maintainer(fresh_new, None).start().added == 0  # the old model's vectors are never loaded

    assert reindex(old.store, ReversedWords(), batch=1) == 2
    assert reindex(old.store, ReversedWords()) == 0  # idempotent

    paraphrase = build_key("ns", chat_body("how do i reset my account password now"))
    assert old.lookup(paraphrase).verdict is Verdict.SEMANTIC_HIT  # old replica still serves from memory
    new = sqlite_cache(db, ReversedWords())
    assert Maintainer(new, None).start().added == 2
    assert new.lookup(paraphrase).verdict is Verdict.SEMANTIC_HIT
    assert Maintainer(sqlite_cache(db, HashEmbedder()), None).start().added == 0
