"""Judge latency, side by side in one run: one MiniLM embedding (ONNX, the default) vs the judge on one request's
K candidates, and the model's forest walk vs the previous one (the baseline).

The judge reuses the cosine the index already computed, so its cost is the features (rule findings,
alignment) plus the model. Each round uses a fresh query text (so no per-text cache helps the query side,
as for a new request) against cached prompts seen before (as in a warm cache), interleaved with one
embedding so CPU contention from other processes hits both alike.

    .venv/bin/python -m bench.judge [--repeat 200] [--candidates 5] [--threads 2]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from bench.common import table
from index.embedding.embedder import OnnxMiniLMEmbedder
from index.judge.features import feature_matrix
from index.judge.model import Forest, JudgeInput, load_judge

# Written for this benchmark: short and long prompts, like the ones the cache compares.
QUERIES = (
    "How do I disable gzip compression in nginx",
    "Is the API not rate limited",
    "What's the process for ending my paid plan so I stop getting charged",
    "How many miles is 5 kilometers",
    "I need Python code to load a CSV (first row is the header) into a list of dicts, ignoring empty lines "
    "and turning numbers into floats. Can you write the function",
)
CACHED = (
    "How do I enable gzip compression in nginx?",
    "Is the API rate limited?",
    "How do I cancel my subscription?",
    "Convert 5 km to miles",
    "Write a Python function that reads a CSV file with a header row, skips blank lines and returns a list "
    "of dictionaries keyed by column name, converting numeric fields to floats where possible.",
    "nginx gzip settings",
    "How do I turn off my plan's auto renewal?",
)
SUFFIXES = ("?", " please?", ", thanks", "??", " asap", " - any idea?", " (urgent)")


def _request(round_: int, k: int) -> list[JudgeInput]:
    query = QUERIES[round_ % len(QUERIES)] + SUFFIXES[round_ % len(SUFFIXES)] + " " * (round_ // 35)
    return [JudgeInput(query, CACHED[(round_ + i) % len(CACHED)], 0.9 - 0.02 * i, i, 0.02 if i == 0 else -0.02 * i)
            for i in range(k)]


def previous_walk(forest: Forest, features: np.ndarray) -> np.ndarray:
    """The forest walk before issue 20 (2-D fancy indexing, NaN resolved per node and level): the baseline."""
    rows = np.arange(features.shape[0])[:, None]
    node = np.broadcast_to(forest.roots, (features.shape[0], forest.roots.size))
    for _ in range(forest.depth):
        x = features[rows, forest.feature[node]]
        go_left = np.where(np.isnan(x), forest.missing_left[node], x <= forest.threshold[node])
        step = np.where(go_left, forest.left[node], forest.right[node])
        if np.array_equal(step, node):
            break
        node = step
    scores: np.ndarray = forest.value[node].sum(axis=1) + forest.baseline
    return scores


def run(repeat: int, k: int, threads: int) -> str:
    embedder = OnnxMiniLMEmbedder(threads=threads)
    started = time.perf_counter()
    judge = load_judge()
    load_ms = (time.perf_counter() - started) * 1000
    names = ("embed 1 prompt (MiniLM, ONNX)", f"judge, {k} candidates", "  of which features", "  of which the model",
             "  the model, previous walk (baseline)", "judge per candidate",
             "judge per candidate, thread CPU (less hurt by other processes)")
    samples: dict[str, list[float]] = {name: [] for name in names}
    for round_ in range(repeat + 5):
        items = _request(round_, k)
        t0 = time.perf_counter()
        embedder.embed([items[0].query])
        t1, cpu1 = time.perf_counter(), time.thread_time()
        judge.probabilities(items)
        t2, cpu2 = time.perf_counter(), time.thread_time()
        features = feature_matrix(_request(round_ + 10_000, k))
        t3 = time.perf_counter()
        judge.forest.decision(features)
        t4 = time.perf_counter()
        previous_walk(judge.forest, features)
        t5 = time.perf_counter()
        if round_ >= 5:  # warm-up rounds are not counted
            for name, ms in zip(names, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4, (t2 - t1) / k,
                                            (cpu2 - cpu1) / k), strict=True):
                samples[name].append(ms * 1000)
    reference = statistics.median(samples[names[0]])
    return f"judge {judge.version} loaded in {load_ms:.0f} ms\n" + table(list(samples.items()), reference)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--candidates", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    print(run(args.repeat, args.candidates, args.threads))


if __name__ == "__main__":
    main()
