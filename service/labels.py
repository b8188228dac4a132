"""Free labels: compare a fresh upstream answer with the cached one (shadow on near-misses, sampled audits
on hits). Text comparison first; then the similarity of the two answers' embeddings."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from index.embedding.embedder import Embedder


def answer_text(completion: dict[str, Any] | None) -> str:
    """Concatenated message contents (and tool calls) of a chat.completion."""
    if not completion:
        return ""
    parts = []
    for choice in completion.get("choices") or []:
        message = choice.get("message") or {}
        parts.append(str(message.get("content") or ""))
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            parts.append(f"{function.get('name')}({function.get('arguments')})")
    return "\n".join(parts)


def _normalise(text: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"[^\w\s]", "", text.lower())).strip()


@dataclass(frozen=True)
class Agreement:
    same: bool
    similarity: float
    detail: str


def compare_answers(fresh: str, cached: str, embedder: Embedder, min_similarity: float) -> Agreement:
    """Would the cached answer have been right? Same normalised text, or embeddings at least `min_similarity`."""
    if _normalise(fresh) == _normalise(cached):
        return Agreement(True, 1.0, "same text")
    vectors = embedder.embed([fresh[:2000], cached[:2000]])
    similarity = float(vectors[0] @ vectors[1])
    return Agreement(similarity >= min_similarity, similarity, f"answer similarity {similarity:.3f}")
