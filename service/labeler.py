"""Background labelers: shadow labels on near-misses (and on explored would-be hits) and sampled audits of
semantic hits. Neither delays a response: both run as background tasks, audits with bounded concurrency
(skipped, not queued, when full). A label compares the two answers' embeddings, or, with `DEJA_LABEL_MODEL`, is
the LLM label judge's verdict (`service.label_judge`); a wrong hit or a right near-miss teaches its difference
(`index.match.differences`)."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

import anyio
import anyio.to_thread
from starlette.concurrency import run_in_threadpool

from index.errors import Overloaded, StoreUnavailable
from index.storage.decision_log import Label, LabelSource
from service.dialects import Dialect
from service.errors import UpstreamError
from service.label_judge import LabelCase
from service.labels import compare_answers
from service.runtime import Runtime

log = logging.getLogger("deja.labels")


# Label comparisons run in threads of their own: one waits on the embedding worker's background lane, which
# runs only while no request waits, so under load it may wait long. In the request thread pool (40 threads)
# enough of them starved the lookups and stores of the requests themselves of threads.
LABEL_THREADS = 4
# Labels waiting for one of those threads at most (as many as the background lane's 256 texts held before); past
# it a label is skipped, as one refused by a full lane is.
MAX_WAITING_LABELS = 128


class Labeler:
    def __init__(self, runtime: Runtime) -> None:
        self.rt = runtime
        self._threads = anyio.CapacityLimiter(LABEL_THREADS)

    def _compare(self, source: LabelSource, fresh: str, cached: str) -> tuple[bool, str] | None:
        """Compare two answers' texts, in a worker thread (it embeds the two answers)."""
        try:
            agreement = compare_answers(fresh, cached, self.rt.background_embedder,
                                        self.rt.settings.answer_same_similarity)
        except Overloaded as exc:  # the background lane is full: this label is skipped, requests come first
            log.info("%s label skipped: %s", source.value, exc)
            return None
        return agreement.same, agreement.detail

    def _store(self, request_id: str, source: LabelSource, case: LabelCase, same: bool, detail: str) -> None:
        try:
            self.rt.decisions.label(Label(request_id, source, same, self.rt.clock(), detail))
        except StoreUnavailable as exc:
            log.warning("%s label lost: %s", source.value, exc)
            return
        if same != case.served:  # a wrong hit, or a right near-miss: what differed is evidence for the namespace
            self.rt.differences.remember(case.namespace, case.question, case.cached_question, same)

    async def _label(self, request_id: str, source: LabelSource, case: LabelCase, fresh: str, cached: str,
                     headers: dict[str, str]) -> None:
        judge = self.rt.label_judge
        if judge is not None and source is not LabelSource.AUDIT and not self.rt.audit_sampler.spend(1):
            # Over the hour's allowance: this shadow or exploration is labelled by answer comparison instead.
            self.rt.metrics.label_calls.labels("over_ceiling").inc()
            judge = None
        if judge is not None:
            same = await judge.same(case, cached, fresh, headers)
            if same is None:
                return
            result: tuple[bool, str] | None = (same, f"label model {judge.model}")
        else:
            if self._threads.statistics().tasks_waiting >= MAX_WAITING_LABELS:
                log.info("%s label skipped: %d labels waiting", source.value, MAX_WAITING_LABELS)
                return
            result = await anyio.to_thread.run_sync(self._compare, source, fresh, cached, limiter=self._threads)
        if result is not None:
            await run_in_threadpool(self._store, request_id, source, case, *result)

    def shadow(self, request_id: str, dialect: Dialect, fresh: dict[str, Any], cached: dict[str, Any],
               case: LabelCase, headers: dict[str, str], source: LabelSource = LabelSource.SHADOW) -> None:
        """A near-miss (or an explored would-be hit, `source` explore) went upstream: would the candidate's
        answer have been right? Shadows obey DEJA_SHADOW_LABELS; exploration exists to be labelled."""
        if source is LabelSource.SHADOW and not self.rt.settings.shadow_labels:
            return
        texts = dialect.answer_text(fresh), dialect.answer_text(cached)

        async def run() -> None:
            await self._label(request_id, source, case, *texts, headers)

        self.rt.spawn(run())

    def audit(self, request_id: str, dialect: Dialect, body: Mapping[str, Any], headers: dict[str, str],
              served: dict[str, Any], case: LabelCase) -> None:
        """Re-ask upstream for a served semantic hit, in the background."""
        if self.rt.audit_slots.locked():
            self.rt.metrics.audits.labels("skipped").inc()
            return

        async def run() -> None:
            async with self.rt.audit_slots:
                upstream = self.rt.upstream_for(dialect.upstream)
                content_out = json.dumps(dialect.audit_body(body)).encode()
                try:
                    response = await upstream.send("POST", dialect.path, headers, content_out)
                    content = await upstream.read(response)
                except UpstreamError as exc:
                    self.rt.metrics.audits.labels("upstream_error").inc()
                    log.info("audit of %s failed: %s", request_id, exc)
                    return
                try:
                    fresh = json.loads(content) if response.status_code == 200 else None
                except ValueError:
                    fresh = None
                if not isinstance(fresh, dict):
                    self.rt.metrics.audits.labels("upstream_error").inc()
                    return
                await self._label(request_id, LabelSource.AUDIT, case, dialect.answer_text(fresh),
                                  dialect.answer_text(served), headers)
                self.rt.metrics.audits.labels("done").inc()

        self.rt.spawn(run())
