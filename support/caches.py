"""An in-process `Cache` on its own SQLite file with the lexical embedder, and the chat body and answer that the
index tests store in it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from index.cache import Cache, CacheConfig
from index.embedding.embedder import Embedder, HashEmbedder
from index.match.policy import MatchPolicy
from index.search.hnsw import SemanticIndex
from index.storage.entries import EntryStore, make_engine
from index.storage.exact import LruExactCache

ANSWER = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}]}


def chat_body(text: str) -> dict[str, Any]:
    """A one-message Chat Completions body for model `m`."""
    return {"model": "m", "messages": [{"role": "user", "content": text}]}


def sqlite_cache(db: Path, embedder: Embedder | None = None, config: CacheConfig | None = None) -> Cache:
    """A cache whose entries live in the SQLite file `db` (created), cosine threshold 0.7 unless `config` says."""
    embedder = embedder or HashEmbedder()
    store = EntryStore(make_engine(f"sqlite:///{db}"))
    store.create_schema()
    return Cache(LruExactCache(), store, SemanticIndex(embedder.dim), embedder,
                 config or CacheConfig(MatchPolicy(0.7)))
