"""A label generalises to its difference: when a served hit is labelled wrong (or a near miss right), what differed
between the two prompts (the aligned word spans, e.g. "pin" <-> "unpin") is evidence for the namespace. Evidence,
not anecdote: each label counts with its labeller's weight (1 - 2 x its error rate), right labels count against
wrong ones, every count halves each `half_life` seconds, and a difference vetoes a later candidate only while its
net wrong weight is at least `min_net_wrong`. It never vetoes two prompts of the same content
(`index.guards.form.same_content`): a plain rewording stays served.

The labels live in a `DifferenceLog` (SQL on a gateway, `index.storage.differences`, so every replica reads the same
evidence; in memory in `eval`); `sync` folds in those written since its last (a pass costs what the new labels add, not
what the horizon holds). `changed` counts the decisions each difference changed here.
"""

from __future__ import annotations

import dataclasses
import json
import math
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from index.guards.form import same_content
from index.guards.text import differing_spans, words

# A difference is remembered only when it is small: at most this many aligned spans of at most this many words.
MAX_SPANS = 2
MAX_SPAN_WORDS = 3
# Differences kept per namespace at most (the least recently labelled go first).
MAX_PER_NAMESPACE = 500
# Net wrong weight (wrong minus right, decayed) at which a difference vetoes, and the default half-life (7 days).
MIN_NET_WRONG = 3.0
HALF_LIFE_SECONDS = 7 * 24 * 3600.0
# Labels older than this many half-lives weigh under 0.1%: `sync` no longer reads them.
HORIZON_HALF_LIVES = 10
# How far before the newest label it has read a sync reads again (labels committed late by another replica).
LOOKBACK_SECONDS = 300.0

Pair = tuple[str, str]


def difference(prompt: str, candidate: str) -> frozenset[Pair] | None:
    """The aligned spans where the two prompts' words differ, each pair in a fixed order; None when they do not
    differ in words or differ too much to generalise."""
    a, b = words(prompt), words(candidate)
    spans = differing_spans(a, b)
    if not spans or len(spans) > MAX_SPANS:
        return None
    pairs = []
    for a_lo, a_hi, b_lo, b_hi in spans:
        if max(a_hi - a_lo, b_hi - b_lo) > MAX_SPAN_WORDS:
            return None
        left, right = " ".join(a[a_lo:a_hi]), " ".join(b[b_lo:b_hi])
        pairs.append((left, right) if left <= right else (right, left))
    return frozenset(pairs)


def pairs_key(pairs: frozenset[Pair]) -> str:
    """The pairs as stored: a JSON list of sorted [left, right] pairs."""
    return json.dumps(sorted(pairs), ensure_ascii=False)


def pairs_from_key(key: str) -> frozenset[Pair]:
    return frozenset((str(a), str(b)) for a, b in json.loads(key))


@dataclass(frozen=True)
class DifferenceLabel:
    """One label of a difference: `same` True for a right near miss, False for a wrong hit; `weight` in [0, 1];
    `id` the log's (0 until the log has taken it)."""

    namespace: str
    pairs: frozenset[Pair]
    same: bool
    weight: float
    at: float
    id: int = 0


class DifferenceLog(Protocol):
    """Where difference labels are kept, shared by the replicas."""

    def add(self, label: DifferenceLabel) -> int:
        """Keep the label; returns its id."""
        ...

    def since(self, after: float) -> list[DifferenceLabel]:
        """The labels written at or after `after` (by their own clock), with their ids."""
        ...

    def prune(self, before: float) -> None: ...


@dataclass
class MemoryDifferenceLog:
    """A `DifferenceLog` in memory (one process: `eval`, tests)."""

    labels: list[DifferenceLabel] = field(default_factory=list)
    last_id: int = 0

    def add(self, label: DifferenceLabel) -> int:
        self.last_id += 1
        self.labels.append(dataclasses.replace(label, id=self.last_id))
        return self.last_id

    def since(self, after: float) -> list[DifferenceLabel]:
        return [label for label in self.labels if label.at >= after]

    def prune(self, before: float) -> None:
        self.labels = [label for label in self.labels if label.at >= before]


@dataclass
class Difference:
    """A difference's evidence: weights of wrong and right labels, decayed to `at`; `labels` counts them."""

    namespace: str
    pairs: frozenset[Pair]
    wrong: float = 0.0
    right: float = 0.0
    labels: int = 0
    at: float = 0.0
    changed: int = 0

    @property
    def a(self) -> str:
        return " | ".join(p[0] for p in sorted(self.pairs))

    @property
    def b(self) -> str:
        return " | ".join(p[1] for p in sorted(self.pairs))

    @property
    def net_wrong(self) -> float:
        return self.wrong - self.right

    @property
    def same(self) -> bool:
        """What the evidence says so far: True unless wrong labels outweigh right ones."""
        return self.wrong <= self.right

    def decayed(self, now: float, half_life: float) -> Difference:
        factor = 0.5 ** (max(0.0, now - self.at) / half_life)
        return Difference(self.namespace, self.pairs, self.wrong * factor, self.right * factor, self.labels, now,
                          self.changed)

    def fold(self, label: DifferenceLabel, half_life: float) -> None:
        """Add one label, decaying the counts to its time first (labels arrive in time order, or nearly)."""
        factor = 0.5 ** (max(0.0, label.at - self.at) / half_life)
        self.wrong, self.right = self.wrong * factor, self.right * factor
        if label.same:
            self.right += label.weight
        else:
            self.wrong += label.weight
        self.labels += 1
        self.at = max(self.at, label.at)


def present_pairs(prompt: str, candidate: str) -> set[Pair]:
    a, b = words(prompt), words(candidate)
    present = set()
    for a_lo, a_hi, b_lo, b_hi in differing_spans(a, b):
        left, right = " ".join(a[a_lo:a_hi]), " ".join(b[b_lo:b_hi])
        present.add((left, right) if left <= right else (right, left))
    return present


class Differences:
    """Per-namespace evidence of differences, read from and written to `log`; thread-safe."""

    def __init__(self, log: DifferenceLog | None = None, clock: Callable[[], float] | None = None,
                 half_life: float = HALF_LIFE_SECONDS, min_net_wrong: float = MIN_NET_WRONG) -> None:
        if not half_life > 0 or math.isinf(half_life):
            raise ValueError(f"half_life must be a positive number of seconds, got {half_life}")
        self.log: DifferenceLog = log if log is not None else MemoryDifferenceLog()
        self.clock = clock or (lambda: 0.0)
        self.half_life = half_life
        self.min_net_wrong = min_net_wrong
        self._by_namespace: dict[str, dict[frozenset[Pair], Difference]] = {}
        # The labels folded in (id -> time) within LOOKBACK_SECONDS of the newest read, and that newest time.
        self._folded: dict[int, float] = {}
        self._read_to = -math.inf
        self._lock = threading.Lock()

    def remember(self, namespace: str, prompt: str, candidate: str, same: bool,
                 weight: float = 1.0) -> Difference | None:
        """Record one label of the difference these prompts show (written to the log first: a label the log did
        not take is not counted here either)."""
        pairs = difference(prompt, candidate)
        if pairs is None or weight <= 0:
            return None
        label = DifferenceLabel(namespace, pairs, same, min(1.0, weight), self.clock())
        label_id = self.log.add(label)
        with self._lock:
            self._folded[label_id] = label.at  # a later sync reads it back: folded once
            return self._fold(label)

    def _fold(self, label: DifferenceLabel) -> Difference:
        known = self._by_namespace.setdefault(label.namespace, {})
        item = known.pop(label.pairs, None) or Difference(label.namespace, label.pairs, at=label.at)
        item.fold(label, self.half_life)
        known[label.pairs] = item  # most recently labelled last
        while len(known) > MAX_PER_NAMESPACE:
            known.pop(next(iter(known)))
        return item

    def sync(self) -> None:
        """Fold in the labels written since the last sync (other replicas' included): only those, read back
        `LOOKBACK_SECONDS` before the newest seen (a label another replica committed late, or stamped by a clock a
        little behind, is still read; each label is folded once, by its id); drop what fell past the horizon. The
        first sync reads the whole horizon."""
        now = self.clock()
        horizon = now - HORIZON_HALF_LIVES * self.half_life
        self.log.prune(horizon)
        after = max(horizon, self._read_to - LOOKBACK_SECONDS)
        labels = sorted(self.log.since(after), key=lambda label: (label.at, label.id))
        with self._lock:
            for label in labels:
                if label.id not in self._folded:
                    self._folded[label.id] = label.at
                    self._fold(label)
            self._read_to = max([self._read_to, *(label.at for label in labels)])
            keep = self._read_to - LOOKBACK_SECONDS
            self._folded = {i: at for i, at in self._folded.items() if at >= keep}
            for namespace in list(self._by_namespace):
                known = {pairs: item for pairs, item in self._by_namespace[namespace].items() if item.at >= horizon}
                if known:
                    self._by_namespace[namespace] = known
                else:
                    del self._by_namespace[namespace]

    def veto(self, namespace: str, prompt: str, candidate: str) -> Difference | None:
        """The difference these prompts show whose net wrong weight, decayed to now, reaches `min_net_wrong`, if
        any (counted as one changed decision). Two prompts of the same content are never vetoed."""
        known = self._by_namespace.get(namespace)
        if not known or same_content(prompt, candidate):
            return None
        present = present_pairs(prompt, candidate)
        now = self.clock()
        with self._lock:
            for item in known.values():
                if item.pairs <= present and item.decayed(now, self.half_life).net_wrong >= self.min_net_wrong:
                    item.changed += 1
                    return item
        return None

    def remembered(self) -> list[Difference]:
        """Every difference with its counts decayed to now."""
        now = self.clock()
        with self._lock:
            return [item.decayed(now, self.half_life) for known in self._by_namespace.values()
                    for item in known.values()]
