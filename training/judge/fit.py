"""Fitting a judge with scikit-learn: gradient boosting on the features, converted to a numpy `Forest`, then an
isotonic calibration on held-out pairs. Used by `training/train_judge.py` (the prior); the product never
imports it (the learned veto was removed, docs/learned-veto.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.isotonic import IsotonicRegression

from training.judge.features import FEATURE_NAMES, JudgeInput, feature_matrix
from training.judge.model import CONFIDENCE, Calibration, Floats, Forest, Isotonic, Judge, stacked, version_of

Labels = npt.NDArray[np.int8]


@dataclass(frozen=True)
class TrainingPlan:
    """Gradient boosting settings; the defaults are the prior's."""

    max_iter: int = 300
    learning_rate: float = 0.06
    max_leaf_nodes: int = 15
    min_samples_leaf: int = 30
    l2_regularization: float = 1.0
    # P(same answer) never falls as the prompts' (or contexts') cosine rises, other features equal.
    monotonic_similarity: bool = True


# A refit on a deployment's labels has few pairs: fewer, larger leaves.
REFIT_PLAN = TrainingPlan(max_iter=80, min_samples_leaf=10)


def to_forest(model: HistGradientBoostingClassifier) -> Forest:
    """Flatten a fitted binary, numeric-only `HistGradientBoostingClassifier` into a `Forest`."""
    parts: dict[str, list[npt.NDArray[Any]]] = {k: [] for k in ("feature", "threshold", "missing", "left", "right",
                                                                  "value")}
    roots: list[int] = []
    offset = depth = 0
    for (predictor,) in model._predictors:
        nodes = predictor.nodes
        if nodes["is_categorical"].any():
            raise ValueError("categorical splits are not supported")
        n = len(nodes)
        own = np.arange(offset, offset + n, dtype=np.int64)
        leaf = nodes["is_leaf"].astype(bool)
        parts["feature"].append(np.where(leaf, 0, nodes["feature_idx"]))
        parts["threshold"].append(nodes["num_threshold"])
        parts["missing"].append(nodes["missing_go_to_left"].astype(bool))
        parts["left"].append(np.where(leaf, own, nodes["left"].astype(np.int64) + offset))
        parts["right"].append(np.where(leaf, own, nodes["right"].astype(np.int64) + offset))
        parts["value"].append(np.where(leaf, nodes["value"], 0.0))
        roots.append(offset)
        depth = max(depth, int(nodes["depth"].max()))
        offset += n
    return Forest(
        np.concatenate(parts["feature"]).astype(np.int32), np.concatenate(parts["threshold"]).astype(np.float64),
        np.concatenate(parts["missing"]), np.concatenate(parts["left"]).astype(np.int32),
        np.concatenate(parts["right"]).astype(np.int32), np.concatenate(parts["value"]).astype(np.float64),
        np.asarray(roots, dtype=np.int32), depth, float(np.ravel(model._baseline_prediction)[0]),
    )


def train(features: Floats, labels: Labels, weights: Floats | None, seed: int,
          plan: TrainingPlan = TrainingPlan(), prior: Judge | None = None) -> Forest:
    """Fit the classifier (on the prior's log-odds plus the features when `prior` is given)."""
    monotonic = np.zeros(features.shape[1], dtype=int)
    if plan.monotonic_similarity:
        monotonic[[FEATURE_NAMES.index("similarity"), FEATURE_NAMES.index("context_similarity")]] = 1
    if prior is not None:
        monotonic = np.concatenate([[1], monotonic])  # the prior's log-odds
    model = HistGradientBoostingClassifier(
        max_iter=plan.max_iter, learning_rate=plan.learning_rate, max_leaf_nodes=plan.max_leaf_nodes,
        min_samples_leaf=plan.min_samples_leaf, l2_regularization=plan.l2_regularization,
        monotonic_cst=monotonic.tolist(), early_stopping=False, random_state=seed,
    )
    inputs = stacked(prior, features).copy()
    # A column with no value at all (no conversations, single candidates) trips scikit-learn's binning;
    # as a constant it can never split, which is what NaN-only means.
    inputs[:, np.isnan(inputs).all(axis=0)] = 0.0
    model.fit(inputs, labels, sample_weight=weights)
    return to_forest(model)


def calibrate(forest: Forest, features: Floats, labels: Labels, prior: Judge | None = None,
              metadata: dict[str, Any] | None = None) -> Judge:
    """Fit the isotonic map on held-out pairs and keep them as the judge's calibration data."""
    raw = forest.decision(stacked(prior, features))
    iso = IsotonicRegression(out_of_bounds="clip", y_min=0.0, y_max=1.0).fit(raw, labels)
    knots = Isotonic(np.asarray(iso.X_thresholds_, dtype=np.float64), np.asarray(iso.y_thresholds_, np.float64))
    calibration = Calibration(knots(raw), labels.astype(np.int8), CONFIDENCE, features.astype(np.float64))
    judge = Judge(forest, knots, calibration, "unsaved", dict(metadata or {}), prior)
    judge.version = version_of(judge)
    return judge


def held_out(labels: Labels, share: float, seed: int) -> npt.NDArray[np.bool_]:
    """A stratified random `share` of the rows (at least one of each label that has two or more)."""
    if not 0.0 < share < 1.0:
        raise ValueError(f"calibration share must be in (0, 1), got {share}")
    rng = np.random.default_rng(seed)
    held = np.zeros(len(labels), dtype=bool)
    for value in (0, 1):
        where = np.flatnonzero(labels == value)
        count = max(1, round(len(where) * share)) if len(where) > 1 else 0
        held[rng.permutation(where)[:count]] = True
    return held


def fit(items: Sequence[JudgeInput], labels: Sequence[int] | Sequence[bool], *, prior: Judge | None, seed: int,
        calibration_share: float = 0.3, weights: Sequence[float] | None = None) -> Judge:
    """See `training.judge.fit_judge`."""
    y = np.asarray([int(bool(v)) for v in labels], dtype=np.int8)
    if len(items) != len(y):
        raise ValueError("items and labels differ in length")
    if len(set(y.tolist())) < 2:
        raise ValueError("need both same-answer and different-answer labels to fit a judge")
    x = feature_matrix(list(items))
    w = None if weights is None else np.asarray(weights, dtype=np.float64)
    held = held_out(y, calibration_share, seed)
    plan = TrainingPlan() if prior is None else REFIT_PLAN
    forest = train(x[~held], y[~held], None if w is None else w[~held], seed, plan, prior)
    meta = {"trained_on": int((~held).sum()), "calibrated_on": int(held.sum()), "seed": seed,
            "prior": None if prior is None else prior.version}
    return calibrate(forest, x[held], y[held], prior, meta)
