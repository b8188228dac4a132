"""Typed records that cross the boundary of `index/`: what is stored, what a lookup returns."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from index.embedding.embedder import Vector
from index.pricing.usage import Usage


class Verdict(StrEnum):
    """How a request was answered; the value is what `X-Deja-Cache` says."""

    EXACT_HIT = "hit-exact"
    SEMANTIC_HIT = "hit-semantic"
    # Answered by an identical request's trip upstream, made while this one waited (service single-flight).
    COALESCED = "hit-coalesced"
    MISS = "miss"
    BYPASS = "bypass"


@dataclass(frozen=True)
class CachedResponse:
    """A stored completion (OpenAI `chat.completion` JSON) and the entry it came from."""

    entry_id: int
    body: dict[str, Any]
    created_at: float = 0.0


@dataclass(frozen=True)
class CacheEntry:
    """One entry as written to the store."""

    namespace: str
    exact_key: str
    context_key: str
    model: str
    prompt: str
    response: dict[str, Any]
    vector: Vector | None
    created_at: float
    expires_at: float | None = None
    # Multi-turn entries matched by meaning: their scope, last-message and context vectors, context text.
    scope_key: str | None = None
    prompt_vector: Vector | None = None
    context_vector: Vector | None = None
    context_text: str | None = None
    embedding_model: str | None = None
    # What the upstream call that produced `response` cost, by token kind (None: its API reported no usage).
    usage: Usage | None = None


@dataclass(frozen=True)
class StoredEntry:
    """One entry as read back from the store."""

    entry_id: int
    namespace: str
    context_key: str
    model: str
    prompt: str
    response: dict[str, Any]
    created_at: float
    expires_at: float | None
    hits: int = 0
    prompt_vector: Vector | None = None
    context_vector: Vector | None = None
    context_text: str | None = None
    embedding_model: str | None = None
    usage: Usage | None = None


@dataclass(frozen=True)
class Neighbor:
    """An index search result: entry id (the HNSW label) and cosine similarity."""

    entry_id: int
    similarity: float


@dataclass(frozen=True)
class QueryVectors:
    """A request's embeddings: what the index searches by, and the parts the decision rule compares."""

    index: Vector
    prompt: Vector
    context: Vector | None


def answer_text(completion: dict[str, Any] | None) -> str:
    """Concatenated message contents (and tool calls) of a chat.completion."""
    if not completion:
        return ""
    parts = []
    for choice in completion.get("choices") or []:
        message = choice.get("message") or {}
        parts.append(str(message.get("content") or message.get("refusal") or ""))
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            parts.append(f"{function.get('name')}({function.get('arguments')})")
    return "\n".join(parts)
