"""Micro-batching in front of any `Embedder`: concurrent callers' texts are embedded together by one worker
thread, requests before background work, with a bounded queue that refuses (never blocks) when full.

Why one worker: a CPU embedding of 16 short texts costs little more than one (the model's fixed cost dominates),
so under concurrency one batch serves many requests; and the worker owns the model, so no lock is contended.
"""

from __future__ import annotations

import os
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from enum import Enum

import numpy as np

from index.embedding.embedder import Embedder, Vector
from index.errors import Overloaded


class Lane(Enum):
    """Requests are always served first; background texts (shadow and audit labels) only when no request waits."""

    REQUEST = "request"
    BACKGROUND = "background"


@dataclass(frozen=True)
class BatchingConfig:
    """Sizes are counted in texts. `max_wait_seconds` is the longest a request lingers for company, and it
    lingers only when the previous batch held several requests (concurrency seen a moment ago)."""

    max_batch_texts: int = 64
    max_wait_seconds: float = 0.002
    max_queued_texts: int = 1024
    background_batch_texts: int = 8
    max_background_texts: int = 256
    # A caller gives up (and answers "overloaded") after this long; the worker never blocks a caller forever.
    result_timeout_seconds: float = 30.0
    retry_after_seconds: int = 1

    def __post_init__(self) -> None:
        if self.max_batch_texts < 1 or self.max_queued_texts < 1 or self.background_batch_texts < 1:
            raise ValueError("batch and queue sizes must be at least 1")
        if self.max_wait_seconds < 0:
            raise ValueError("max_wait_seconds must be >= 0")


def available_cores() -> int:
    """Cores this process may run on (cgroup/affinity aware where the OS says so)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def embedding_threads(cores: int) -> int:
    """Intra-op threads for the one embedding worker: every core but one, which stays for the event loop, HTTP,
    SQL and index search (the worker batches, so it does not need parallelism to keep up). On 2 cores that is
    1 thread: measured on a shared 2-core box, 2 torch threads made one embedding ~10x slower (a thread waits on
    the busy core), while 1 thread did not stall."""
    return max(1, cores - 1)


def should_linger(previous_jobs: int, previous_end: float, now: float, config: BatchingConfig) -> bool:
    """Wait for company only when several requests shared the last batch and it ended moments ago; a request
    that arrives alone (no recent concurrency) is embedded at once."""
    recent = now - previous_end <= 10 * config.max_wait_seconds
    return config.max_wait_seconds > 0 and previous_jobs > 1 and recent


@dataclass(frozen=True)
class _Job:
    texts: tuple[str, ...]
    result: Future[Vector]


class BatchingEmbedder:
    """An `Embedder` that is safe to call from many threads; `close()` stops the worker."""

    def __init__(self, inner: Embedder, config: BatchingConfig | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.dim = inner.dim
        self.config = config or BatchingConfig()
        self._clock = clock
        self._cond = threading.Condition()
        self._queues: dict[Lane, deque[_Job]] = {Lane.REQUEST: deque(), Lane.BACKGROUND: deque()}
        self._queued: dict[Lane, int] = {Lane.REQUEST: 0, Lane.BACKGROUND: 0}
        self._limits = {Lane.REQUEST: self.config.max_queued_texts, Lane.BACKGROUND: self.config.max_background_texts}
        self._previous_jobs = 0
        self._previous_end = float("-inf")
        self._closed = False
        # A model run is under way (the worker's batch, or a lone request embedding in its own thread): at most
        # one runs at a time, and texts arriving meanwhile queue for the next batch.
        self._running = False
        self.batches = 0  # batches embedded so far, for metrics and tests
        self._worker = threading.Thread(target=self._run, name="deja-embed", daemon=True)
        self._worker.start()

    def embed(self, texts: Sequence[str]) -> Vector:
        return self.embed_in(texts, Lane.REQUEST)

    def lane(self, lane: Lane) -> LaneEmbedder:
        """An `Embedder` view that submits to `lane` (give `Lane.BACKGROUND` to labelers)."""
        return LaneEmbedder(self, lane)

    def embed_in(self, texts: Sequence[str], lane: Lane) -> Vector:
        """Embed `texts` in `lane`; raises `Overloaded` when the lane's queue is full or the wait times out."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        job = _Job(tuple(texts), Future())
        with self._cond:
            if self._closed:
                raise Overloaded("the embedder is shutting down", self.config.retry_after_seconds)
            if lane is Lane.REQUEST and self._idle():
                self._running = True
                inline = True
            else:
                inline = False
        if inline:
            return self._embed_alone(job.texts)
        with self._cond:
            if self._queued[lane] and self._queued[lane] + len(job.texts) > self._limits[lane]:
                raise Overloaded(f"embedding queue full ({self._queued[lane]} texts waiting)",
                                 self.config.retry_after_seconds)
            self._queues[lane].append(job)
            self._queued[lane] += len(job.texts)
            self._cond.notify_all()
        try:
            return job.result.result(timeout=self.config.result_timeout_seconds)
        except FutureTimeout as exc:
            job.result.cancel()
            raise Overloaded("embedding did not finish in time", self.config.retry_after_seconds) from exc

    def _idle(self) -> bool:
        """Called holding the lock: no model run under way and nothing queued for one."""
        return not (self._running or self._queues[Lane.REQUEST] or self._queues[Lane.BACKGROUND])

    def _embed_alone(self, texts: tuple[str, ...]) -> Vector:
        """A request that finds the model idle embeds in its own thread: the same run the worker would make for it
        alone, without the two thread hand-offs (about a millisecond on a busy 2-core machine)."""
        done = False
        try:
            vectors = np.asarray(self.inner.embed(texts), dtype=np.float32)
            done = True
            return vectors
        finally:
            self._finished(jobs=1 if done else 0)

    def _finished(self, jobs: int) -> None:
        """The model run ended; `jobs` requests' texts were embedded in it (0: none, or it failed)."""
        with self._cond:
            self._running = False
            if jobs:
                self.batches += 1
                self._previous_jobs = jobs
                self._previous_end = self._clock()
            self._cond.notify_all()  # texts queued meanwhile: the worker takes them now

    def queued(self, lane: Lane = Lane.REQUEST) -> int:
        with self._cond:
            return self._queued[lane]

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._worker.join(timeout=5)

    def _run(self) -> None:
        while True:
            batch = self._next_batch()
            if batch is None:
                return
            live = [job for job in batch if job.result.set_running_or_notify_cancel()]
            embedded = 0
            try:
                embedded = self._embed_batch(live)
            finally:
                self._finished(jobs=embedded)

    def _embed_batch(self, live: list[_Job]) -> int:
        """Embed the live jobs' texts in one run; the number of jobs answered (0 when none or the model failed)."""
        if not live:
            return 0
        texts = [text for job in live for text in job.texts]
        try:
            vectors = np.asarray(self.inner.embed(texts), dtype=np.float32)
        except Exception as exc:  # the worker must outlive any model error; its callers receive it
            for job in live:
                job.result.set_exception(exc)
            return 0
        start = 0
        for job in live:
            job.result.set_result(vectors[start:start + len(job.texts)])
            start += len(job.texts)
        return len(live)

    def _next_batch(self) -> list[_Job] | None:
        with self._cond:
            while not self._closed and (self._running or not (self._queues[Lane.REQUEST]
                                                               or self._queues[Lane.BACKGROUND])):
                self._cond.wait()
            if self._closed:
                for queue in self._queues.values():
                    for job in queue:
                        job.result.cancel()
                    queue.clear()
                return None
            self._running = True
            if self._queues[Lane.REQUEST]:
                self._linger()
                return self._take(Lane.REQUEST, self.config.max_batch_texts)
            return self._take(Lane.BACKGROUND, self.config.background_batch_texts)

    def _linger(self) -> None:
        """Called holding the lock with at least one request queued."""
        now = self._clock()
        if not should_linger(self._previous_jobs, self._previous_end, now, self.config):
            return
        deadline = now + self.config.max_wait_seconds
        while not self._closed and self._queued[Lane.REQUEST] < self.config.max_batch_texts:
            remaining = deadline - self._clock()
            if remaining <= 0:
                return
            self._cond.wait(remaining)

    def _take(self, lane: Lane, max_texts: int) -> list[_Job]:
        queue = self._queues[lane]
        batch = [queue.popleft()]  # one job always goes, even when larger than a batch
        size = len(batch[0].texts)
        while queue and size + len(queue[0].texts) <= max_texts:
            job = queue.popleft()
            batch.append(job)
            size += len(job.texts)
        self._queued[lane] -= size
        return batch


class LaneEmbedder:
    """`Embedder` protocol over one lane of a `BatchingEmbedder`."""

    def __init__(self, batcher: BatchingEmbedder, lane: Lane) -> None:
        self.batcher = batcher
        self.lane = lane
        self.model_id = batcher.model_id
        self.dim = batcher.dim

    def embed(self, texts: Sequence[str]) -> Vector:
        return self.batcher.embed_in(texts, self.lane)
