"""The pair model's pieces that need no model (training only: the product no longer ships it): its calibration map,
the judge + pair combination and its metadata checks; and a trained model's metadata, when one was trained into
training/judge/models/."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from training.judge.pair_model import (
    KIND,
    METADATA_FILE,
    Combination,
    PairCalibration,
    PairModelError,
    PairModelMetadata,
    combine,
    trained_pair_dir,
)

TRAINED = pytest.mark.skipif(not (trained_pair_dir() / METADATA_FILE).exists(),
                             reason="no pair model trained into training/judge/models/ (training.train_pair_model)")

COMBO = Combination(w_judge=0.8, w_pair=1.2, w_cosine=2.0, bias=-2.5, min_probability=0.7)


def _metadata(folder: Path, **extra: object) -> Path:
    meta = {"kind": KIND, "base_embeddings_sha256": "0" * 64, "layers": 3, "max_length": 64,
            "calibration": {"xs": [-2.0, 0.0, 2.0], "ys": [0.05, 0.5, 0.95]}, **extra}
    (folder / METADATA_FILE).write_text(json.dumps(meta), encoding="utf-8")
    return folder


@TRAINED
def test_a_trained_model_records_its_data() -> None:
    meta = json.loads((trained_pair_dir() / METADATA_FILE).read_text(encoding="utf-8"))
    assert meta["kind"] == KIND and meta["seed"] and meta["machine"]["device"]
    assert meta["data"]["files"] and all(len(sha) == 64 for sha in meta["data"]["files"].values())
    licences = json.dumps(meta["data"]["licenses"]).lower()
    assert "qqp" not in licences.replace("gptcache_mock", "") and "sick" not in licences
    agreement = meta["onnx"]["agreement_with_float"]  # what int8 did to the scores, measured at export
    assert agreement["pairs"] >= 100 and agreement["pearson"] > 0.95


def test_calibration_is_monotone_and_clipped() -> None:
    cal = PairCalibration((-2.0, 0.0, 2.0), (0.05, 0.5, 0.95))
    p = cal.probabilities(np.array([-9.0, -1.0, 0.0, 1.0, 9.0]))
    assert p.tolist() == pytest.approx([0.05, 0.275, 0.5, 0.725, 0.95])


@pytest.mark.parametrize(("xs", "ys"), [((1.0, 0.0), (0.1, 0.2)), ((0.0,), (1.5,)), ((), ())],
                         ids=["unsorted", "not-a-probability", "empty"])
def test_bad_calibration_is_refused(xs: tuple[float, ...], ys: tuple[float, ...]) -> None:
    with pytest.raises(ValueError):
        PairCalibration(xs, ys)


def test_combination_rises_with_each_input() -> None:
    base = COMBO.probability(0.6, 0.6, 0.8)
    assert COMBO.probability(0.9, 0.6, 0.8) > base
    assert COMBO.probability(0.6, 0.9, 0.8) > base
    assert COMBO.probability(0.6, 0.6, 0.95) > base
    assert 0.0 < COMBO.probability(0.0, 0.0, -1.0) < COMBO.probability(1.0, 1.0, 1.0) < 1.0


@pytest.mark.parametrize(("judge_p", "pair_p", "cosine"), [(1.5, 0.5, 0.5), (0.5, -0.1, 0.5), (0.5, 0.5, 1.5)],
                         ids=["judge", "pair", "cosine"])
def test_combination_refuses_inputs_out_of_range(judge_p: float, pair_p: float, cosine: float) -> None:
    with pytest.raises(ValueError):
        COMBO.probability(judge_p, pair_p, cosine)


def test_combination_bar_must_be_a_probability() -> None:
    with pytest.raises(ValueError, match="probability"):
        Combination(1.0, 1.0, 1.0, 0.0, min_probability=1.2)


def test_combine_with_an_explicit_combination_needs_no_files() -> None:
    assert combine(0.6, 0.9, 0.8, COMBO) == pytest.approx(COMBO.probability(0.6, 0.9, 0.8))


@TRAINED
def test_a_trained_combination_is_fitted() -> None:
    p = combine(0.99, 0.99, 0.99)
    assert 0.0 <= p <= 1.0
    assert combine(0.01, 0.01, 0.5) < p


def test_metadata_reads_a_combination(tmp_path: Path) -> None:
    combo = {"weights": {"judge": 0.8, "pair": 1.2, "cosine": 2.0}, "bias": -2.5, "min_probability": 0.7}
    meta = PairModelMetadata.read(_metadata(tmp_path, combination=combo))
    assert meta.combination == COMBO and meta.layers == 3


def test_metadata_without_combination_reads_none(tmp_path: Path) -> None:
    assert PairModelMetadata.read(_metadata(tmp_path)).combination is None


def test_missing_folder_is_a_model_error(tmp_path: Path) -> None:
    with pytest.raises(PairModelError, match="no pair-model metadata"):
        PairModelMetadata.read(tmp_path)


def test_other_kind_is_a_model_error(tmp_path: Path) -> None:
    (tmp_path / METADATA_FILE).write_text(json.dumps({"kind": "cross_encoder"}), encoding="utf-8")
    with pytest.raises(PairModelError, match="kind"):
        PairModelMetadata.read(tmp_path)
