from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from index.embedding.batching import BatchingConfig, BatchingEmbedder, Lane, should_linger
from index.embedding.embedder import HashEmbedder, Vector
from index.errors import Overloaded


class GatedEmbedder:
    """Records every batch; while `gate` is clear, each call blocks until it is set (to build up a queue)."""

    def __init__(self) -> None:
        self.inner = HashEmbedder(32)
        self.model_id = self.inner.model_id
        self.dim = self.inner.dim
        self.calls: list[list[str]] = []
        self.gate = threading.Event()
        self.entered = threading.Event()

    def embed(self, texts: Sequence[str]) -> Vector:
        self.calls.append(list(texts))
        self.entered.set()
        assert self.gate.wait(30), "test gate never opened"
        return self.inner.embed(texts)


@pytest.fixture
def gated() -> Iterator[tuple[GatedEmbedder, BatchingEmbedder]]:
    inner = GatedEmbedder()
    batcher = BatchingEmbedder(inner, BatchingConfig(max_wait_seconds=0, max_queued_texts=8))
    yield inner, batcher
    inner.gate.set()
    batcher.close()


def wait_until(predicate: object, what: str) -> None:
    event = threading.Event()
    for _ in range(3000):
        if predicate():  # type: ignore[operator]
            return
        event.wait(0.01)
    raise AssertionError(f"never happened: {what}")


def test_concurrent_callers_are_batched_and_each_gets_its_own_vectors(
    gated: tuple[GatedEmbedder, BatchingEmbedder]
) -> None:
    inner, batcher = gated
    texts = [f"question number {i} about item {i * 7}" for i in range(5)]
    with ThreadPoolExecutor(5) as pool:
        first = pool.submit(batcher.embed, [texts[0]])
        assert inner.entered.wait(30)
        rest = [pool.submit(batcher.embed, [t, t + " again"]) for t in texts[1:]]
        wait_until(lambda: batcher.queued() == 8, "four callers queued behind the first batch")
        inner.gate.set()
        results = [first.result(30), *(f.result(30) for f in rest)]
    assert len(inner.calls) == 2 and len(inner.calls[1]) == 8  # the four waiting callers shared one batch
    expected = HashEmbedder(32)
    np.testing.assert_allclose(results[0], expected.embed([texts[0]]))
    for text, got in zip(texts[1:], results[1:], strict=True):
        np.testing.assert_allclose(got, expected.embed([text, text + " again"]))


def test_a_full_queue_refuses_at_once_with_retry_after(gated: tuple[GatedEmbedder, BatchingEmbedder]) -> None:
    inner, batcher = gated
    with ThreadPoolExecutor(4) as pool:
        running = pool.submit(batcher.embed, ["busy"])
        assert inner.entered.wait(30)
        queued = pool.submit(batcher.embed, [f"t{i}" for i in range(8)])
        wait_until(lambda: batcher.queued() == 8, "queue filled to its bound")
        with pytest.raises(Overloaded) as refused:
            batcher.embed(["one more"])
        assert refused.value.retry_after_seconds >= 1
        assert batcher.queued() == 8  # the refused texts never entered
        inner.gate.set()
        assert running.result(30).shape == (1, 32) and queued.result(30).shape == (8, 32)


def test_requests_go_before_background_texts(gated: tuple[GatedEmbedder, BatchingEmbedder]) -> None:
    inner, batcher = gated
    background = batcher.lane(Lane.BACKGROUND)
    with ThreadPoolExecutor(4) as pool:
        pool.submit(batcher.embed, ["first request"])
        assert inner.entered.wait(30)
        late_background = pool.submit(background.embed, ["shadow answer a", "shadow answer b"])
        wait_until(lambda: batcher.queued(Lane.BACKGROUND) == 2, "background queued")
        late_request = pool.submit(batcher.embed, ["second request"])
        wait_until(lambda: batcher.queued() == 1, "request queued")
        inner.gate.set()
        late_background.result(30), late_request.result(30)
    assert inner.calls == [["first request"], ["second request"], ["shadow answer a", "shadow answer b"]]


def test_a_request_alone_does_not_linger() -> None:
    # A linger of an hour: if a lone request waited for company, result() would time out and fail the test.
    config = BatchingConfig(max_wait_seconds=3600, result_timeout_seconds=60)
    batcher = BatchingEmbedder(HashEmbedder(32), config)
    try:
        for text in ("one", "two", "three"):
            assert batcher.embed([text]).shape == (1, 32)
    finally:
        batcher.close()


@pytest.mark.parametrize(("previous_jobs", "since_end", "lingers"), [
    (1, 0.0, False),       # the last batch was one request: nobody to wait for
    (0, 0.0, False),       # first request ever
    (5, 0.001, True),      # several requests shared a batch a moment ago
    (5, 10.0, False),      # concurrency seen, but long ago
], ids=["alone", "first", "busy", "idle-after-burst"])
def test_linger_only_under_recent_concurrency(previous_jobs: int, since_end: float, lingers: bool) -> None:
    config = BatchingConfig(max_wait_seconds=0.002)
    assert should_linger(previous_jobs, 100.0, 100.0 + since_end, config) is lingers


def test_model_errors_reach_the_caller_and_the_worker_survives() -> None:
    class Failing(HashEmbedder):
        def embed(self, texts: Sequence[str]) -> Vector:
            if "boom" in texts:
                raise RuntimeError("model failed")
            return super().embed(texts)

    batcher = BatchingEmbedder(Failing(16))
    try:
        with pytest.raises(RuntimeError, match="model failed"):
            batcher.embed(["boom"])
        assert batcher.embed(["fine"]).shape == (1, 16)
    finally:
        batcher.close()


def test_closed_batcher_refuses() -> None:
    batcher = BatchingEmbedder(HashEmbedder(16))
    batcher.close()
    with pytest.raises(Overloaded):
        batcher.embed(["late"])


class ThreadRecordingEmbedder(HashEmbedder):
    def __init__(self) -> None:
        super().__init__(32)
        self.threads: list[str] = []

    def embed(self, texts: Sequence[str]) -> Vector:
        self.threads.append(threading.current_thread().name)
        return super().embed(texts)


def test_a_request_finding_the_model_idle_embeds_in_its_own_thread_and_gets_the_same_vectors() -> None:
    inner = ThreadRecordingEmbedder()
    batcher = BatchingEmbedder(inner, BatchingConfig())
    try:
        vectors = batcher.embed(["alone"])
        background = batcher.lane(Lane.BACKGROUND).embed(["a shadow answer"])
    finally:
        batcher.close()
    assert inner.threads == [threading.current_thread().name, "deja-embed"]
    assert np.array_equal(vectors, HashEmbedder(32).embed(["alone"])) and background.shape == (1, 32)


def test_texts_arriving_while_a_lone_request_runs_wait_for_the_next_batch(
        gated: tuple[GatedEmbedder, BatchingEmbedder]) -> None:
    inner, batcher = gated
    with ThreadPoolExecutor(4) as pool:
        first = pool.submit(batcher.embed, ["first request"])
        assert inner.entered.wait(30)
        later = [pool.submit(batcher.embed, [f"request {i}"]) for i in range(3)]
        wait_until(lambda: batcher.queued() == 3, "requests queued")
        inner.gate.set()
        first.result(30), [f.result(30) for f in later]
    assert inner.calls[0] == ["first request"] and sorted(inner.calls[1]) == ["request 0", "request 1", "request 2"]
