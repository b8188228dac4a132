"""Pair model: a cross-encoder that reads a query and a cached prompt and gives a calibrated P(same answer).

Fine-tuned from the bundled all-MiniLM-L6-v2 on question-shaped pairs (scripts/pair_data.py,
scripts/train_pair_model.py). The shipped folder (index/data/pair/) holds only what fine-tuning changed;
the word embeddings are read from the bundled model, whose hash the metadata records and the loader checks.
A pair is scored in both orders and the logits averaged, so the score is symmetric. `combine` joins the
judge's probability, this model's and the cosine into one P(same answer) with the stack fitted by
scripts/eval_pair_model.py and stored in the metadata.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from index.embedding.embedder import bundled_model_path
from index.errors import DejaError

WEIGHTS_FILE = "model.safetensors"
ONNX_FILE = "model.int8.onnx"  # the runtime's export (scripts/export_pair_model.py): self-contained, int8 weights
CONFIG_FILE = "config.json"
METADATA_FILE = "metadata.json"
WORD_EMBEDDINGS = "embeddings.word_embeddings.weight"
KIND = "pair_cross_encoder"
_EPS = 1e-4
# The pair P the stack reads is clipped to [PAIR_CLIP, 1 - PAIR_CLIP] (in fitting and at run time).
PAIR_CLIP = 0.02
# Pairs whose ONNX score is kept, least recently read dropped first (two prompts and a float each).
SCORE_MEMO_PAIRS = 8192


class PairModelError(DejaError):
    """The shipped pair-model files are missing, of another kind, or do not match the bundled base model."""


def shipped_model_dir() -> Path:
    """Folder of the pair model shipped inside the `index` package."""
    return Path(str(resources.files("index").joinpath("data", "pair")))


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def embeddings_sha256(tensor: Any) -> str:
    """SHA-256 of a float32 tensor's bytes, to tie the shipped layers to the word embeddings they were tuned on."""
    return hashlib.sha256(tensor.contiguous().numpy().astype(np.float32).tobytes()).hexdigest()


@dataclass(frozen=True)
class Calibration:
    """Monotone map from the mean logit to P(same answer): linear between fitted knots, clipped outside."""

    xs: tuple[float, ...]
    ys: tuple[float, ...]

    def __post_init__(self) -> None:
        if len(self.xs) != len(self.ys) or not self.xs:
            raise ValueError("calibration needs as many ys as xs, and at least one knot")
        if any(b < a for a, b in zip(self.xs, self.xs[1:], strict=False)):
            raise ValueError("calibration xs must be sorted")
        if not all(0.0 <= y <= 1.0 for y in self.ys):
            raise ValueError("calibration ys must be probabilities")

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Calibration:
        return cls(tuple(map(float, raw["xs"])), tuple(map(float, raw["ys"])))

    def probabilities(self, raw: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        return np.interp(raw, self.xs, self.ys)


def _logit(p: float) -> float:
    p = min(max(p, _EPS), 1.0 - _EPS)
    return math.log(p / (1.0 - p))


@dataclass(frozen=True)
class Combination:
    """Logistic stack: P = sigmoid(w_judge * logit(judge P) + w_pair * logit(pair P) + w_cos * cosine + bias).

    `min_probability` is the bar fitted with it: the smallest P whose false-hit rate stays within the budget
    on each realistic calibration source. Every input is about the one pair (no rank or margin), so a lone
    candidate scores as it would among many.
    """

    w_judge: float
    w_pair: float
    w_cosine: float
    bias: float
    min_probability: float
    # (budget, bar) pairs, budgets ascending: the lowest P whose wrong / served stays within that budget on each
    # realistic calibration source. Empty = only `min_probability`, at the budget it was fitted for.
    bars: tuple[tuple[float, float], ...] = ()
    budget: float = 0.02

    def __post_init__(self) -> None:
        if not 0.0 <= self.min_probability <= 1.0:
            raise ValueError(f"min_probability must be a probability, got {self.min_probability}")
        if any(b[0] >= a[0] for a, b in zip(self.bars[1:], self.bars, strict=False)):
            raise ValueError("combination bars must be sorted by budget")

    def cut(self, max_false_hit_rate: float) -> float:
        """The bar for a budget: that of the largest fitted budget not above it (never a looser one); a budget
        below every fitted one serves nothing."""
        table = self.bars or ((self.budget, self.min_probability),)
        fitted = [bar for budget, bar in table if budget <= max_false_hit_rate + 1e-12]
        return fitted[-1] if fitted else math.inf

    def bounds(self, judge_p: float, cosine: float, pair_range: tuple[float, float]) -> tuple[float, float]:
        """The lowest and highest P the stack can give this judge P and cosine, over the pair model's range: when
        a bar lies outside them, the pair model cannot change the decision and need not run."""
        low, high = (self.probability(judge_p, p, cosine) for p in pair_range)
        return (low, high) if low <= high else (high, low)

    def probability(self, judge_p: float, pair_p: float, cosine: float) -> float:
        for name, value in (("judge_p", judge_p), ("pair_p", pair_p)):
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be a probability in [0, 1], got {value}")
        if not -1.0 - 1e-6 <= cosine <= 1.0 + 1e-6:
            raise ValueError(f"cosine must be a similarity in [-1, 1], got {cosine}")
        z = self.w_judge * _logit(judge_p) + self.w_pair * _logit(pair_p) + self.w_cosine * cosine + self.bias
        return 1.0 / (1.0 + math.exp(-max(min(z, 60.0), -60.0)))

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Combination:
        w = raw["weights"]
        bars = tuple((float(b), float(v)) for b, v in raw.get("bars", ()))
        return cls(float(w["judge"]), float(w["pair"]), float(w["cosine"]), float(raw["bias"]),
                   float(raw["min_probability"]), bars, float(raw.get("budget", 0.02)))


@dataclass(frozen=True)
class PairModelMetadata:
    """What the runtime needs from metadata.json (which also records data hashes, licences and metrics)."""

    base_embeddings_sha256: str
    layers: int
    max_length: int
    calibration: Calibration
    combination: Combination | None
    weights_sha256: str = ""
    onnx_sha256: str = ""
    # The calibration of the float weights' scores, kept when the ONNX export's replaced it (None = the same).
    calibration_torch: Calibration | None = None

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
            calibration=Calibration.from_json(raw["calibration"]),
            combination=Combination.from_json(combo) if combo else None,
            weights_sha256=str(raw.get("weights_sha256", "")),
            onnx_sha256=str(raw.get("onnx", {}).get("sha256", "")),
            calibration_torch=Calibration.from_json(cal_torch) if cal_torch else None,
        )


class PairModel:
    """Calibrated P(same answer) for (query, cached) pairs. Load once; safe to call from several threads.

    Runs the int8 ONNX export (`ONNX_FILE`, on ONNX Runtime, no torch) when the folder holds one, as the shipped
    one does; else the float weights on torch (`backend="torch"` forces them: the export reads them so)."""

    def __init__(self, model_dir: Path | None = None, base_path: Path | None = None,
                 backend: str | None = None, threads: int | None = None) -> None:
        folder = model_dir or shipped_model_dir()
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
def shipped_combination() -> Combination:
    """The combination stored beside the shipped pair model (read once)."""
    return _combination_of(PairModelMetadata.read(shipped_model_dir()))


def combine(judge_p: float, pair_p: float, cosine: float, combination: Combination | None = None) -> float:
    """P(same answer) from the judge's probability, the pair model's and the pair's cosine similarity."""
    return (combination or shipped_combination()).probability(judge_p, pair_p, cosine)


class PairScorer(Protocol):
    """What the stage needs of a pair model: calibrated P(same answer) per (query, cached) pair."""

    def probabilities(self, pairs: Sequence[tuple[str, str]]) -> npt.NDArray[np.float64]: ...


class PairStage:
    """The pair model as the judge's second reader: the stacked P of the judge's P, the pair model's and the
    cosine, with its bar per budget. The model loads on first use (or `warm`); safe to share across threads."""

    def __init__(self, model_dir: Path | None = None, model: PairScorer | None = None) -> None:
        self._dir = model_dir or shipped_model_dir()
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
    """The given pair stage, or the shipped one (one per process: its model loads once and is shared); None
    when the shipped metadata holds no fitted combination."""
    if model_dir is not None:
        return PairStage(model_dir)
    return _shipped_stage()


@cache
def _shipped_stage() -> PairStage | None:
    try:
        return PairStage()
    except PairModelError:
        return None
