"""A label generalises to its difference: when a served hit is labelled wrong (or a near-miss right), what differed
between the two prompts (the aligned word spans, e.g. "pin" <-> "unpin") is kept per namespace. A later candidate
whose prompts differ by a remembered wrong difference (among others or alone) is not served, whatever its entry.
Right differences are kept as evidence and shown, never used to serve (the safe side).

Kept in memory per replica, fed by the labeler; `changed` counts the later decisions each difference changed.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from index.guards.text import differing_spans, words

# A difference is remembered only when it is small: at most this many aligned spans of at most this many words.
MAX_SPANS = 2
MAX_SPAN_WORDS = 3
# Differences remembered per namespace at most (the oldest go first).
MAX_PER_NAMESPACE = 500

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


@dataclass
class Difference:
    namespace: str
    pairs: frozenset[Pair]
    same: bool
    changed: int = 0

    @property
    def a(self) -> str:
        return " | ".join(p[0] for p in sorted(self.pairs))

    @property
    def b(self) -> str:
        return " | ".join(p[1] for p in sorted(self.pairs))


class Differences:
    """Per-namespace remembered differences; thread-safe."""

    def __init__(self) -> None:
        self._by_namespace: dict[str, dict[frozenset[Pair], Difference]] = {}
        self._lock = threading.Lock()

    def remember(self, namespace: str, prompt: str, candidate: str, same: bool) -> Difference | None:
        """Keep the difference a label taught (a later right label does not undo a wrong one)."""
        pairs = difference(prompt, candidate)
        if pairs is None:
            return None
        with self._lock:
            known = self._by_namespace.setdefault(namespace, {})
            found = known.get(pairs)
            if found is not None and not found.same:  # a wrong difference stays wrong: the safe side
                return found
            known.pop(pairs, None)
            item = Difference(namespace, pairs, same, found.changed if found else 0)
            known[pairs] = item
            while len(known) > MAX_PER_NAMESPACE:
                known.pop(next(iter(known)))
            return item

    def veto(self, namespace: str, prompt: str, candidate: str) -> Difference | None:
        """The remembered wrong difference these prompts show, if any; counted as one changed decision."""
        known = self._by_namespace.get(namespace)
        if not known:
            return None
        a, b = words(prompt), words(candidate)
        spans = differing_spans(a, b)
        present = set()
        for a_lo, a_hi, b_lo, b_hi in spans:
            left, right = " ".join(a[a_lo:a_hi]), " ".join(b[b_lo:b_hi])
            present.add((left, right) if left <= right else (right, left))
        with self._lock:
            for item in known.values():
                if not item.same and item.pairs <= present:
                    item.changed += 1
                    return item
        return None

    def remembered(self) -> list[Difference]:
        with self._lock:
            return [item for known in self._by_namespace.values() for item in known.values()]
