"""Small helpers shared by the benchmark scripts: percentiles and a side-by-side table."""

from __future__ import annotations

import io
import json
import statistics
import tarfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

# GPTCache's QQP duplicate pairs, read from ../shared at run time (non-commercial: benchmarks only, never shipped).
QQP = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "gptcache_similar_qqp" / "similiar_qqp_full.json.gz"


def qqp_rows() -> list[dict[str, Any]]:
    """The QQP pair rows (`text_a`, `text_b`, `label`) from the shared archive."""
    with tarfile.open(QQP) as tar:
        member = next(m for m in tar.getmembers() if m.name.endswith(".json"))
        extracted = tar.extractfile(member)
        assert extracted is not None
        rows: list[dict[str, Any]] = json.load(io.TextIOWrapper(extracted, encoding="utf-8"))
    return rows


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
