"""Prometheus metrics, on a registry owned by the app (no global state, so tests can run several apps)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from index.match.live_threshold import CONFIDENCE

_STAGE_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter("deja_requests", "Cached-route requests by API and verdict", ["api", "verdict"],
                                registry=r)
        self.stage_seconds = Histogram("deja_stage_seconds", "Time per pipeline stage",
                                       ["stage"], buckets=_STAGE_BUCKETS, registry=r)
        self.request_seconds = Histogram("deja_request_seconds", "Gateway time per request by API and verdict",
                                         ["api", "verdict"], buckets=_STAGE_BUCKETS, registry=r)
        self.vetoes = Counter("deja_vetoes", "Semantic candidates vetoed, by the vetoing stage", ["stage"], registry=r)
        self.misses = Counter("deja_semantic_misses", "Semantic candidates not served, by reason", ["reason"],
                              registry=r)
        self.entries = Gauge("deja_entries", "Entries in the SQL store", registry=r)
        self.indexed = Gauge("deja_indexed_entries", "Entries in this replica's HNSW index", registry=r)
        self.evictions = Counter("deja_evictions", "Entries evicted (TTL or LRU)", registry=r)
        self.tokens_saved = Counter("deja_tokens_saved", "Upstream tokens not spent thanks to hits",
                                    ["model"], registry=r)
        # By token kind and in USD per (namespace, API, model) at the price table's rates (`service.ledger`).
        account = ["namespace", "api", "model"]
        self.saved_tokens = Counter("deja_saved_tokens", "Upstream tokens hits did not spend, by kind (input, "
                                    "cached_input, cache_write, output)", [*account, "kind"], registry=r)
        self.saved_usd = Counter("deja_saved_usd", "USD hits did not spend: each replaced call's usage at its "
                                 "model's prices (models without a price are not counted)", account, registry=r)
        self.labelling_tokens = Counter("deja_labelling_tokens", "Upstream tokens labelling spent (audits, second "
                                        "asks, label-model calls) on the traffic it labels, by kind",
                                        [*account, "kind"], registry=r)
        self.labelling_usd = Counter("deja_labelling_usd", "USD labelling spent on the traffic it labels, at the "
                                     "called model's prices", account, registry=r)
        self.forwarded_tokens = Counter("deja_forwarded_tokens", "Tokens of the answers forwarded from upstream, by "
                                        "kind: cached_input ÷ all input is the provider's prompt-cache share",
                                        [*account, "kind"], registry=r)
        self.labels = Gauge("deja_labels", "Labels collected, by source and verdict", ["source", "correct"],
                            registry=r)
        self.false_hit_rate = Gauge("deja_estimated_false_hit_rate",
                                    "Wrong ÷ labelled among served semantic hits (feedback, audits, human)",
                                    registry=r)
        self.degraded = Counter("deja_backend_failures", "Cache backend failures degraded to a miss",
                                ["backend"], registry=r)
        self.audits = Counter("deja_audits", "Background audits by outcome", ["outcome"], registry=r)
        self.not_stored = Counter("deja_answers_not_stored", "Upstream answers relayed but not cached, by reason "
                                  "(refusal, empty, tool errors)", ["reason"], registry=r)
        # The false-hit budget as `/deja/budget` reports it: the tallies per (namespace, API) (`index.storage.
        # budget`), and per (namespace, kind) the learner's one statistic (`index.match.live_threshold`).
        budget_labels = ["namespace", "api"]
        self.budget = Gauge("deja_budget_max_false_hit_rate", "The false-hit budget, wrong ÷ served "
                            "(DEJA_MAX_FALSE_HIT_RATE)", registry=r)
        self.budget_served = Gauge("deja_budget_served", "Served semantic hits", budget_labels, registry=r)
        self.budget_audited = Gauge("deja_budget_audited", "Served semantic hits with an audit, feedback or human "
                                    "label", budget_labels, registry=r)
        self.budget_wrong = Gauge("deja_budget_wrong", "Audited semantic hits labelled wrong", budget_labels,
                                  registry=r)
        self.budget_upper = Gauge("deja_budget_upper", f"The learner's {CONFIDENCE:.0%} upper bound on wrong ÷ served "
                                  "at the threshold in force; the budget holds where it is at most the budget",
                                  ["namespace", "kind"], registry=r)
        self.threshold = Gauge("deja_threshold", "The namespace's learned cosine threshold in force", ["namespace"],
                               registry=r)
        self.threshold_moves = Counter("deja_threshold_moves", "Moves of a namespace's learned threshold",
                                       ["direction"], registry=r)
        self.label_calls = Counter("deja_label_calls", "Labelling calls by outcome (label model calls, variation "
                                   "probes of near misses, no label)", ["outcome"], registry=r)
        self.label_cost = Counter("deja_label_cost_usd", "USD of label model calls, by token kind at the price "
                                  "table's rates", ["model"], registry=r)
        self.extra_audits = Counter("deja_extra_audits", "Audits beyond DEJA_AUDIT_RATE's share, by why they were "
                                    "drawn", ["reason"], registry=r)
        self.differences = Counter("deja_difference_decisions", "Decisions changed by a remembered difference",
                                   registry=r)
