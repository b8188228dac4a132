"""Judge latency, side by side in one run: one MiniLM embedding vs the judge on one request's K candidates.

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

from bench.common import table
from index.embedding.embedder import MiniLMEmbedder
from index.judge.features import feature_matrix
from index.judge.model import JudgeInput, load_judge

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


def run(repeat: int, k: int, threads: int) -> str:
    embedder = MiniLMEmbedder(threads=threads)
    started = time.perf_counter()
    judge = load_judge()
    load_ms = (time.perf_counter() - started) * 1000
    names = ("embed 1 prompt (MiniLM)", f"judge, {k} candidates", "  of which features", "judge per candidate")
    samples: dict[str, list[float]] = {name: [] for name in names}
    for round_ in range(repeat + 5):
        items = _request(round_, k)
        t0 = time.perf_counter()
        embedder.embed([items[0].query])
        t1 = time.perf_counter()
        judge.probabilities(items)
        t2 = time.perf_counter()
        feature_matrix(_request(round_ + 10_000, k))
        t3 = time.perf_counter()
        if round_ >= 5:  # warm-up rounds are not counted
            samples[names[0]].append((t1 - t0) * 1000)
            samples[names[1]].append((t2 - t1) * 1000)
            samples[names[2]].append((t3 - t2) * 1000)
            samples[names[3]].append((t2 - t1) * 1000 / k)
    reference = statistics.median(samples[names[0]])
    return f"judge {judge.version} loaded in {load_ms:.0f} ms\n" + table(list(samples.items()), reference)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--candidates", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    print(run(args.repeat, args.candidates, args.threads))


if __name__ == "__main__":
    main()
