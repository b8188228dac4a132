"""What the learner's pass costs and whether it slows the hit path, by the number of active namespaces, on SQLite
and on PostgreSQL, side by side in one run.

For each backend and each count of namespaces, a fresh database gets that many namespaces of evidence through the
real write path (decisions flushed through the decision log, which updates the running totals; labels folded in
by `EvidenceStore.settle`), a first pass chooses every namespace once (a replica's start-up), then passes run at
the production cadence (`--interval` seconds) in a thread of their own, each after `--labels` new labels written
through `DecisionLog.label` on as many namespaces (new near misses, labelled), while the main thread asks one
namespace's semantic hits through the in-process gateway. A pass's CPU is its thread's CPU time (SQLite's work
included; PostgreSQL's server side is not: its wall time is printed beside it). The goals: a pass at 10,000
namespaces with 100 new labels costs at most 1 s of CPU, and the hit p50 at 10,000 is within 1.2x of that at 1.

A pass is the whole budget pass (`Upkeep.refresh_budget`): the decision log's flush, the count of the decisions
logged since the last pass, the tallies changed since the
last pass and the remembered differences and answer variation (`BudgetKeeper.refresh`), then the learner
(`ThresholdKeeper.refresh`); the columns split its CPU. None of them reads the decision log: the tallies and the
evidence are running totals read by version, so the log's size (10 million decisions, or these few) changes no
pass's cost; the decisions here are only as many as the totals' state needs. `flush ms` is the tick's flush of
2,000 exact hits over the namespaces (logged uncounted), `bare ms` the same insert by a log with no totals (medians
of 3, each taken first in turn), and `count ms` the pass's count of 2,000 of them into the tallies and the evidence
(`DecisionLog.count`: claimed, counted and marked in one transaction).

    .venv/bin/python -m bench.learner [--namespaces 1,1000,10000] [--labels 100] [--passes 3] [--interval 5]
                                      [--logged 10000000]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import insert, text

from index.match.outcome import Reason
from index.records import Verdict
from index.storage.decision_log import DecisionLog, DecisionRecord, Label, LabelSource
from index.storage.schema import labels
from service.credentials import namespace_of
from service.runtime import Runtime
from support.inprocess import InProcessGateway, inprocess_gateway
from support.services import PgDatabase

KEY = "sk-bench-learner"
STORED = "how do i reset the password of my account"
HIT = "how do i reset the password of my account please"


@dataclass
class Figures:
    """One (backend, namespaces) run."""

    backend: str
    namespaces: int
    streams: int = 0
    first_cpu: float = 0.0
    first_wall: float = 0.0
    pass_cpu: list[float] = field(default_factory=list)
    learner_cpu: list[float] = field(default_factory=list)
    flush_ms: float = 0.0
    bare_flush_ms: float = 0.0
    count_ms: float = 0.0
    pass_wall: list[float] = field(default_factory=list)
    chosen: list[int] = field(default_factory=list)
    hits_ms: list[float] = field(default_factory=list)


def _decision(namespace: str, n: int, rng: random.Random, at: float) -> DecisionRecord:
    """A near miss or a would-be hit between 0.80 and 1.0, or (one in five) an exact hit."""
    if n % 5 == 4:
        return DecisionRecord(uuid.uuid4().hex, namespace, "m", "p", 1, "c", 1.0, 0.92, (), Verdict.EXACT_HIT.value,
                              Reason.HIT, None, at, "chat", False, "cosine")
    similarity = round(rng.uniform(0.80, 0.999), 3)
    verdict = Verdict.SEMANTIC_HIT if similarity >= 0.92 else Verdict.MISS
    reason = Reason.HIT if verdict is Verdict.SEMANTIC_HIT else Reason.BELOW_THRESHOLD
    return DecisionRecord(uuid.uuid4().hex, namespace, "m", "p", 1, "c", similarity, 0.92, (), verdict.value, reason,
                          None, at, "chat", True, "cosine")


def populate(rt: Runtime, names: list[str], per_namespace: int, labelled: int, rng: random.Random) -> None:
    """`per_namespace` decisions per namespace through the decision log, `labelled` of them labelled (inserted as
    labels not yet counted, then folded in by the store, as labels written before their decisions are)."""
    batch: list[DecisionRecord] = []
    rows: list[dict[str, object]] = []
    for name in names:
        for n in range(per_namespace):
            record = _decision(name, n, rng, float(n))
            batch.append(record)
            if record.would_serve and n < labelled * 2 and n % 2 == 0:
                rows.append({"request_id": record.request_id, "source": LabelSource.SHADOW.value,
                             "correct": rng.random() >= 0.03, "created_at": float(n)})
            if len(batch) >= 500:
                rt.decisions.record(batch)
                batch = []
    rt.decisions.record(batch)
    rt.decisions.count()
    with rt.engine.begin() as conn:
        for start in range(0, len(rows), 1000):
            conn.execute(insert(labels), rows[start:start + 1000])
    rt.evidence.settle()


def fill_log(rt: Runtime, names: list[str], count: int) -> None:
    """`count` old decisions already counted (a long-running deployment's log), spread over the namespaces,
    written by SQL alone: no pass may read them, and `DecisionLog.count` must find the uncounted ones beside them
    by its index, not by a scan."""
    per = max(1, count // len(names))
    with rt.engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            conn.execute(text(
                "INSERT INTO deja_decisions (request_id, namespace, model, prompt, similarity, min_similarity, stages,"
                " verdict, created_at, api, would_serve, kind, counted)"
                " SELECT 'old-' || g, :prefix || lpad(((g % :names))::text, 5, '0'), 'm', 'p', 0.9, 0.92, '[]',"
                " 'miss', g / 1e6, 'chat', true, 'cosine', true FROM generate_series(1, :count) AS g"),
                {"prefix": "bench-", "names": len(names), "count": per * len(names)})
        else:
            conn.execute(text(
                "WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < :count)"
                " INSERT INTO deja_decisions (request_id, namespace, model, prompt, similarity, min_similarity,"
                " stages, verdict, created_at, api, would_serve, kind, counted)"
                " SELECT 'old-' || n, :prefix || substr('00000' || (n % :names), -5, 5), 'm', 'p', 0.9, 0.92, '[]',"
                " 'miss', n / 1e6, 'chat', 1, 'cosine', 1 FROM g"),
                {"prefix": "bench-", "names": len(names), "count": per * len(names)})


def timed_pass(rt: Runtime) -> tuple[float, float, float, int]:
    """One whole budget pass in this thread, as `Upkeep.refresh_budget` runs it: (CPU seconds of this thread, of
    which the learner's, wall seconds, streams chosen)."""
    cpu, wall = time.thread_time(), time.perf_counter()
    rt.flush_decisions()
    rt.upkeep.count_decisions()
    rt.budget.refresh()
    learner = time.thread_time()
    rt.threshold_keeper.refresh()
    end = time.thread_time()
    return end - cpu, end - learner, time.perf_counter() - wall, rt.threshold_keeper.chosen


def timed_flush(rt: Runtime, names: list[str], rng: random.Random, rounds: int = 3) -> tuple[float, float, float]:
    """Milliseconds (medians of `rounds`, the two taken in turn first) to log 2,000 exact hits over `names` as the
    tick's flush does (uncounted, for the pass) and the same insert by a log without totals (logged counted), then
    the pass's count of 2,000 of them (claimed, counted into the tallies and the evidence, marked, in one
    transaction; the mean over the rounds)."""
    def hits() -> list[DecisionRecord]:
        return [_decision(names[i % len(names)], 4, rng, 2e6) for i in range(2000)]

    def timed(log: DecisionLog, records: list[DecisionRecord]) -> float:
        started = time.perf_counter()
        log.record(records)
        return (time.perf_counter() - started) * 1000

    rt.flush_decisions()
    rt.decisions.count()  # what the gateway's own requests logged: not part of the 2,000s
    flush, bare = [], []
    for n in range(rounds):
        logged, plain = hits(), hits()
        if n % 2:
            bare.append(timed(DecisionLog(rt.engine), plain))
            flush.append(timed(rt.decisions, logged))
        else:
            flush.append(timed(rt.decisions, logged))
            bare.append(timed(DecisionLog(rt.engine), plain))
    started = time.perf_counter()
    assert rt.decisions.count() == 2000 * rounds
    count = (time.perf_counter() - started) * 1000 / rounds
    return statistics.median(flush), statistics.median(bare), count


def new_labels(rt: Runtime, names: list[str], count: int, rng: random.Random) -> None:
    """`count` new near misses on as many namespaces (round robin), flushed, then labelled one by one."""
    targets = [names[i % len(names)] for i in range(count)]
    records = [_decision(name, 0, rng, 1e6) for name in targets]
    rt.decisions.record(records)
    for record in records:
        rt.decisions.label(Label(record.request_id, LabelSource.SHADOW, rng.random() >= 0.03, 1e6))


async def measure(gw: InProcessGateway, figures: Figures, args: argparse.Namespace) -> None:
    rt, rng = gw.runtime, random.Random(1)
    hit_namespace = namespace_of({"authorization": f"Bearer {KEY}"}, rt.credentials, rt.secret)
    assert hit_namespace is not None
    names = [hit_namespace, *(f"bench-{i:05d}" for i in range(figures.namespaces - 1))]
    if args.logged:
        await asyncio.to_thread(fill_log, rt, names, args.logged)
    await asyncio.to_thread(populate, rt, names, args.decisions, args.prior_labels, rng)
    figures.first_cpu, _, figures.first_wall, figures.streams = await asyncio.to_thread(timed_pass, rt)
    assert (await gw.chat(STORED, key=KEY)).headers["x-deja-cache"] in ("miss", "hit-semantic")
    for _ in range(20):  # warm-up
        assert (await gw.chat(HIT, key=KEY)).headers["x-deja-cache"] == "hit-semantic"
    stop = threading.Event()

    def passes() -> None:
        for _ in range(args.passes):
            if stop.wait(args.interval):
                return
            new_labels(rt, names, args.labels, rng)
            cpu, learner, wall, chosen = timed_pass(rt)
            figures.pass_cpu.append(cpu)
            figures.learner_cpu.append(learner)
            figures.pass_wall.append(wall)
            figures.chosen.append(chosen)

    worker = threading.Thread(target=passes, daemon=True)
    worker.start()
    while worker.is_alive():
        started = time.perf_counter()
        response = await gw.chat(HIT, key=KEY)
        figures.hits_ms.append((time.perf_counter() - started) * 1000)
        assert response.headers["x-deja-cache"] == "hit-semantic", response.headers
        await asyncio.sleep(0.01)
    stop.set()
    # Last: the exact hits it logs grow small namespaces' traffic enough to publish them again.
    figures.flush_ms, figures.bare_flush_ms, figures.count_ms = await asyncio.to_thread(timed_flush, rt, names, rng)


async def run_one(backend: str, namespaces: int, args: argparse.Namespace) -> Figures:
    figures = Figures(backend, namespaces)
    with tempfile.TemporaryDirectory(prefix="deja-bench-learner-") as tmp:
        folder = Path(tmp)
        if backend == "sqlite":
            url = f"sqlite:///{folder / 'deja.db'}"
            async with inprocess_gateway(folder, database_url=url, threshold_interval_seconds=3600.0,
                                         shadow_labels=False, log_level="warning") as gw:
                await measure(gw, figures, args)
        else:
            with PgDatabase() as db:
                async with inprocess_gateway(folder, database_url=db.url, threshold_interval_seconds=3600.0,
                                             shadow_labels=False, log_level="warning") as gw:
                    await measure(gw, figures, args)
    return figures


def report(results: list[Figures]) -> None:
    """The rows so far, flushed."""
    print(f"{'backend':<10}{'namespaces':>11}{'streams':>9}{'first pass CPU s':>18}{'pass CPU s':>12}"
          f"{'learner s':>11}{'pass wall s':>13}{'chosen':>8}{'hit p50 ms':>12}{'p50 / 1 ns':>12}"
          f"{'flush ms':>10}{'bare ms':>9}{'count ms':>10}")
    for figures in results:
        one = next(r for r in results if r.backend == figures.backend and r.namespaces == 1) \
            if any(r.backend == figures.backend and r.namespaces == 1 for r in results) else figures
        p50 = statistics.median(figures.hits_ms)
        print(f"{figures.backend:<10}{figures.namespaces:>11}{figures.streams:>9}{figures.first_cpu:>18.2f}"
              f"{statistics.median(figures.pass_cpu):>12.3f}{statistics.median(figures.learner_cpu):>11.3f}"
              f"{statistics.median(figures.pass_wall):>13.3f}{round(statistics.median(figures.chosen)):>8}{p50:>12.2f}"
              f"{p50 / statistics.median(one.hits_ms):>12.2f}{figures.flush_ms:>10.1f}{figures.bare_flush_ms:>9.1f}"
              f"{figures.count_ms:>10.1f}",
              flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--namespaces", default="1,1000,10000", help="counts of active namespaces")
    parser.add_argument("--backends", default="sqlite,postgresql")
    parser.add_argument("--labels", type=int, default=100, help="new labels before each measured pass")
    parser.add_argument("--passes", type=int, default=3, help="measured passes per run")
    parser.add_argument("--interval", type=float, default=5.0, help="seconds between passes (the default cadence)")
    parser.add_argument("--decisions", type=int, default=10, help="decisions per namespace before the first pass")
    parser.add_argument("--logged", type=int, default=0,
                        help="old decisions already counted in the log before the run (10000000: a 10M log)")
    parser.add_argument("--prior-labels", type=int, default=2, help="of those, labelled per namespace")
    args = parser.parse_args()
    results = []
    for backend in args.backends.split(","):
        for count in (int(c) for c in args.namespaces.split(",")):
            figures = asyncio.run(run_one(backend, count, args))
            results.append(figures)
            report(results)  # as each row comes in: a long run cut short keeps what it measured


if __name__ == "__main__":
    main()
