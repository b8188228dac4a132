"""Embed each distinct text once, in batches, with progress; and an embedder that remembers its vectors."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from enum import StrEnum

import numpy as np

from index.embedding.embedder import Embedder, Vector

# Called with the number of texts just embedded (drives a progress bar; never required).
Progress = Callable[[int], None]


def unique_texts(texts: Iterable[str]) -> list[str]:
    """Distinct texts in first-seen order."""
    return list(dict.fromkeys(texts))


def embed_unique(
    embedder: Embedder, texts: Iterable[str], batch_size: int = 64, progress: Progress | None = None
) -> dict[str, Vector]:
    """Vector of every distinct text, embedding `batch_size` texts per call."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    distinct = unique_texts(texts)
    vectors: dict[str, Vector] = {}
    for start in range(0, len(distinct), batch_size):
        batch = distinct[start : start + batch_size]
        matrix = np.asarray(embedder.embed(batch), dtype=np.float32)
        for text, row in zip(batch, matrix, strict=True):
            vectors[text] = row
        if progress is not None:
            progress(len(batch))
    return vectors


class MemoEmbedder:
    """An `Embedder` that embeds each distinct text once (replays repeat prompts across thresholds).

    Safe because an embedder is deterministic: the same text always yields the same vector.
    """

    def __init__(self, inner: Embedder, known: dict[str, Vector] | None = None) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.dim = inner.dim
        self._known: dict[str, Vector] = dict(known or {})

    def embed(self, texts: Sequence[str]) -> Vector:
        missing = [text for text in unique_texts(texts) if text not in self._known]
        if missing:
            self._known.update(embed_unique(self.inner, missing))
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self._known[text] for text in texts])


class EmbedderName(StrEnum):
    """Embedders `eval` runs: the gateway's MiniLM (torch or ONNX int8), or a hashed bag of words (lexical baseline)."""

    MINILM = "minilm"
    MINILM_ONNX = "minilm-onnx"  # the same model as an int8 ONNX Runtime export (DEJA_EMBEDDER=onnx)
    HASH = "hash"


def make_embedder(name: EmbedderName) -> Embedder:
    from index.embedding.embedder import HashEmbedder, MiniLMEmbedder, OnnxMiniLMEmbedder

    if name is EmbedderName.HASH:
        return HashEmbedder(dim=256)
    if name is EmbedderName.MINILM_ONNX:
        return OnnxMiniLMEmbedder()
    return MiniLMEmbedder()
