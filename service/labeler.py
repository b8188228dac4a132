"""Background labelers: shadow labels on near misses and sampled audits of semantic hits. Neither delays a
response: both run as background tasks, audits with bounded concurrency (skipped, not queued, when full). A label
compares the two answers against how much the upstream's own answers vary (`index.match.answers`: an audit re-asks
twice, and the namespace keeps a baseline of fresh-vs-fresh similarity), or, with `DEJA_LABEL_MODEL`, is the label
model's verdict (`service.label_model`), weighted by its error rate; a wrong hit or a right near miss is one label
of its difference (`index.match.differences`). Who labels, when a shadow asks again and what a label teaches are
`index.match.labelling`'s rules; this module does the I/O."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

import anyio
import anyio.to_thread
from starlette.concurrency import run_in_threadpool

from index.errors import Overloaded, StoreUnavailable
from index.match.labelling import LabelCase, LabelRules
from index.match.outcome import Lookup
from index.storage.decision_log import Label, LabelSource
from service.dialects import Dialect
from service.errors import UpstreamError
from service.ledger import Account
from service.runtime import Runtime
from service.upstream import Upstream

log = logging.getLogger("deja.labels")


# Label comparisons run in threads of their own: one waits on the embedding worker's background lane, which
# runs only while no request waits, so under load it may wait long. In the request thread pool (40 threads)
# enough of them starved the lookups and stores of the requests themselves of threads.
LABEL_THREADS = 4
# Labels waiting for one of those threads at most (as many as the background lane's 256 texts held before); past
# it a label is skipped, as one refused by a full lane is.
MAX_WAITING_LABELS = 128


class Labeler:
    def __init__(self, runtime: Runtime, rules: LabelRules) -> None:
        self.rt = runtime
        self.rules = rules
        self._threads = anyio.CapacityLimiter(LABEL_THREADS)

    def _compare(self, source: LabelSource, namespace: str, fresh: str, cached: str,
                 second: str | None) -> tuple[bool, str, float] | None:
        """Compare two answers' texts, in a worker thread (it embeds the answers); None: no label."""
        try:
            agreement = self.rules.compare(namespace, fresh, cached, second)
        except Overloaded as exc:  # the background lane is full: this label is skipped, requests come first
            log.info("%s label skipped: %s", source.value, exc)
            return None
        if agreement.same is None:
            self.rt.metrics.label_calls.labels("no_label").inc()
            log.info("%s not labelled: %s", source.value, agreement.detail)
            return None
        return agreement.same, agreement.detail, 1.0

    def _store(self, request_id: str, source: LabelSource, case: LabelCase, same: bool, detail: str,
               weight: float) -> None:
        try:
            self.rt.decisions.label(Label(request_id, source, same, self.rt.clock(), detail))
            self.rules.teach(case, same, weight)
        except StoreUnavailable as exc:
            log.warning("%s label lost: %s", source.value, exc)

    async def _label(self, request_id: str, source: LabelSource, case: LabelCase, fresh: str, cached: str,
                     headers: dict[str, str], account: Account, second: str | None = None) -> None:
        label_model = self.rt.label_model if self.rules.by_label_model(source is LabelSource.AUDIT) else None
        if label_model is None and self.rt.label_model is not None:
            # Over the hour's allowance: this shadow is labelled by answer comparison instead.
            self.rt.metrics.label_calls.labels("over_allowance").inc()
        if label_model is not None:
            same = await label_model.same(case, cached, fresh, headers, account)
            if same is None:
                return
            result: tuple[bool, str, float] | None = (same, f"label model {label_model.model}",
                                                      self.rules.config.model_weight)
        else:
            if self._threads.statistics().tasks_waiting >= MAX_WAITING_LABELS:
                log.info("%s label skipped: %d labels waiting", source.value, MAX_WAITING_LABELS)
                return
            result = await anyio.to_thread.run_sync(self._compare, source, case.namespace, fresh, cached, second,
                                                    limiter=self._threads)
        if result is not None:
            await run_in_threadpool(self._store, request_id, source, case, *result)

    def shadow(self, request_id: str, dialect: Dialect, fresh: dict[str, Any], lookup: Lookup, case: LabelCase,
               headers: dict[str, str], body: Mapping[str, Any]) -> None:
        """A miss with a decided candidate went upstream (`Labelling.near_miss`: the rules said to label it):
        would the candidate's answer have been right? When the rules say so (`LabelRules.asks_again`), the
        upstream is asked once more with `body`: two fresh answers show how much its answers vary."""
        texts = dialect.answer_text(fresh), dialect.answer_text(lookup.candidate_response or {})
        account = _account(case, dialect, body)

        async def run() -> None:
            second = None
            if self.rules.asks_again(case.namespace, lookup, *texts):
                upstream = self.rt.upstream_for(dialect.upstream)
                again = await self._ask(upstream, dialect, headers, json.dumps(dialect.audit_body(body)).encode(),
                                        request_id, account)
                second = None if again is None else dialect.answer_text(again)
                self.rt.metrics.label_calls.labels("variation").inc()
            await self._label(request_id, LabelSource.SHADOW, case, *texts, headers, account, second)

        self.rt.spawn(run())

    def audit(self, request_id: str, dialect: Dialect, body: Mapping[str, Any], headers: dict[str, str],
              served: dict[str, Any], case: LabelCase) -> None:
        """Re-ask upstream for a served semantic hit, in the background."""
        if self.rt.audit_slots.locked():
            self.rt.metrics.audits.labels("skipped").inc()
            return
        account = _account(case, dialect, body)

        async def run() -> None:
            async with self.rt.audit_slots:
                upstream = self.rt.upstream_for(dialect.upstream)
                content_out = json.dumps(dialect.audit_body(body)).encode()
                fresh = await self._ask(upstream, dialect, headers, content_out, request_id, account)
                if fresh is None:
                    self.rt.metrics.audits.labels("upstream_error").inc()
                    return
                # Without a label model, a second fresh answer shows how much the upstream's answers vary.
                second = None
                if self.rules.audit_asks_twice:
                    again = await self._ask(upstream, dialect, headers, content_out, request_id, account)
                    second = None if again is None else dialect.answer_text(again)
                await self._label(request_id, LabelSource.AUDIT, case, dialect.answer_text(fresh),
                                  dialect.answer_text(served), headers, account, second)
                self.rt.metrics.audits.labels("done").inc()

        self.rt.spawn(run())

    async def _ask(self, upstream: Upstream, dialect: Dialect, headers: dict[str, str], content: bytes,
                   request_id: str, account: Account) -> dict[str, Any] | None:
        """One fresh answer to an audited request, or None; what it cost is charged to `account`."""
        try:
            response = await upstream.send("POST", dialect.path, headers, content)
            raw = await upstream.read(response)
        except UpstreamError as exc:
            log.info("audit of %s failed: %s", request_id, exc)
            return None
        try:
            fresh = json.loads(raw) if response.status_code == 200 else None
        except ValueError:
            return None
        if not isinstance(fresh, dict):
            return None
        usage = dialect.usage(fresh)
        if usage is not None:
            self.rt.ledger.spent(account, account.model, usage)
        return fresh


def _account(case: LabelCase, dialect: Dialect, body: Mapping[str, Any]) -> Account:
    """The labelled traffic, which labelling's calls are charged to."""
    return Account(case.namespace, dialect.name, str(body.get("model") or ""))
