"""The alignment check over two conversations' relevant contexts: same words but a swapped content word."""

from __future__ import annotations

from index.guards.stages import StepResult
from index.guards.textdiff import opcodes, ratio
from index.request.context import STOPWORDS, WORD


class AlignmentStage:
    """Two contexts that are mostly the same words but swap a content word ("lasagna" for "shepherd's pie",
    "ibuprofen" for "acetaminophen") describe a different situation: veto."""

    name = "alignment"

    def __init__(self, min_overlap: float = 0.6, max_span: int = 3) -> None:
        self.min_overlap = min_overlap
        self.max_span = max_span

    def check(self, query: str, cached: str) -> StepResult:
        a = [w.strip(".,;:!?") for w in WORD.findall(query.lower())]
        b = [w.strip(".,;:!?") for w in WORD.findall(cached.lower())]
        if ratio(a, b) < self.min_overlap:
            return StepResult(self.name, True, "contexts reworded, no aligned swap")
        for op, i1, i2, j1, j2 in opcodes(a, b):
            if op != "replace" or i2 - i1 > self.max_span or j2 - j1 > self.max_span:
                continue
            left = {w[:5] for w in a[i1:i2] if w not in STOPWORDS}
            right = {w[:5] for w in b[j1:j2] if w not in STOPWORDS}
            if left and right and left != right:
                swapped = f"{' '.join(a[i1:i2])!r} vs {' '.join(b[j1:j2])!r}"
                return StepResult(self.name, False, f"context swaps {swapped}")
        return StepResult(self.name, True, "no aligned swap")
