"""What hits saved and labelling spent, by token kind and in USD, per (namespace, API, model) on this replica since
it started; and what the provider's own prompt cache served of the requests Deja forwarded. A hit saves what the
upstream call it replaced cost (its stored answer's usage at the model's prices); labelling's extra upstream calls
(audits, second asks, label-model calls) are charged to the traffic they label, at the price of the model called.
Each figure also goes to `/metrics`."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from index.pricing.prices import PriceTable
from index.pricing.usage import Usage
from service.metrics import Metrics


@dataclass(frozen=True)
class Account:
    """Whose traffic a figure belongs to: the namespace ('' without a credential), the API and the model asked."""

    namespace: str
    api: str
    model: str


@dataclass(frozen=True)
class SavingsRow:
    """One account's figures. A USD figure is None where a model had no price ("no price"): its tokens still
    count."""

    account: Account
    hits: int
    saved: Usage
    saved_usd: float | None
    labelling: Usage
    labelling_usd: float | None
    forwarded: Usage  # the usage of the answers Deja forwarded from upstream (misses, bypasses)

    @property
    def net_usd(self) -> float | None:
        """Saved minus what labelling spent; None where either has no price."""
        if self.saved_usd is None or self.labelling_usd is None:
            return None
        return self.saved_usd - self.labelling_usd

    @property
    def provider_cache_share(self) -> float | None:
        """The share of the forwarded requests' input tokens the provider served from its prompt cache."""
        prompt = self.forwarded.prompt_tokens
        return self.forwarded.cached_input_tokens / prompt if prompt else None


@dataclass
class _Tally:
    hits: int = 0
    saved: Usage = field(default_factory=Usage)
    saved_usd: float = 0.0
    saved_unpriced: bool = False
    labelling: Usage = field(default_factory=Usage)
    labelling_usd: float = 0.0
    labelling_unpriced: bool = False
    forwarded: Usage = field(default_factory=Usage)


class Ledger:
    """Thread-safe: the gateway and the labeler write on the event loop, the overview reads in a worker thread."""

    def __init__(self, prices: PriceTable, metrics: Metrics) -> None:
        self.prices = prices
        self.metrics = metrics
        self._tallies: dict[Account, _Tally] = {}
        self._lock = threading.Lock()

    def _labels(self, account: Account) -> tuple[str, str, str]:
        return account.namespace, account.api, account.model

    def saved(self, account: Account, usage: Usage) -> float | None:
        """A hit answered instead of the upstream call that cost `usage`; returns its USD (None: no price)."""
        usd = self.prices.cost(account.model, usage)
        for kind, n in usage.by_kind().items():
            if n:
                self.metrics.saved_tokens.labels(*self._labels(account), kind.value).inc(n)
        self.metrics.tokens_saved.labels(account.model).inc(usage.total)
        if usd is not None:
            self.metrics.saved_usd.labels(*self._labels(account)).inc(usd)
        with self._lock:
            tally = self._tallies.setdefault(account, _Tally())
            tally.hits += 1
            tally.saved += usage
            tally.saved_usd += usd or 0.0
            tally.saved_unpriced |= usd is None
        return usd

    def spent(self, account: Account, model: str, usage: Usage) -> float | None:
        """A labelling call to `model` (the request's own for an audit, the label model's for a label) that cost
        `usage`, charged to the labelled traffic's `account`."""
        usd = self.prices.cost(model, usage)
        for kind, n in usage.by_kind().items():
            if n:
                self.metrics.labelling_tokens.labels(*self._labels(account), kind.value).inc(n)
        if usd is not None:
            self.metrics.labelling_usd.labels(*self._labels(account)).inc(usd)
        with self._lock:
            tally = self._tallies.setdefault(account, _Tally())
            tally.labelling += usage
            tally.labelling_usd += usd or 0.0
            tally.labelling_unpriced |= usd is None
        return usd

    def forwarded(self, account: Account, usage: Usage) -> None:
        """An answer relayed from upstream that cost `usage` (what the provider's cache served of it counts)."""
        for kind, n in usage.by_kind().items():
            if n:
                self.metrics.forwarded_tokens.labels(*self._labels(account), kind.value).inc(n)
        with self._lock:
            tally = self._tallies.setdefault(account, _Tally())
            tally.forwarded += usage

    def rows(self) -> tuple[SavingsRow, ...]:
        with self._lock:
            items = sorted(self._tallies.items(), key=lambda kv: (kv[0].namespace, kv[0].api, kv[0].model))
            return tuple(SavingsRow(
                account, t.hits, t.saved, None if t.saved_unpriced else t.saved_usd, t.labelling,
                None if t.labelling_unpriced else t.labelling_usd, t.forwarded) for account, t in items)


def row_json(row: SavingsRow) -> dict[str, object]:
    """A row as `/deja/stats` shows it: tokens by kind, USD or "no price"."""

    def usd(value: float | None) -> float | str:
        return "no price" if value is None else round(value, 9)

    def kinds(usage: Usage) -> dict[str, int]:
        return {kind.value: n for kind, n in usage.by_kind().items()}

    share = row.provider_cache_share
    return {"namespace": row.account.namespace, "api": row.account.api, "model": row.account.model,
            "hits": row.hits, "saved_tokens": kinds(row.saved), "saved_usd": usd(row.saved_usd),
            "labelling_tokens": kinds(row.labelling), "labelling_usd": usd(row.labelling_usd),
            "net_usd": usd(row.net_usd), "forwarded_tokens": kinds(row.forwarded),
            "provider_cache_share": None if share is None else round(share, 6)}
