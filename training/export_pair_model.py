"""Export a trained pair model to the runtime's form: int8 ONNX (ONNX Runtime, no torch at inference), and refit
its calibration on the export's own scores.

Reads the float weights (`model.safetensors` + the bundled word embeddings) on torch, exports the full
cross-encoder with `torch.onnx.export`, quantizes its weights to int8 (`onnxruntime.quantization.quantize_dynamic`),
scores the held-out calib split of training/pair_data.py through the export and fits the isotonic calibration
on those scores (the torch one is kept as `calibration_torch`). A combination fitted for earlier scores is
dropped: run `python -m training.eval_pair_model --write` after this. Needs the `onnx` package (dev extra).

    python -m training.export_pair_model [--model training/judge/models/pair]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np

from training import pair_data
from training.pair_calibration import OUT, calib_report, calib_sample, fit_isotonic, progress

OPSET = 17
AGREEMENT_PAIRS = 400  # calib pairs scored by both backends: how far int8 moved the scores


def export(folder: Path) -> dict[str, object]:
    """Write `folder`/model.int8.onnx from the float weights in `folder`; returns what the metadata records."""
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic

    from training.judge.pair_model import ONNX_FILE, PairModel, _file_sha256

    torch_model = PairModel(folder, backend="torch")
    model, tokenizer = torch_model._model, torch_model._tokenizer
    sample = tokenizer(["How do I reset my password?"], ["How can I reset my password?"], return_tensors="pt")
    names = ["input_ids", "attention_mask", "token_type_ids"]
    with tempfile.TemporaryDirectory() as tmp:
        full = Path(tmp) / "model.onnx"
        torch.onnx.export(model, tuple(sample[n] for n in names), str(full), input_names=names,
                          output_names=["logits"], opset_version=OPSET, dynamo=False,
                          dynamic_axes={**{n: {0: "batch", 1: "sequence"} for n in names}, "logits": {0: "batch"}})
        quantize_dynamic(str(full), str(folder / ONNX_FILE), weight_type=QuantType.QInt8)
    return {"file": ONNX_FILE, "sha256": _file_sha256(folder / ONNX_FILE), "opset": OPSET,
            "quantization": "dynamic int8 weights (onnxruntime.quantization.quantize_dynamic, QInt8)",
            "exported_from": "model.safetensors + the bundled word embeddings",
            "exported_at": time.strftime("%Y-%m-%d")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", type=Path, default=OUT,
                        help="pair-model folder (default: training/judge/models/pair)")
    args = parser.parse_args(argv)
    from training.judge.pair_model import METADATA_FILE, PairModel

    folder: Path = args.model
    onnx = export(folder)
    progress(f"exported {onnx['file']} ({(folder / str(onnx['file'])).stat().st_size / 1e6:.1f} MB)")
    data = pair_data.build(pair_data.Plan())
    calib = calib_sample(data.calib)
    meta_path = folder / METADATA_FILE
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    meta["onnx"] = onnx
    meta_path.write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")  # the loader checks the hash
    raw = PairModel(folder, backend="onnx").raw_scores([(ex.a, ex.b) for ex in calib])
    sample = [(ex.a, ex.b) for ex in calib[:AGREEMENT_PAIRS]]
    float_raw = PairModel(folder, backend="torch").raw_scores(sample)
    meta["onnx"]["agreement_with_float"] = {
        "pairs": len(sample), "pearson": round(float(np.corrcoef(raw[: len(sample)], float_raw)[0, 1]), 4),
        "max_abs_logit_diff": round(float(np.max(np.abs(raw[: len(sample)] - float_raw))), 4)}
    xs, ys = fit_isotonic(raw, np.array([ex.label for ex in calib], dtype=float))
    if "calibration_torch" not in meta:
        meta["calibration_torch"] = meta["calibration"]
    meta["calibration"] = {"method": "isotonic on the mean logit of both orders, scored by the int8 ONNX export",
                           "fitted_on": "pair_data calib split", "xs": xs, "ys": ys}
    meta["calib_metrics_onnx"] = calib_report(raw, calib)
    meta.pop("combination", None)  # fitted on other scores: refit with python -m training.eval_pair_model --write
    meta_path.write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
    progress(f"calibrated on {len(calib)} held-out pairs: {json.dumps(meta['calib_metrics_onnx'])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
