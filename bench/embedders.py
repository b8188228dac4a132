"""ONNX int8 vs torch MiniLM, side by side in one run: agreement of the vectors (cosine between the two
backends' vectors of the same text), agreement of the pair similarities the decision reads, pairs whose
threshold decision flips, and time per prompt and per batch of 16.

    .venv/bin/python -m bench.embedders [--threshold 0.90]
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

import numpy as np

from bench.common import p, timed_ms
from index.embedding.embedder import MiniLMEmbedder, OnnxMiniLMEmbedder

DATASETS = Path(__file__).resolve().parents[1] / "datasets"


def pairs() -> list[tuple[str, str]]:
    out = []
    for name in ("pairs-dev.jsonl", "pairs-test.jsonl"):
        for line in (DATASETS / name).read_text().splitlines():
            row = json.loads(line)
            out.append((row["a"], row["b"]))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threshold", type=float, default=0.90)
    parser.add_argument("--repeat", type=int, default=50)
    parser.add_argument("--threads", type=int, default=1, help="intra-op threads of both backends")
    args = parser.parse_args()
    data = pairs()
    texts = sorted({t for pair in data for t in pair})
    torch_model, onnx_model = MiniLMEmbedder(threads=args.threads), OnnxMiniLMEmbedder(threads=args.threads)
    vt, vo = torch_model.embed(texts), onnx_model.embed(texts)
    agreement = np.sum(vt * vo, axis=1)
    row = {t: i for i, t in enumerate(texts)}
    ia, ib = [row[a] for a, _ in data], [row[b] for _, b in data]
    sim_t, sim_o = np.sum(vt[ia] * vt[ib], axis=1), np.sum(vo[ia] * vo[ib], axis=1)
    flips = int(np.sum((sim_t >= args.threshold) != (sim_o >= args.threshold)))
    near = int(np.sum(np.abs(sim_t - args.threshold) < 0.01))
    one = data[0][0]
    batch = [one] * 16  # the same length as `one`: what batching 16 concurrent prompts costs
    speed = {
        "torch one prompt": timed_ms(lambda: torch_model.embed([one]), args.repeat),
        "onnx one prompt": timed_ms(lambda: onnx_model.embed([one]), args.repeat),
        "torch batch of 16": timed_ms(lambda: torch_model.embed(batch), args.repeat // 2),
        "onnx batch of 16": timed_ms(lambda: onnx_model.embed(batch), args.repeat // 2),
    }
    print(f"{len(texts)} texts, {len(data)} labelled pairs (datasets/pairs-dev + pairs-test)")
    print(f"cosine(torch vector, onnx vector): min {agreement.min():.4f}  p1 {np.percentile(agreement, 1):.4f}  "
          f"mean {agreement.mean():.4f}")
    diff = np.abs(sim_t - sim_o)
    print(f"|pair similarity torch - onnx|: mean {diff.mean():.4f}  p99 {np.percentile(diff, 99):.4f}  "
          f"max {diff.max():.4f}")
    print(f"decisions flipped at cosine >= {args.threshold}: {flips} of {len(data)} "
          f"({near} pairs lie within 0.01 of the threshold)")
    base = statistics.median(speed["torch one prompt"])
    for name, samples in speed.items():
        median = statistics.median(samples)
        print(f"{name:<20} p50 {median:8.2f} ms  p99 {p(samples, 0.99):8.2f} ms  x{median / base:.2f} of torch one")


if __name__ == "__main__":
    main()
