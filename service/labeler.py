"""Background labelers: shadow labels on near-misses (and on explored would-be hits) and sampled audits of
semantic hits. Neither delays a response: both run as background tasks, audits with bounded concurrency
(skipped, not queued, when full)."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

from starlette.concurrency import run_in_threadpool

from index.errors import Overloaded, StoreUnavailable
from index.storage.decision_log import Label, LabelSource
from service.dialects import Dialect
from service.errors import UpstreamError
from service.labels import compare_answers
from service.runtime import Runtime

log = logging.getLogger("deja.labels")


class Labeler:
    def __init__(self, runtime: Runtime) -> None:
        self.rt = runtime

    def _record(self, request_id: str, source: LabelSource, fresh: str, cached: str) -> None:
        """Compare two answers' texts and store the label, in a worker thread (it embeds the two answers)."""
        try:
            agreement = compare_answers(fresh, cached, self.rt.background_embedder,
                                        self.rt.settings.answer_same_similarity)
        except Overloaded as exc:  # the background lane is full: this label is skipped, requests come first
            log.info("%s label skipped: %s", source.value, exc)
            return
        try:
            self.rt.decisions.label(Label(request_id, source, agreement.same, self.rt.clock(), agreement.detail))
        except StoreUnavailable as exc:
            log.warning("%s label lost: %s", source.value, exc)

    def shadow(self, request_id: str, dialect: Dialect, fresh: dict[str, Any], cached: dict[str, Any],
               source: LabelSource = LabelSource.SHADOW) -> None:
        """A near-miss (or an explored would-be hit, `source` explore) went upstream: would the candidate's
        answer have been right? Shadows obey DEJA_SHADOW_LABELS; exploration exists to be labelled."""
        if source is LabelSource.SHADOW and not self.rt.settings.shadow_labels:
            return
        texts = dialect.answer_text(fresh), dialect.answer_text(cached)

        async def run() -> None:
            await run_in_threadpool(self._record, request_id, source, *texts)

        self.rt.spawn(run())

    def audit(self, request_id: str, dialect: Dialect, body: Mapping[str, Any], headers: dict[str, str],
              served: dict[str, Any]) -> None:
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
                await run_in_threadpool(self._record, request_id, LabelSource.AUDIT, dialect.answer_text(fresh),
                                        dialect.answer_text(served))
                self.rt.metrics.audits.labels("done").inc()

        self.rt.spawn(run())
