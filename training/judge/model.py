"""The judge: a calibrated P(same answer) for (request, cached candidate), and the probability bar that meets
a false-hit budget with a confidence bound on its calibration data.

A judge is a gradient-boosted classifier over `training.judge.features` (trained with scikit-learn, stored and
evaluated as plain numpy arrays: no pickle, no scikit-learn version coupling, microseconds per candidate), an
isotonic map from its raw score to a probability fitted on held-out pairs, and those held-out pairs'
probabilities and labels (kept beside the model, so `cut` can be recomputed for any budget). The prior is
trained into `training/judge/models/judge/` (`python -m training.train_judge`; not committed, and no longer
shipped with the product: the learned veto was removed, docs/learned-veto.md).
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy.special import betaincinv  # beta.ppf without importing scipy.stats (1.3 s of start-up)

from index.errors import DejaError
from training.judge.features import FEATURE_NAMES, EntryHistory, JudgeInput, feature_matrix

__all__ = [
    "Calibration", "EntryHistory", "Forest", "Judge", "JudgeInput", "JudgeModelError", "false_hit_upper",
    "load_judge", "save_judge",
]

MODEL_FILE = "judge.npz"
METADATA_FILE = "metadata.json"
FORMAT = 2
CONFIDENCE = 0.95
NEVER = float("inf")  # the bar when no bar meets the budget: nothing is served
Floats = npt.NDArray[np.float64]


def check_budget(max_false_hit_rate: float) -> float:
    """The one range check of a false-hit budget: a share strictly between 0 and 1."""
    if not 0.0 < max_false_hit_rate < 1.0:
        raise ValueError(f"max false-hit rate must be in (0, 1), got {max_false_hit_rate}")
    return max_false_hit_rate


class JudgeModelError(DejaError):
    """The judge files are missing, unreadable, or were written for another format or feature set."""


def trained_judge_dir() -> Path:
    """Folder `python -m training.train_judge` writes the prior into (and `load_judge()` reads)."""
    return Path(__file__).resolve().parent / "models" / "judge"


def false_hit_upper(false_hits: int, served: int, confidence: float = CONFIDENCE) -> float:
    """One-sided Clopper-Pearson upper bound on the false-hit rate (false hits / served)."""
    if served <= 0:
        return 1.0
    if false_hits >= served:
        return 1.0
    return float(betaincinv(false_hits + 1, served - false_hits, confidence))  # = scipy.stats.beta.ppf


@dataclass(frozen=True, eq=False)
class Calibration:
    """Held-out pairs the judge never trained on: calibrated probabilities and labels (1 = same answer).

    `features` (optional) lets a refit re-score them under a new model."""

    probabilities: Floats
    labels: npt.NDArray[np.int8]
    confidence: float = CONFIDENCE
    features: Floats | None = None

    def __post_init__(self) -> None:
        if self.probabilities.shape != self.labels.shape:
            raise ValueError("calibration probabilities and labels differ in length")
        if not 0.5 <= self.confidence < 1.0:
            raise ValueError(f"confidence must be in [0.5, 1), got {self.confidence}")

    def cut(self, max_false_hit_rate: float) -> float:
        """The lowest bar whose served set (probability >= bar) has a false-hit upper bound <= the budget."""
        check_budget(max_false_hit_rate)
        order = np.argsort(-self.probabilities, kind="stable")
        p = self.probabilities[order]
        wrong = np.cumsum(self.labels[order] == 0)
        best = NEVER
        # Only the last index of each run of equal probabilities is a real bar (ties are served together).
        ends = np.flatnonzero(np.append(p[1:] != p[:-1], True))
        for end in ends:
            if false_hit_upper(int(wrong[end]), int(end + 1), self.confidence) <= max_false_hit_rate:
                best = float(p[end])
        return best

    def served_at(self, bar: float) -> tuple[int, int]:
        """(served, false hits) of the calibration pairs at `bar`."""
        served = self.probabilities >= bar
        return int(served.sum()), int((served & (self.labels == 0)).sum())


@dataclass(frozen=True, eq=False)
class Isotonic:
    """Piecewise-linear map from the classifier's raw score to a probability (isotonic fit, stored as knots)."""

    xs: Floats
    ys: Floats

    def __call__(self, raw: Floats) -> Floats:
        return np.clip(np.interp(raw, self.xs, self.ys), 0.0, 1.0)


_WalkTables = tuple[npt.NDArray[np.intp], Floats, npt.NDArray[np.intp]]


@dataclass(frozen=True, eq=False)
class Forest:
    """A boosted tree ensemble as flat node arrays, evaluated for all trees at once with numpy.

    Node `i` sends a row left when its feature is <= `threshold[i]` (NaN goes where `missing_left[i]` says);
    a leaf points to itself on both sides, so walking `depth` steps from the roots lands every row on a leaf.
    """

    feature: npt.NDArray[np.int32]
    threshold: Floats
    missing_left: npt.NDArray[np.bool_]
    left: npt.NDArray[np.int32]
    right: npt.NDArray[np.int32]
    value: Floats
    roots: npt.NDArray[np.int32]
    depth: int
    baseline: float

    def decision(self, features: Floats) -> Floats:
        """Log-odds of each row (rows of `features`, columns in the trained order).

        All rows and trees walk together on flat arrays, one comparison per level: each feature comes twice,
        once with NaN as -inf (read by nodes that send missing values left) and once with NaN as +inf (the
        others), so a node's test is a plain `x > threshold` and the children are one interleaved table."""
        n_rows, n_features = features.shape
        missing = np.isnan(features)
        table = np.concatenate([np.where(missing, -np.inf, features), np.where(missing, np.inf, features)], axis=1)
        flat = table.ravel()
        column, threshold, children = self._walk_tables(n_features)
        trees = self.roots.size
        base = np.repeat(np.arange(n_rows, dtype=np.intp) * (2 * n_features), trees)
        node = np.tile(self.roots.astype(np.intp), n_rows)
        for _ in range(self.depth):  # a leaf is its own child: rows that reached one stay there
            node = children[2 * node + (flat[base + column[node]] > threshold[node])]
        scores: Floats = self.value[node].reshape(n_rows, trees).sum(axis=1) + self.baseline
        return scores

    @cached_property
    def _walks(self) -> dict[int, _WalkTables]:
        return {}

    def _walk_tables(self, n_features: int) -> _WalkTables:
        """Per node: the column of the doubled feature table it reads, its threshold, and [left, right]
        (built once per feature count; a race only builds equal tables twice)."""
        cached = self._walks.get(n_features)
        if cached is not None:
            return cached
        column = self.feature.astype(np.intp) + np.where(self.missing_left, 0, n_features)
        # NaN as +inf must go right even past a split on "missing or not" (threshold +inf).
        threshold = np.minimum(self.threshold, np.finfo(np.float64).max)
        children = np.stack([self.left, self.right], axis=1).astype(np.intp).ravel()
        tables = (column, threshold, children)
        self._walks[n_features] = tables
        return tables

    def arrays(self) -> dict[str, npt.NDArray[Any]]:
        return {"feature": self.feature, "threshold": self.threshold, "missing_left": self.missing_left,
                "left": self.left, "right": self.right, "value": self.value, "roots": self.roots,
                "depth": np.array(self.depth), "baseline": np.array(self.baseline)}

    @classmethod
    def from_arrays(cls, arrays: dict[str, npt.NDArray[Any]]) -> Forest:
        return cls(arrays["feature"].astype(np.int32), arrays["threshold"].astype(np.float64),
                   arrays["missing_left"].astype(bool), arrays["left"].astype(np.int32),
                   arrays["right"].astype(np.int32), arrays["value"].astype(np.float64),
                   arrays["roots"].astype(np.int32), int(arrays["depth"]), float(arrays["baseline"]))


@dataclass
class Judge:
    """P(same answer) for candidates, and the bar that meets a false-hit budget. Thread-safe once built
    (the per-budget memo of `cut` only ever gains equal values)."""

    forest: Forest
    isotonic: Isotonic
    calibration: Calibration
    version: str
    metadata: dict[str, Any] = field(default_factory=dict)
    prior: Judge | None = None
    _cuts: dict[float, float] = field(default_factory=dict, repr=False)

    def probabilities(self, items: Sequence[JudgeInput]) -> Floats:
        """Calibrated P(same answer) of each item, in order."""
        return self.probabilities_of(feature_matrix(list(items)))

    def probabilities_of(self, features: Floats) -> Floats:
        if features.shape[0] == 0:
            return np.zeros(0, dtype=np.float64)
        return self.isotonic(self.raw(features))

    def raw(self, features: Floats) -> Floats:
        """The classifier's decision score (log-odds) before calibration."""
        return self.forest.decision(stacked(self.prior, features))

    def cut(self, max_false_hit_rate: float) -> float:
        """The probability bar meeting the budget on the calibration data (`NEVER` when none does)."""
        found = self._cuts.get(max_false_hit_rate)
        if found is None:
            found = self._cuts[max_false_hit_rate] = self.calibration.cut(max_false_hit_rate)
        return found


def stacked(prior: Judge | None, features: Floats) -> Floats:
    """A refit reads the prior's log-odds as one more feature (first column), so few labels only correct it."""
    if prior is None:
        return features
    return np.column_stack([prior.raw(features), features])


def version_of(judge: Judge) -> str:
    """A content hash of the judge's arrays: two judges with one version score alike."""
    digest = hashlib.sha256()
    for name, array in sorted(_arrays(judge).items()):
        digest.update(name.encode())
        digest.update(np.ascontiguousarray(array).tobytes())
    return f"judge-{digest.hexdigest()[:12]}"


def _arrays(judge: Judge, prefix: str = "") -> dict[str, npt.NDArray[Any]]:
    cal = judge.calibration
    out = {f"{prefix}forest.{k}": v for k, v in judge.forest.arrays().items()}
    out |= {f"{prefix}iso.xs": judge.isotonic.xs, f"{prefix}iso.ys": judge.isotonic.ys,
            f"{prefix}cal.p": cal.probabilities, f"{prefix}cal.y": cal.labels,
            f"{prefix}cal.confidence": np.array(cal.confidence)}
    if cal.features is not None:
        out[f"{prefix}cal.x"] = cal.features.astype(np.float32)
    if judge.prior is not None:
        out |= _arrays(judge.prior, prefix + "prior.")
        out[f"{prefix}prior.version"] = np.array(judge.prior.version)
    return out


def save_judge(judge: Judge, path: Path) -> None:
    """Write the judge to folder `path`: its arrays (`judge.npz`) and `metadata.json` (version, features)."""
    path.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    np.savez_compressed(buffer, allow_pickle=False, **_arrays(judge))
    (path / MODEL_FILE).write_bytes(buffer.getvalue())
    meta = dict(judge.metadata) | {"version": judge.version, "format": FORMAT, "features": list(FEATURE_NAMES)}
    (path / METADATA_FILE).write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")


def load_judge(path: Path | None = None) -> Judge:
    """Read a judge folder (None: the trained prior). Raises `JudgeModelError` if it cannot be used here."""
    folder = trained_judge_dir() if path is None else path
    try:
        meta = json.loads((folder / METADATA_FILE).read_text())
        with np.load(folder / MODEL_FILE, allow_pickle=False) as data:
            arrays = {name: data[name] for name in data.files}
    except (OSError, ValueError, KeyError, zipfile.BadZipFile) as exc:
        raise JudgeModelError(f"cannot read the judge in {folder}: {exc}") from exc
    if meta.get("format") != FORMAT:
        raise JudgeModelError(f"judge in {folder} has format {meta.get('format')}, expected {FORMAT}")
    if meta.get("features") != list(FEATURE_NAMES):
        raise JudgeModelError(f"judge in {folder} was trained on other features: "
                              "retrain it (python -m training.train_judge)")
    try:
        return _from_arrays(arrays, "", str(meta.get("version", "unknown")), meta)
    except (KeyError, ValueError) as exc:
        raise JudgeModelError(f"judge in {folder} is incomplete: {exc}") from exc


def _from_arrays(arrays: dict[str, npt.NDArray[Any]], prefix: str, version: str, meta: dict[str, Any]) -> Judge:
    forest = Forest.from_arrays({k[len(prefix) + 7:]: v for k, v in arrays.items()
                                 if k.startswith(f"{prefix}forest.")})
    features = arrays.get(f"{prefix}cal.x")
    calibration = Calibration(arrays[f"{prefix}cal.p"].astype(np.float64), arrays[f"{prefix}cal.y"].astype(np.int8),
                              float(arrays[f"{prefix}cal.confidence"]),
                              None if features is None else features.astype(np.float64))
    prior = None
    if f"{prefix}prior.version" in arrays:
        prior_version = str(arrays[f"{prefix}prior.version"])
        prior = _from_arrays(arrays, prefix + "prior.", prior_version, {"version": prior_version})
    return Judge(forest, Isotonic(arrays[f"{prefix}iso.xs"], arrays[f"{prefix}iso.ys"]), calibration, version,
                 meta, prior)
