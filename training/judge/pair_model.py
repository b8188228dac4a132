"""Pair model: a cross-encoder that reads a query and a cached prompt and gives a calibrated P(same answer).

Fine-tuned from the bundled all-MiniLM-L6-v2 on question-shaped pairs (training/pair_data.py,
training/train_pair_model.py). Its folder (training/judge/models/pair/, not committed: the product no longer ships
it, docs/learned-veto.md) holds only what fine-tuning changed;
the word embeddings are read from the bundled model, whose hash the metadata records and the loader checks.
A pair is scored in both orders and the logits averaged, so the score is symmetric. `combine` joins the
judge's probability, this model's and the cosine into one P(same answer) with the stack (`Combination`, in
`training.judge.pair_calibration`) fitted by training/eval_pair_model.py and stored in the metadata.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from index.embedding.embedder import bundled_model_path
from index.errors import DejaError
from training.judge.pair_calibration import Combination, PairCalibration

WEIGHTS_FILE = "model.safetensors"
ONNX_FILE = "model.int8.onnx"  # the runtime's export (training/export_pair_model.py): self-contained, int8 weights
CONFIG_FILE = "config.json"
METADATA_FILE = "metadata.json"
WORD_EMBEDDINGS = "embeddings.word_embeddings.weight"
KIND = "pair_cross_encoder"
# The pair P the stack reads is clipped to [PAIR_CLIP, 1 - PAIR_CLIP] (in fitting and at run time).
PAIR_CLIP = 0.02
# Pairs whose ONNX score is kept, least recently read dropped first (two prompts and a float each).
SCORE_MEMO_PAIRS = 8192


class PairModelError(DejaError):
    """The pair-model files are missing, of another kind, or do not match the bundled base model."""


def trained_pair_dir() -> Path:
    """Folder `python -m training.train_pair_model` writes the pair model into (and `PairModel()` reads)."""
    return Path(__file__).resolve().parent / "models" / "pair"


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def embeddings_sha256(tensor: Any) -> str:
    """SHA-256 of a float32 tensor's bytes, to tie the trained layers to the word embeddings they were tuned on."""
    return hashlib.sha256(tensor.contiguous().numpy().astype(np.float32).tobytes()).hexdigest()


@dataclass(frozen=True)
class PairModelMetadata:
    """What the runtime needs from metadata.json (which also records data hashes, licences and metrics)."""

    base_embeddings_sha256: str
    layers: int
    max_length: int
    calibration: PairCalibration
    combination: Combination | None
    weights_sha256: str = ""
    onnx_sha256: str = ""
    # The calibration of the float weights' scores, kept when the ONNX export's replaced it (None = the same).
    calibration_torch: PairCalibration | None = None

    @classmethod
    def read(cls, model_dir: Path) -> PairModelMetadata:
        try:
            raw: dict[str, Any] = json.loads((model_dir / METADATA_FILE).read_text(encoding="utf-8"))
        except FileNotFoundError as exc:
            raise PairModelError(f"no pair-model metadata in {model_dir}") from exc
        if raw.get("kind") != KIND:
            raise PairModelError(f"pair-model kind {raw.get('kind')!r} is not {KIND!r}")
        cal_torch = raw.get("calibration_torch")
        combo = raw.get("combination")
        return cls(
            base_embeddings_sha256=str(raw["base_embeddings_sha256"]),
            layers=int(raw["layers"]),
            max_length=int(raw["max_length"]),
            calibration=PairCalibration.from_json(raw["calibration"]),
            combination=Combination.from_json(combo) if combo else None,
            weights_sha256=str(raw.get("weights_sha256", "")),
            onnx_sha256=str(raw.get("onnx", {}).get("sha256", "")),
            calibration_torch=PairCalibration.from_json(cal_torch) if cal_torch else None,
        )


class PairModel:
    """Calibrated P(same answer) for (query, cached) pairs. Load once; safe to call from several threads.

    Runs the int8 ONNX export (`ONNX_FILE`, on ONNX Runtime, no torch) when the folder holds one, as the trained
    one does; else the float weights on torch (`backend="torch"` forces them: the export reads them so)."""

    def __init__(self, model_dir: Path | None = None, base_path: Path | None = None,
                 backend: str | None = None, threads: int | None = None) -> None:
        folder = model_dir or trained_pair_dir()
        self.metadata = PairModelMetadata.read(folder)
        base = base_path or bundled_model_path()
        self.backend = backend or ("onnx" if (folder / ONNX_FILE).exists() else "torch")
        if self.backend == "onnx":
            self._load_onnx(folder, base, threads)
        else:
            self._load(folder, base)
        # Fast tokenizers are not safe to share across threads; the lock also keeps model calls ordered.
        self._lock = threading.Lock()
        # ONNX scores of pairs read before, most recent last: each pair runs alone, so its score is a pure function
        # of its two texts and a repeated pair (a popular rewording, a retried request) need not run again.
        self._scores: OrderedDict[tuple[str, str], float] = OrderedDict()
        # Pairs the ONNX session has run (a pair answered from the memo does not count).
        self.runs = 0

    def _load_onnx(self, folder: Path, base: Path, threads: int | None) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        path = folder / ONNX_FILE
        if self.metadata.onnx_sha256 and _file_sha256(path) != self.metadata.onnx_sha256:
            raise PairModelError(f"{path} is not the export its metadata describes")
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads or 1  # one pair at a time: more threads only contend
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        try:
            self._session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # ONNX Runtime raises its own exception types
            raise PairModelError(f"cannot load the pair model's ONNX export {path}: {exc}") from exc
        tokenizer = Tokenizer.from_file(str(base / "tokenizer.json"))
        tokenizer.enable_truncation(self.metadata.max_length, strategy="longest_first")
        tokenizer.enable_padding()
        self._pair_tokenizer = tokenizer

    def _load(self, folder: Path, base: Path) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        import torch
        from safetensors import safe_open
        from safetensors.torch import load_file
        from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

        with safe_open(str(base / WEIGHTS_FILE), framework="pt") as handle:
            words = handle.get_tensor(WORD_EMBEDDINGS)
        if embeddings_sha256(words) != self.metadata.base_embeddings_sha256:
            raise PairModelError("the bundled MiniLM differs from the one the pair model was tuned on")
        try:
            config = BertConfig.from_json_file(str(folder / CONFIG_FILE))
            tensors = load_file(str(folder / WEIGHTS_FILE))
        except (OSError, ValueError) as exc:
            raise PairModelError(f"cannot read the pair model in {folder}: {exc}") from exc
        model = BertForSequenceClassification(config)
        state = {name: tensor.to(torch.float32) for name, tensor in tensors.items()}
        state[f"bert.{WORD_EMBEDDINGS}"] = words
        missing, unexpected = model.load_state_dict(state, strict=False)
        if [name for name in missing if not name.endswith("position_ids")] or unexpected:
            raise PairModelError(f"pair-model weights do not fit the config: {missing[:3]} {unexpected[:3]}")
        model.train(False)  # inference mode: no dropout
        self._torch = torch
        self._model = model
        self._tokenizer = AutoTokenizer.from_pretrained(str(base))

    def raw_scores(self, pairs: Sequence[tuple[str, str]], batch_size: int = 32) -> npt.NDArray[np.float64]:
        """Mean logit of (a, b) and (b, a) for each pair. On ONNX each pair runs alone (its two orders in one
        batch): int8 dynamic quantization scales activations per batch, so batch mates would move a score."""
        if not pairs:
            return np.empty(0, dtype=np.float64)
        if self.backend == "onnx":
            return np.array([self._onnx_pair(a, b) for a, b in pairs], dtype=np.float64)
        both = [*pairs, *((b, a) for a, b in pairs)]
        out = self._torch_logits(both, batch_size)
        return np.asarray((out[: len(pairs)] + out[len(pairs) :]) / 2.0)

    def _onnx_pair(self, a: str, b: str) -> float:
        with self._lock:
            known = self._scores.get((a, b))
            if known is not None:
                self._scores.move_to_end((a, b))
                return known
            score = self._onnx_run(a, b)
            self.runs += 1
            self._scores[(a, b)] = score
            if len(self._scores) > SCORE_MEMO_PAIRS:
                self._scores.popitem(last=False)
            return score

    def _onnx_run(self, a: str, b: str) -> float:
        """Both orders of one pair in one batch (the caller holds the lock). The two orders are encoded one by one:
        the batch call fans out to the tokenizer's thread pool, which costs more than it saves for two short pairs
        on a busy machine; both orders truncate to the same length, so no padding is needed (else it pads)."""
        tokenizer = self._pair_tokenizer
        encoded = [tokenizer.encode(a, b), tokenizer.encode(b, a)]
        if len(encoded[0].ids) != len(encoded[1].ids):
            encoded = tokenizer.encode_batch([(a, b), (b, a)])
        feed = {name: np.array([getattr(e, attr) for e in encoded], dtype=np.int64)
                for name, attr in (("input_ids", "ids"), ("attention_mask", "attention_mask"),
                                   ("token_type_ids", "type_ids"))}
        logits = self._session.run(None, feed)[0]
        return float(np.mean(np.asarray(logits, dtype=np.float64)[:, 0]))

    def _torch_logits(self, both: Sequence[tuple[str, str]], batch_size: int) -> npt.NDArray[np.float64]:
        out = np.empty(len(both), dtype=np.float64)
        with self._lock, self._torch.inference_mode():
            for start in range(0, len(both), batch_size):
                chunk = both[start : start + batch_size]
                encoded = self._tokenizer(
                    [a for a, _ in chunk], [b for _, b in chunk], padding=True, truncation=True,
                    max_length=self.metadata.max_length, return_tensors="pt",
                )
                logits = self._model(**encoded).logits[:, 0]
                out[start : start + len(chunk)] = logits.to(self._torch.float64).numpy()
        return out

    def probabilities(self, pairs: Sequence[tuple[str, str]]) -> npt.NDArray[np.float64]:
        """Calibrated P(same answer) for each (query, cached) pair (each backend by its own calibration)."""
        calibration = self.metadata.calibration
        if self.backend == "torch" and self.metadata.calibration_torch is not None:
            calibration = self.metadata.calibration_torch
        return calibration.probabilities(self.raw_scores(pairs))

    def probability(self, query: str, cached: str) -> float:
        return float(self.probabilities([(query, cached)])[0])

    def combine(self, judge_p: float, pair_p: float, cosine: float) -> float:
        return _combination_of(self.metadata).probability(judge_p, pair_p, cosine)


def _combination_of(meta: PairModelMetadata) -> Combination:
    if meta.combination is None:
        raise PairModelError("the pair-model metadata holds no fitted combination")
    return meta.combination


@cache
def trained_combination() -> Combination:
    """The combination stored beside the trained pair model (read once)."""
    return _combination_of(PairModelMetadata.read(trained_pair_dir()))


def combine(judge_p: float, pair_p: float, cosine: float, combination: Combination | None = None) -> float:
    """P(same answer) from the judge's probability, the pair model's and the pair's cosine similarity."""
    return (combination or trained_combination()).probability(judge_p, pair_p, cosine)


class PairScorer(Protocol):
    """What the stage needs of a pair model: calibrated P(same answer) per (query, cached) pair."""

    def probabilities(self, pairs: Sequence[tuple[str, str]]) -> npt.NDArray[np.float64]: ...


class PairStage:
    """The pair model as the judge's second reader: the stacked P of the judge's P, the pair model's and the
    cosine, with its bar per budget. The model loads on first use (or `warm`); safe to share across threads."""

    def __init__(self, model_dir: Path | None = None, model: PairScorer | None = None) -> None:
        self._dir = model_dir or trained_pair_dir()
        self.metadata = PairModelMetadata.read(self._dir)
        self.combination = _combination_of(self.metadata)
        ys = self.metadata.calibration.ys
        # The stack reads the pair P clipped to this range (as it was fitted), so its pull is bounded.
        self.pair_range = (max(min(ys), PAIR_CLIP), min(max(ys), 1.0 - PAIR_CLIP))
        self.version = "pair-" + ((self.metadata.onnx_sha256 or self.metadata.weights_sha256)[:8] or "unversioned")
        self._model = model
        self._lock = threading.Lock()

    def warm(self) -> PairScorer:
        """The loaded model (loading it now if it was not yet)."""
        with self._lock:
            if self._model is None:
                self._model = PairModel(self._dir)
            return self._model

    def cut(self, max_false_hit_rate: float) -> float:
        return self.combination.cut(max_false_hit_rate)

    def bounds(self, judge_p: float, cosine: float) -> tuple[float, float]:
        return self.combination.bounds(judge_p, cosine, self.pair_range)

    def probabilities(
        self, pairs: Sequence[tuple[str, str]], judge_p: Sequence[float], cosines: Sequence[float],
        contexts: Sequence[tuple[str, str] | None] | None = None,
    ) -> npt.NDArray[np.float64]:
        """The stacked P of each (query, cached) pair, given the judge's P and the pair's cosine. Where a pair
        has a (query context, cached context) pair too (a conversation), the lower pair-model P of the two
        counts: both must ask the same."""
        if not pairs:
            return np.empty(0, dtype=np.float64)
        low, high = self.pair_range
        with_context = [i for i, c in enumerate(contexts or ()) if c is not None]
        read = [*pairs, *(c for c in (contexts or ()) if c is not None)]
        scored = self.warm().probabilities(read)
        pair_p = np.array(scored[: len(pairs)], dtype=np.float64)
        if with_context:
            pair_p[with_context] = np.minimum(pair_p[with_context], scored[len(pairs) :])
        pair_p = np.clip(pair_p, low, high)
        cos = np.clip(np.asarray(cosines, dtype=np.float64), -1.0, 1.0)
        return np.array([self.combination.probability(float(j), float(q), float(c))
                         for j, q, c in zip(judge_p, pair_p, cos, strict=True)], dtype=np.float64)


def load_pair_stage(model_dir: Path | None = None) -> PairStage | None:
    """The given pair stage, or the trained one (one per process: its model loads once and is shared); None
    when its metadata is missing or holds no fitted combination."""
    if model_dir is not None:
        return PairStage(model_dir)
    return _trained_stage()


@cache
def _trained_stage() -> PairStage | None:
    try:
        return PairStage()
    except PairModelError:
        return None
