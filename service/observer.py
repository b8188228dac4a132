"""What the gateway records about each request: its metrics, its line in the decision log, and the `X-Deja-*`
response headers that tell the caller what happened."""

from __future__ import annotations

import time
from collections.abc import Callable

from index.match.outcome import Lookup
from index.match.steps import Difference
from index.records import Verdict
from index.storage.decision_log import DecisionRecord, record_of
from service.exchange import Exchange
from service.metrics import Metrics


class Observer:
    """Counts and logs; never changes what is served."""

    def __init__(self, metrics: Metrics, log_decision: Callable[[DecisionRecord], None],
                 clock: Callable[[], float], prior: float) -> None:
        """`prior`: the deployment's cosine threshold, the threshold column of an exact hit's row (no threshold
        decided it, and the learner's evidence never reads that column)."""
        self.metrics = metrics
        self.log_decision = log_decision
        self.clock = clock
        self.prior = prior

    def lookup(self, exchange: Exchange, lookup: Lookup) -> None:
        """A lookup's stage timings, degraded backends, vetoes and misses; its decision to the decision log, with
        the threshold the decision held its candidate to (`Decision.threshold`: the kind's, under the policy the
        Matcher decided by)."""
        metrics = self.metrics
        for stage, ms in lookup.timings_ms.items():
            metrics.stage_seconds.labels(stage).observe(ms / 1000)
        for backend in lookup.degraded:
            metrics.degraded.labels(backend).inc()
        decision = lookup.decision
        if decision is not None and lookup.candidate_prompt is not None:
            if decision.vetoed_by is not None:
                metrics.vetoes.labels(decision.vetoed_by).inc()
            if decision.vetoed_by == Difference.name:
                metrics.differences.inc()
            if not decision.hit:
                metrics.misses.labels(decision.reason.value).inc()
        key = exchange.key
        record = record_of(lookup, exchange.request_id, key.namespace, key.model, key.prompt, exchange.dialect.name,
                           self.prior, self.clock())
        if record is not None:
            self.log_decision(record)

    def time(self, exchange: Exchange, verdict: Verdict) -> None:
        self.metrics.request_seconds.labels(exchange.dialect.name, verdict.value).observe(
            time.perf_counter() - exchange.started)


def deja_headers(exchange: Exchange, lookup: Lookup, verdict: Verdict) -> dict[str, str]:
    """The `X-Deja-*` headers of a response: the verdict, the request id, and what the decision saw."""
    headers = {"X-Deja-Cache": verdict.value, "X-Deja-Request-Id": exchange.request_id}
    if lookup.similarity is not None:
        headers["X-Deja-Similarity"] = f"{lookup.similarity:.4f}"
    decision = lookup.decision
    if decision is not None:
        headers["X-Deja-Reason"] = decision.reason.value
        if decision.vetoed_by is not None:  # only on a veto: the vetoing step; a miss's reason is X-Deja-Reason
            headers["X-Deja-Veto"] = decision.vetoed_by
    if lookup.response is not None:
        headers["X-Deja-Entry"] = str(lookup.response.entry_id)
    if exchange.key.mode_reason:
        headers["X-Deja-Policy"] = f"{exchange.key.mode.value}: {exchange.key.mode_reason}"
    return headers


def server_timing(timings_ms: dict[str, float]) -> str:
    """The `Server-Timing` header (W3C) of a request's stage timings: `parse;dur=0.041, key;dur=0.012, ...`."""
    return ", ".join(f"{stage};dur={ms:.3f}" for stage, ms in timings_ms.items())
