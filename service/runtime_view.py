"""The admin view of a running gateway: the start-up block `deja serve` logs and what `/deja/stats` shows."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from index.cache import Cache
from index.embedding.embedder import Embedder
from index.errors import StoreUnavailable
from index.guards.stages import Stage
from index.maintenance import Maintainer
from index.match.policy import MatchPolicy
from index.storage.decision_log import DecisionLog
from index.storage.entries import EntryStore, display_url
from service.settings import Settings


@dataclass(frozen=True)
class RuntimeView:
    """Reads the runtime's parts."""

    settings: Settings
    policy: MatchPolicy
    embedder: Embedder
    cache: Cache
    store: EntryStore
    decisions: DecisionLog
    maintainer: Maintainer
    stages: tuple[Stage, ...]

    def describe(self) -> str:
        """The start-up block `deja serve` logs: what was loaded, where the data lives, what decides."""
        s = self.settings
        ttl = "forever" if s.ttl_seconds is None else f"{s.ttl_seconds:g} s"
        lines = [
            "Deja ready to start",
            f"  embedder   {self.embedder.model_id} ({s.embedder.value})",
            f"  decision   {self.policy.describe()}",
            f"  entries    {display_url(s.sql_url)} (ttl {ttl}, at most {s.max_entries or 'unlimited'})",
            f"  exact tier {'redis ' + display_url(s.redis_url) if s.redis_url else 'in-process LRU'}",
            f"  data dir   {s.data_dir.resolve()}",
            f"  upstreams  chat/responses {s.upstream_url}, messages {s.anthropic_upstream_url}",
            f"  labels     audits {s.audit_rate:g} of semantic hits, admin "
            f"{'on' if s.admin_token else 'off (no DEJA_ADMIN_TOKEN)'}",
        ]
        return "\n".join(lines)

    def stats(self) -> dict[str, Any]:
        """What `/deja/stats` shows, in a worker thread (it counts entries and labels in SQL)."""
        try:
            entries = self.store.count()
            labels = self.decisions.label_counts()
        except StoreUnavailable:
            entries, labels = -1, {}
        namespaces = self.cache.matcher.namespaces
        return {
            "entries": entries, "indexed": len(self.cache.index), "evictions": self.maintainer.evictions,
            "min_similarity": namespaces.default,
            "thresholds": {ns: {"min_similarity": v, "labels": n} for ns, (v, n) in namespaces.by_namespace.items()},
            "stages": [s.name for s in self.stages], "labels": labels,
        }
