"""Where the gateway's traffic becomes labels: audits of a sampled share of semantic hits, and shadows of the
near-misses it did not serve. The `Labeler` does the work in the background."""

from __future__ import annotations

from typing import Any

from index.match.audit_sampler import AuditReason
from index.match.outcome import Lookup
from index.records import CachedResponse
from service.evidence import hit_facts, label_case
from service.exchange import Exchange
from service.labeler import Labeler
from service.runtime import Runtime


class Labelling:
    """Decides which requests are labelled and hands them to the `Labeler`."""

    def __init__(self, runtime: Runtime) -> None:
        self.rt = runtime
        self.labeler = Labeler(runtime)

    def audit(self, exchange: Exchange, lookup: Lookup, cached: CachedResponse) -> None:
        """Re-ask upstream for a sampled share of semantic hits (denser where an audit teaches most)."""
        namespace, prompt = exchange.key.namespace, exchange.key.prompt
        reason = self.rt.audit_sampler.draw(hit_facts(self.rt, namespace, lookup), self.rt.audit_draw())
        if reason is None:
            return
        if reason is not AuditReason.BASE:
            self.rt.metrics.extra_audits.labels(reason.value).inc()
        self.labeler.audit(exchange.request_id, exchange.dialect, exchange.body, exchange.headers, cached.body,
                           label_case(namespace, prompt, lookup))

    def near_miss(self, exchange: Exchange, answer: dict[str, Any], lookup: Lookup) -> None:
        """A candidate was found and not served: compare its answer with the fresh one, in the background."""
        if lookup.candidate_response is not None and lookup.decision is not None:
            case = label_case(exchange.key.namespace, exchange.key.prompt, lookup)
            self.labeler.shadow(exchange.request_id, exchange.dialect, answer, lookup.candidate_response, case,
                                exchange.headers,
                                # Only a near miss a lower threshold would serve is worth a call to measure variation.
                                exchange.body if lookup.decision.would_serve else None)
