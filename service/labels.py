"""Free labels: compare a fresh upstream answer with the cached one (shadow on near misses, sampled audits
on hits). The comparison, aware of how much the upstream's answers vary, is `index.match.answers`."""

from __future__ import annotations

from index.match.answers import Agreement, compare_answers
from index.records import answer_text

__all__ = ["Agreement", "answer_text", "compare_answers"]


