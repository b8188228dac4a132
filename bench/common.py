"""Small helpers shared by the benchmark scripts: percentiles and a side-by-side table."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def timed_ms(fn: Callable[[], object], repeat: int, warmup: int = 3) -> list[float]:
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1000)
    return samples


def p(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def table(rows: list[tuple[str, list[float]]], reference: float) -> str:
    lines = [f"{'what':<34}{'p50 ms':>10}{'p99 ms':>10}{'mean ms':>10}{'p50 / embed':>14}"]
    for name, samples in rows:
        p50 = statistics.median(samples)
        lines.append(f"{name:<34}{p50:>10.3f}{p(samples, 0.99):>10.3f}{statistics.fmean(samples):>10.3f}"
                     f"{p50 / reference:>14.2f}")
    return "\n".join(lines)
