"""Labels from answers, aware of how much the upstream's own answers vary: a cached answer is "different" from a fresh
one only when their similarity is clearly below what two fresh answers to one question show (a sampled model words
one answer differently each call). The gateway's labeler and `eval replay --learn` use this same comparison.

Answers to two contrasting questions often look alike (the same steps with one word flipped, the same sentence with
another value): an embedding calls them the same. So an answer pair the similarity would call the same is first
read for what changed between the two (`contrast`): where they align word by word, a word flipped for its opposite
(by its prefix, "enable"/"disable", or WordNet, "open"/"closed") or a negation added; or a value one names and the
other does not (a number, a time, a date, a name: `index.guards.values`). Such a pair gets no label: the
comparison cannot tell a sampled rewording from a contrasting answer, and a wrong hit labelled right is what breaks
the budget. How often each outcome is right is measured on real answers with known truth (`eval answers`,
`docs/budget.md`)."""

from __future__ import annotations

import re
import threading
from collections import deque
from dataclasses import dataclass

import numpy as np

from index.embedding.embedder import Embedder
from index.guards.contrast import opposed
from index.guards.polarity import NEGATION_CUES
from index.guards.text import differing_spans, words
from index.guards.values import ValueStage
from index.guards.wordnet import load_wordnet

# Cached-vs-fresh must be this much below fresh-vs-fresh to count as different (similarity units).
VARIATION_MARGIN = 0.1
# Fresh-vs-fresh similarities kept per namespace, the fewest that make a baseline, and the quantile read from them
# (a low one: the variation the upstream commonly shows, not its median).
BASELINE_KEEP = 200
BASELINE_MIN_SAMPLES = 5
BASELINE_QUANTILE = 0.1
# Answers are cut to this many characters before they are embedded (and read for a contrast).
MAX_TEXT = 2000
# An edit of at most this many words a side is a flip (one word, or a short phrase) rather than a rewording.
FLIP_WORDS = 3
_VALUES = ValueStage()


def _normalise(text: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"[^\w\s]", "", text.lower())).strip()


@dataclass(frozen=True)
class Agreement:
    """`same`: True (the cached answer would have served), False (clearly different), None (no label: the
    upstream's variation is not known yet and the answers are not near-identical). `fresh_similarity` is the
    fresh-vs-fresh similarity when a second fresh answer was compared."""

    same: bool | None
    similarity: float
    detail: str
    fresh_similarity: float | None = None


def contrast(fresh: str, cached: str) -> str | None:
    """What makes two answers differ the way answers to contrasting questions do, or None: where the two align
    word by word, a small edit (at most `FLIP_WORDS` words a side) that swaps a word for its opposite (by its
    prefix, or WordNet) or adds a negation; or a value one answer names and the other does not. A rewording that
    changes whole sentences is not read for opposites (two sampled answers differ so everywhere)."""
    a, b = words(fresh[:MAX_TEXT]), words(cached[:MAX_TEXT])
    wordnet = load_wordnet()
    for i1, i2, j1, j2 in differing_spans(a, b):
        left, right = a[i1:i2], b[j1:j2]
        if len(left) > FLIP_WORDS or len(right) > FLIP_WORDS:
            continue
        if bool(NEGATION_CUES.intersection(left)) != bool(NEGATION_CUES.intersection(right)):
            return f"a negation ({' '.join(left) or '-'} / {' '.join(right) or '-'})"
        for x in left:
            for y in right:
                if opposed(x, y) or wordnet.opposed(x, y):
                    return f"opposites {x!r} / {y!r}"
    values = _VALUES.findings(fresh[:MAX_TEXT], cached[:MAX_TEXT])
    if values.strong:
        return f"another value ({values.reason})"
    return None


def _similarity(embedder: Embedder, a: str, b: str) -> float:
    vectors = embedder.embed([a[:MAX_TEXT], b[:MAX_TEXT]])
    return float(vectors[0] @ vectors[1])


def compare_answers(fresh: str, cached: str, embedder: Embedder, min_similarity: float,
                    second_fresh: str | None = None, baseline: float | None = None) -> Agreement:
    """Would the cached answer have been right? Same normalised text, or similarity at least `min_similarity`: same.
    Otherwise the reference is what the upstream's answers to one question show (`second_fresh` against `fresh`,
    and the namespace's `baseline`; the lower of the two): within `VARIATION_MARGIN` of it is same, below it is
    different, and with no reference there is no label (wording must not be taught as meaning)."""
    # The second fresh answer is measured even when the cached one matches: it feeds the namespace's baseline.
    fresh_similarity = None if second_fresh is None else (
        1.0 if _normalise(fresh) == _normalise(second_fresh) else _similarity(embedder, fresh, second_fresh))
    if _normalise(fresh) == _normalise(cached):
        return Agreement(True, 1.0, "same text", fresh_similarity)
    similarity = _similarity(embedder, fresh, cached)
    detail = f"answer similarity {similarity:.3f}"
    if fresh_similarity is not None:
        detail += f", fresh vs fresh {fresh_similarity:.3f}"
    references = [r for r in (fresh_similarity, baseline) if r is not None]
    if similarity < min_similarity and not references:
        return Agreement(None, similarity, detail + ", variation unknown: no label", fresh_similarity)
    if similarity < min_similarity:
        reference = min(references)
        detail = f"{detail}, reference {reference:.3f}"
        if similarity < reference - VARIATION_MARGIN:
            return Agreement(False, similarity, detail, fresh_similarity)
    changed = contrast(fresh, cached)
    if changed is not None:
        return Agreement(None, similarity, f"{detail}, {changed}: the answers differ as contrasting answers do, "
                         "no label", fresh_similarity)
    return Agreement(True, similarity, detail, fresh_similarity)


class AnswerBaselines:
    """Per-namespace fresh-vs-fresh similarities from audits (the latest `BASELINE_KEEP`); thread-safe."""

    def __init__(self) -> None:
        self._samples: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def add(self, namespace: str, similarity: float) -> None:
        with self._lock:
            self._samples.setdefault(namespace, deque(maxlen=BASELINE_KEEP)).append(similarity)

    def baseline(self, namespace: str) -> float | None:
        """The low quantile of the namespace's fresh-vs-fresh similarities; None until enough were seen."""
        with self._lock:
            samples = list(self._samples.get(namespace, ()))
        if len(samples) < BASELINE_MIN_SAMPLES:
            return None
        return float(np.quantile(samples, BASELINE_QUANTILE))
