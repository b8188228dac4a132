"""Refit the judge on a deployment's labels, on top of the prior, with enough held-out pairs to bound its cut.

A deployment has tens to hundreds of labels; a false-hit bound of 2% needs at least 149 served held-out pairs.
So the refit pools them with the prior's calibration pairs (which the prior never trained on): half of those
and 70% of the traffic labels train a small forest that reads the prior's log-odds as a feature; the other half
and the remaining 30% calibrate it and set its cut. Traffic labels weigh `traffic_weight` times a prior pair.
The entry-history features are held constant in the refit: on our dev traces a refit that read them learned
"this entry was often right" and served that entry's near twins (see README, learning from traffic).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from index.judge.features import FEATURE_NAMES, EntryHistory, JudgeInput, feature_matrix
from index.judge.fit import REFIT_PLAN, calibrate, held_out, train
from index.judge.model import Judge

TRAFFIC_SHARE_HELD_OUT = 0.3
PRIOR_SHARE_HELD_OUT = 0.5
_HISTORY = [i for i, name in enumerate(FEATURE_NAMES) if name.startswith("history_")]


def refit_judge(
    items: Sequence[JudgeInput], labels: Sequence[bool], prior: Judge, seed: int, traffic_weight: float = 1.0,
) -> Judge:
    """A judge refitted on labelled candidates (True = same answer). Raises ValueError when the labels hold
    only one class or the prior ships no calibration features."""
    y = np.asarray([int(bool(v)) for v in labels], dtype=np.int8)
    if len(items) != len(y):
        raise ValueError("items and labels differ in length")
    if len(set(y.tolist())) < 2:
        raise ValueError("need both same-answer and different-answer labels to refit the judge")
    if prior.calibration.features is None:
        raise ValueError(f"judge {prior.version} ships no calibration features to refit against")
    x = feature_matrix(list(items))
    px = prior.calibration.features.astype(np.float64)
    py = prior.calibration.labels.astype(np.int8)
    prior_held = held_out(py, PRIOR_SHARE_HELD_OUT, seed)
    held = held_out(y, TRAFFIC_SHARE_HELD_OUT, seed)
    train_x = _without_history(np.concatenate([px[~prior_held], x[~held]]))
    train_y = np.concatenate([py[~prior_held], y[~held]])
    weights = np.concatenate([np.ones(int((~prior_held).sum())), np.full(int((~held).sum()), traffic_weight)])
    forest = train(train_x, train_y, weights, seed, REFIT_PLAN, prior)
    meta = {"refit_of": prior.version, "traffic_labels": len(y), "traffic_held_out": int(held.sum()),
            "prior_pairs_held_out": int(prior_held.sum()), "seed": seed, "traffic_weight": traffic_weight}
    return calibrate(forest, np.concatenate([px[prior_held], x[held]]), np.concatenate([py[prior_held], y[held]]),
                     prior, meta)


def _without_history(features: np.ndarray) -> np.ndarray:
    """The history columns set to an empty history's values, so the refit's trees never split on them."""
    out = features.copy()
    empty = feature_matrix([JudgeInput("q", "c", 0.0, history=EntryHistory())])[0]
    out[:, _HISTORY] = empty[_HISTORY]
    return out
