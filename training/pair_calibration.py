"""What training and exporting the pair model share: where it is written, how many held-out pairs fit its calibration,
and the isotonic fit and report on them. Both `training.train_pair_model` and `training.export_pair_model` import
it, so neither imports the other."""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path

import numpy as np

from training import judge_data as tv
from training import pair_data
from training.judge.pair_model import trained_pair_dir

ROOT = Path(__file__).resolve().parents[1]
OUT = trained_pair_dir()
CALIB_PAIRS = 2500  # held-out pairs scored (both orders) for the calibration; more costs minutes on a busy CPU


def progress(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def calib_sample(calib: list[tv.Example]) -> list[tv.Example]:
    """The seeded CALIB_PAIRS of the held-out calib split that training and export both calibrate on."""
    return random.Random(pair_data.SEED).sample(calib, min(len(calib), CALIB_PAIRS))


def fit_isotonic(raw: np.ndarray, y: np.ndarray) -> tuple[list[float], list[float]]:
    """Isotonic fit as knots for np.interp (what IsotonicRegression.predict computes, clipped outside)."""
    from sklearn.isotonic import IsotonicRegression

    iso = IsotonicRegression(out_of_bounds="clip", y_min=0.0, y_max=1.0).fit(raw, y)
    return [float(x) for x in iso.X_thresholds_], [float(v) for v in iso.y_thresholds_]


def calib_report(raw: np.ndarray, calib: list[tv.Example]) -> dict[str, object]:
    """ROC-AUC of `raw` on the calib pairs, overall and by source."""
    from sklearn.metrics import roc_auc_score

    y = np.array([ex.label for ex in calib])
    by_source: dict[str, object] = {}
    for source in sorted({ex.source for ex in calib}):
        m = np.array([ex.source == source for ex in calib])
        if len(set(y[m].tolist())) == 2:
            by_source[source] = round(float(roc_auc_score(y[m], raw[m])), 4)
    return {"auc": round(float(roc_auc_score(y, raw)), 4), "auc_by_source": by_source, "pairs": len(calib)}
