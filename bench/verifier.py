"""Verifier latency, side by side in one run: one MiniLM embedding vs one verifier check per pair.

Each round times the embedding of one prompt and the verifier on one (query, cached) pair, interleaved, so
CPU contention from other processes hits both alike; ratios are to the embedding's median.

    .venv/bin/python -m bench.verifier [--repeat 200] [--threads 2]
"""

from __future__ import annotations

import argparse
import statistics
import time

from bench.common import table
from index.embedder import MiniLMEmbedder
from index.verifier import VerifierStage

# Written for this benchmark: short and long question pairs, like the prompts the cache compares.
PAIRS = (
    ("How do I enable gzip compression in nginx?", "How do I disable gzip compression in nginx?"),
    ("Is the API rate limited?", "Is the API not rate limited?"),
    ("How do I cancel my subscription?", "What's the process for ending my paid plan so I stop getting charged?"),
    ("Convert 5 km to miles", "How many miles is 5 kilometers?"),
    (
        "Write a Python function that reads a CSV file with a header row, skips blank lines and returns a list "
        "of dictionaries keyed by column name, converting numeric fields to floats where possible.",
        "I need Python code to load a CSV (first row is the header) into a list of dicts, ignoring empty lines "
        "and turning numbers into floats. Can you write the function?",
    ),
)


def run(repeat: int, threads: int) -> str:
    embedder = MiniLMEmbedder(threads=threads)
    verifier = VerifierStage()
    samples: dict[str, list[float]] = {"embed 1 prompt (MiniLM)": [], "verifier check, 1 pair": []}
    for round_ in range(repeat + 5):
        query, cached = PAIRS[round_ % len(PAIRS)]
        t0 = time.perf_counter()
        embedder.embed([query])
        t1 = time.perf_counter()
        verifier.check(query, cached)
        t2 = time.perf_counter()
        if round_ >= 5:  # warm-up rounds are not counted
            samples["embed 1 prompt (MiniLM)"].append((t1 - t0) * 1000)
            samples["verifier check, 1 pair"].append((t2 - t1) * 1000)
    reference = statistics.median(samples["embed 1 prompt (MiniLM)"])
    return table(list(samples.items()), reference)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    print(run(args.repeat, args.threads))


if __name__ == "__main__":
    main()
