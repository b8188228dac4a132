"""Memoised context embeddings: a conversation's relevant context repeats turn after turn and across callers, so
its vector is kept in a bounded LRU keyed by a hash of the exact text and the embedder's identity. Vectors enter
from the embedder and from stored entries whose context text matches (read from SQL anyway for the decision)."""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict

from index.embedding.embedder import Vector

# Context vectors kept by default (`DEJA_CONTEXT_MEMO_SIZE`): 384 float32 each, ~1.5 kB, so ~6 MB.
DEFAULT_CONTEXT_MEMO_SIZE = 4096


def memo_key(model_id: str, text: str) -> bytes:
    return hashlib.blake2b(f"{model_id}\0{text}".encode(), digest_size=16).digest()


class ContextMemo:
    """Thread-safe bounded LRU from (embedder identity, exact text) to a vector; size 0 keeps nothing."""

    def __init__(self, max_items: int = DEFAULT_CONTEXT_MEMO_SIZE) -> None:
        if max_items < 0:
            raise ValueError("max_items must be >= 0")
        self.max_items = max_items
        self._items: OrderedDict[bytes, Vector] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, model_id: str, text: str) -> Vector | None:
        key = memo_key(model_id, text)
        with self._lock:
            vector = self._items.get(key)
            if vector is None:
                self.misses += 1
                return None
            self._items.move_to_end(key)
            self.hits += 1
            return vector

    def put(self, model_id: str, text: str, vector: Vector) -> None:
        if self.max_items == 0:
            return
        key = memo_key(model_id, text)
        vector = vector.copy()
        vector.flags.writeable = False  # shared between requests: nobody may change it in place
        with self._lock:
            self._items[key] = vector
            self._items.move_to_end(key)
            while len(self._items) > self.max_items:
                self._items.popitem(last=False)

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)
