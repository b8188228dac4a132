"""Learned verifier stage: a small cross-encoder reads both prompts and gives a calibrated P(same answer).

The shipped model (index/data/verifier/) holds only what fine-tuning changed: the first layers of the
bundled all-MiniLM-L6-v2 and a classifier head. Word embeddings were frozen in training and are read from
the bundled model, whose hash the metadata records and this module checks on load.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from index.embedder import bundled_model_path
from index.errors import VerifierModelError
from index.stages import StageResult

WEIGHTS_FILE = "model.safetensors"
CONFIG_FILE = "config.json"
METADATA_FILE = "metadata.json"
WORD_EMBEDDINGS = "embeddings.word_embeddings.weight"
KIND = "cross_encoder"


def shipped_model_dir() -> Path:
    """Folder of the verifier model shipped inside the `index` package."""
    return Path(str(resources.files("index").joinpath("data", "verifier")))


@dataclass(frozen=True)
class Calibration:
    """Monotone map from the model's raw logit to P(same answer): linear between fitted knots, clipped outside."""

    xs: tuple[float, ...]
    ys: tuple[float, ...]

    def __post_init__(self) -> None:
        if len(self.xs) != len(self.ys) or not self.xs:
            raise ValueError("calibration needs as many ys as xs, and at least one knot")
        if any(b < a for a, b in zip(self.xs, self.xs[1:], strict=False)):
            raise ValueError("calibration xs must be sorted")
        if not all(0.0 <= y <= 1.0 for y in self.ys):
            raise ValueError("calibration ys must be probabilities")

    def probabilities(self, raw: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        return np.interp(raw, self.xs, self.ys)


@dataclass(frozen=True)
class VerifierMetadata:
    """What the runtime needs from metadata.json (the file also records data hashes, metrics, licences)."""

    base_model: str
    base_embeddings_sha256: str
    layers: int
    max_length: int
    min_probability: float
    calibration: Calibration

    @classmethod
    def read(cls, model_dir: Path) -> VerifierMetadata:
        try:
            raw: dict[str, Any] = json.loads((model_dir / METADATA_FILE).read_text(encoding="utf-8"))
        except FileNotFoundError as exc:
            raise VerifierModelError(f"no verifier metadata in {model_dir}") from exc
        if raw.get("kind") != KIND:
            raise VerifierModelError(f"verifier kind {raw.get('kind')!r} is not {KIND!r}")
        cal = raw["calibration"]
        return cls(
            base_model=str(raw["base_model"]),
            base_embeddings_sha256=str(raw["base_embeddings_sha256"]),
            layers=int(raw["layers"]),
            max_length=int(raw["max_length"]),
            min_probability=float(raw["min_probability"]),
            calibration=Calibration(tuple(map(float, cal["xs"])), tuple(map(float, cal["ys"]))),
        )


def embeddings_sha256(tensor: Any) -> str:
    """SHA-256 of a float32 tensor's bytes, to tie the shipped layers to the word embeddings they were tuned on."""
    return hashlib.sha256(tensor.contiguous().numpy().astype(np.float32).tobytes()).hexdigest()


class CrossEncoderScorer:
    """Raw logits of the fine-tuned cross-encoder for (query, cached) pairs; thread-safe, deterministic."""

    def __init__(self, model_dir: Path, meta: VerifierMetadata, base_path: Path | None = None) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        import torch
        from safetensors import safe_open
        from safetensors.torch import load_file
        from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

        base = base_path or bundled_model_path()
        with safe_open(str(base / WEIGHTS_FILE), framework="pt") as handle:
            words = handle.get_tensor(WORD_EMBEDDINGS)
        if embeddings_sha256(words) != meta.base_embeddings_sha256:
            raise VerifierModelError(f"bundled {meta.base_model} differs from the one the verifier was tuned on")
        config = BertConfig.from_json_file(str(model_dir / CONFIG_FILE))
        model = BertForSequenceClassification(config)
        state = {name: tensor.to(torch.float32) for name, tensor in load_file(str(model_dir / WEIGHTS_FILE)).items()}
        state[f"bert.{WORD_EMBEDDINGS}"] = words
        missing, unexpected = model.load_state_dict(state, strict=False)
        if [name for name in missing if not name.endswith("position_ids")] or unexpected:
            raise VerifierModelError(f"verifier weights do not fit the config: {missing[:3]} {unexpected[:3]}")
        self._torch = torch
        model.train(False)  # inference mode: no dropout
        self._model = model
        self._tokenizer = AutoTokenizer.from_pretrained(str(base))
        self._max_length = meta.max_length
        # Fast tokenizers are not safe to share across threads; one lock also keeps torch calls ordered.
        self._lock = threading.Lock()

    def raw_scores(self, pairs: Sequence[tuple[str, str]], batch_size: int = 64) -> npt.NDArray[np.float64]:
        out = np.empty(len(pairs), dtype=np.float64)
        with self._lock, self._torch.inference_mode():
            for start in range(0, len(pairs), batch_size):
                chunk = pairs[start : start + batch_size]
                encoded = self._tokenizer(
                    [a for a, _ in chunk], [b for _, b in chunk], padding=True, truncation=True,
                    max_length=self._max_length, return_tensors="pt",
                )
                logits = self._model(**encoded).logits[:, 0]
                out[start : start + len(chunk)] = logits.to(self._torch.float64).numpy()
        return out


class VerifierStage:
    """Vetoes a hit unless the calibrated P(same answer) of (query, cached) reaches `min_probability`."""

    name = "verifier"

    def __init__(self, min_probability: float | None = None, model_dir: Path | None = None) -> None:
        folder = model_dir or shipped_model_dir()
        self.metadata = VerifierMetadata.read(folder)
        self.min_probability = self.metadata.min_probability if min_probability is None else min_probability
        if not 0.0 <= self.min_probability <= 1.0:
            raise ValueError(f"min_probability must be a probability in [0, 1], got {self.min_probability}")
        self._scorer = CrossEncoderScorer(folder, self.metadata)

    def probabilities(self, pairs: Sequence[tuple[str, str]]) -> npt.NDArray[np.float64]:
        """Calibrated P(same answer) for each (query, cached) pair."""
        return self.metadata.calibration.probabilities(self._scorer.raw_scores(pairs))

    def probability(self, query: str, cached: str) -> float:
        return float(self.probabilities([(query, cached)])[0])

    def check(self, query: str, cached: str) -> StageResult:
        p = self.probability(query, cached)
        return StageResult(self.name, passed=p >= self.min_probability, reason=f"p(same)={p:.2f}", score=p)
