"""Cost of the rule guards per candidate check, next to one MiniLM embedding of a prompt.

    .venv/bin/python -m bench.guards [--repeat 5] [--embed-repeat 50]

Each stage checks a few hundred (query, cached) pairs of short and long prompts, in two regimes:
"cold" analyses both prompts (cache_size=0); "cached side warm" has seen the cached prompt before,
which is the usual case since a cached entry is compared with many queries.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from bench.common import p
from index.embedding.embedder import MiniLMEmbedder
from index.guards.polarity import PolarityStage
from index.guards.text import CACHE_SIZE
from index.guards.values import ValueStage

_SHORT = [
    "How do I cancel my subscription?",
    "Is the API rate limited?",
    "Convert 5 km to miles",
    "What's new in Python 3.12?",
    "Refund policy for annual plans",
    "How do I enable two-factor authentication?",
    "Sort the orders table by created_at descending",
    "Best time to visit Lisbon in March",
    "How many grams is 2 cups of flour?",
    "Can I bring a power bank in my carry-on?",
    "Why isn't my Docker container starting?",
    "What's the monthly payment on a $300,000 mortgage at 6.5% over 30 years?",
]
_LONG = [
    "We run a Django app in Kubernetes with three replicas behind an nginx ingress. Since we deployed "
    "version 2.4.1 this afternoon, roughly one request in ten fails with a 502, yet the pods show no "
    "errors and readiness checks pass. What are the likely causes and how should we investigate?",
    "I'm hosting a dinner for 8 people on Saturday and one guest can't eat gluten. I'd like a main course "
    "I can prepare the day before that reheats well, with about $80 for ingredients. Suggest a menu.",
    "I have a PostgreSQL table orders(id, customer_id, amount, status, created_at) with 20 million rows. "
    "Write a query returning each customer's total for paid orders in the last 30 days above 500.",
]
_EDITS = [
    lambda s: s,
    lambda s: s.lower(),
    lambda s: "Quick question: " + s,
    lambda s: s.replace("How do I", "How can I").replace("What's", "What is"),
    lambda s: s.replace("?", "") + " please?",
    lambda s: s.replace("is", "is not", 1),
    lambda s: s.replace("2", "3").replace("5", "10"),
    lambda s: s.replace("enable", "disable").replace("annual", "monthly"),
]


def pairs() -> list[tuple[str, str]]:
    """Every prompt against each edit of itself and of the next prompt: a few hundred pairs."""
    prompts = _SHORT + _LONG
    out = []
    for n, prompt in enumerate(prompts):
        other = prompts[(n + 1) % len(prompts)]
        for edit in _EDITS:
            out.append((edit(prompt), prompt))
            out.append((edit(other), prompt))
            out.append((prompt, edit(prompt) + " Thanks!"))
    return out


Checker = Callable[[str, str], object]


def polarity(cache_size: int) -> Checker:
    return PolarityStage(cache_size=cache_size).check


def values(cache_size: int) -> Checker:
    return ValueStage(cache_size=cache_size).check


def both(cache_size: int) -> Checker:
    """Both stages in decision order, as `rule_stages(True, True)` runs them on a passing candidate."""
    stages = (PolarityStage(cache_size=cache_size), ValueStage(cache_size=cache_size))
    return lambda query, cached: [stage.check(query, cached) for stage in stages]


def per_check_us(make: Callable[[int], Checker], cases: list[tuple[str, str]], repeat: int, warm: bool) -> list[float]:
    """Microseconds per check. Cold: no per-prompt cache. Warm: the cached prompt was analysed before."""
    samples: list[float] = []
    for _ in range(repeat):
        check = make(CACHE_SIZE if warm else 0)
        for query, cached in cases:
            if warm:
                check("an unrelated earlier query", cached)
            t0 = time.perf_counter()
            check(query, cached)
            samples.append((time.perf_counter() - t0) * 1e6)
    return samples


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="rule guard cost per check vs one MiniLM embedding")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--embed-repeat", type=int, default=50)
    args = parser.parse_args(argv)
    cases = pairs()
    embedder = MiniLMEmbedder()
    prompt = _SHORT[0]
    for _ in range(3):
        embedder.embed([prompt])
    embed_us = []
    for _ in range(args.embed_repeat):
        t0 = time.perf_counter()
        embedder.embed([prompt])
        embed_us.append((time.perf_counter() - t0) * 1e6)
    reference = statistics.median(embed_us)
    rows: list[tuple[str, list[float]]] = [("embed one prompt (MiniLM)", embed_us)]
    for name, make in (("polarity", polarity), ("values", values), ("polarity + values", both)):
        rows.append((f"{name}, cold", per_check_us(make, cases, args.repeat, warm=False)))
        rows.append((f"{name}, cached side warm", per_check_us(make, cases, args.repeat, warm=True)))
    print(f"{len(cases)} pairs x {args.repeat} rounds per row")
    print(f"{'what':<34}{'p50 us':>10}{'p99 us':>10}{'p50 / embed':>14}")
    for name, samples in rows:
        p50 = statistics.median(samples)
        print(f"{name:<34}{p50:>10.1f}{p(samples, 0.99):>10.1f}{p50 / reference:>14.4f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
