"""The shipped learned verifier without loading it: its files, its settings and its calibration map.
The real cross-encoder's scores are tested in tests/integration/test_verifier.py."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from index.errors import VerifierModelError
from index.verifier import (
    METADATA_FILE,
    Calibration,
    VerifierMetadata,
    VerifierStage,
    shipped_model_dir,
)


def test_shipped_model_is_small_and_described() -> None:
    folder = shipped_model_dir()
    total = sum(path.stat().st_size for path in folder.iterdir())
    assert total < 50e6
    meta = json.loads((folder / METADATA_FILE).read_text(encoding="utf-8"))
    assert meta["data"]["files"] and all(len(sha) == 64 for sha in meta["data"]["files"].values())
    assert "sick" not in json.dumps(meta["data"]["licenses"]).lower()


def test_min_probability_must_be_a_probability() -> None:
    with pytest.raises(ValueError, match="probability"):
        VerifierStage(min_probability=1.5)


def test_missing_model_folder_is_a_model_error(tmp_path: Path) -> None:
    with pytest.raises(VerifierModelError):
        VerifierMetadata.read(tmp_path)


def test_calibration_is_monotone_and_clipped() -> None:
    cal = Calibration(xs=(-2.0, 0.0, 2.0), ys=(0.1, 0.5, 0.9))
    got = cal.probabilities(np.array([-9.0, -1.0, 1.0, 9.0]))
    assert got.tolist() == pytest.approx([0.1, 0.3, 0.7, 0.9])
    with pytest.raises(ValueError, match="sorted"):
        Calibration(xs=(1.0, 0.0), ys=(0.2, 0.4))
