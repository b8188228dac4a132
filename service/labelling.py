"""Where the gateway's traffic becomes labels: audits of a sampled share of semantic hits, and shadows of the misses
it did not serve. Which are labelled, and how, is `index.match.labelling`'s (the rules `eval replay --learn` runs
too); the `Labeler` does the work in the background."""

from __future__ import annotations

from typing import Any

from index.match.audit_sampler import AuditReason
from index.match.labelling import LabelCase, LabelRules
from index.match.outcome import Lookup
from index.records import CachedResponse
from service.exchange import Exchange
from service.labeler import Labeler
from service.runtime import Runtime


class Labelling:
    """Asks the labelling rules which requests are labelled and hands them to the `Labeler`."""

    def __init__(self, runtime: Runtime) -> None:
        self.rt = runtime
        self.rules = LabelRules(runtime.settings.labelling(), runtime.audit_sampler, runtime.answer_baselines,
                                runtime.differences, runtime.background_embedder, runtime.learned.over_budget,
                                runtime.clock, runtime.policy.prior_for, runtime.learned.thin)
        self.labeler = Labeler(runtime, self.rules)

    def audit(self, exchange: Exchange, lookup: Lookup, cached: CachedResponse) -> None:
        """Re-ask upstream for a sampled share of semantic hits (denser where an audit teaches most)."""
        namespace, prompt = exchange.key.namespace, exchange.key.prompt
        reason = self.rules.audit(namespace, lookup, self.rt.audit_draw())
        if reason is None:
            return
        if reason is not AuditReason.BASE:
            self.rt.metrics.extra_audits.labels(reason.value).inc()
        self.labeler.audit(exchange.request_id, exchange.dialect, exchange.body, exchange.headers, cached.body,
                           LabelCase.of(namespace, prompt, lookup))

    def near_miss(self, exchange: Exchange, answer: dict[str, Any], lookup: Lookup) -> None:
        """A candidate was decided and not served: compare its answer with the fresh one, in the background."""
        if self.rules.shadows(lookup):
            case = LabelCase.of(exchange.key.namespace, exchange.key.prompt, lookup)
            self.labeler.shadow(exchange.request_id, exchange.dialect, answer, lookup, case, exchange.headers,
                                exchange.body)
