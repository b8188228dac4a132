"""Canonical request keys: what changes a completion goes into the key, what does not stays out.

Every API dialect reduces its request to a `CanonicalRequest` (API, model, output-changing parameters, turns in
chat shape); `key_for` turns that into a `CacheKey`. `exact` covers the whole canonical request; `context` covers
everything except the last user message, so the semantic tier only compares prompts asked in the same context.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from index.request.context import dependency_context, has_question
from index.request.textnorm import canonical_value

# Chat Completions fields that never change the answer (transport, attribution, storage flags).
IGNORED_FIELDS = frozenset({"stream", "stream_options", "user", "store", "metadata", "service_tier"})
# Characters of a prompt (and of its relevant context) the decision reads at most (`DEJA_MAX_DECISION_CHARS`):
# a longer request is matched exactly only, so the work per request stays bounded (see `index.guards.textdiff`).
DEFAULT_MAX_DECISION_CHARS = 4000
# The API whose keys carry no API marker: chat keys kept their pre-dialect form, so entries stored before other
# APIs existed still match. Every other API's name goes into each of its hashes: entries never cross APIs.
CHAT_API = "chat"


class ContextMatch(StrEnum):
    """How earlier turns must match for a semantic hit."""

    EXACT = "exact"  # system prompt and every earlier turn byte-identical
    SEMANTIC = "semantic"  # relevant earlier context compared by meaning and verified


class LookupMode(StrEnum):
    """Which tiers may answer a request."""

    FULL = "full"  # exact, then semantic
    EXACT_ONLY = "exact_only"  # byte-identical canonical request only
    BYPASS = "bypass"  # neither read nor written


_STRICTNESS = (LookupMode.FULL, LookupMode.EXACT_ONLY, LookupMode.BYPASS)


@dataclass(frozen=True)
class CanonicalRequest:
    """A request of any API, reduced to what decides its answer.

    `params` holds every output-changing field except the turns (system prompt or instructions, tools, sampling,
    API version headers); `messages` holds the turns in chat shape (`role`, `content` as a string or a list of
    parts where `{"type": "text", "text": ...}` is text and anything else is not). A dialect may force a stricter
    `mode` than the turns alone would get (never a looser one).
    """

    api: str
    model: str
    params: Mapping[str, Any]
    messages: Sequence[Mapping[str, Any]]
    mode: LookupMode = LookupMode.FULL
    mode_reason: str = ""


@dataclass(frozen=True)
class CacheKey:
    """Where a request lives in the cache. All hashes are hex SHA-256."""

    namespace: str
    exact: str
    context: str
    model: str
    # Text the semantic tier embeds and compares: the last user message ('' when there is none).
    prompt: str
    mode: LookupMode
    mode_reason: str = ""
    # Entries the semantic tier may compare with: `context` for exact-context matching, or a wider scope
    # (namespace, parameters, system prompt) for multi-turn requests matched by meaning.
    scope: str = ""
    # What the last message of a multi-turn request can depend on (`index.request.context.dependency_context`),
    # matched by meaning and verified; None for single-turn requests and self-contained questions.
    context_text: str | None = None


def namespace_for(api_key: str | None, secret: bytes) -> str:
    """HMAC of the caller's API key: two keys never share entries and the raw key is never kept."""
    return hmac.new(secret, (api_key or "").encode(), hashlib.sha256).hexdigest()[:32]


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _digest(*parts: str) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode())
        h.update(b"\x00")
    return h.hexdigest()


def _text_of(content: Any) -> str | None:
    """Plain text of a message content; None when it carries non-text parts (images, audio, files)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if not isinstance(part, dict) or part.get("type") != "text":
                return None
            texts.append(str(part.get("text", "")))
        return "\n".join(texts)
    return None


def _mode_for(messages: Sequence[Mapping[str, Any]]) -> tuple[LookupMode, str]:
    if any(_text_of(m.get("content")) is None for m in messages):
        return LookupMode.EXACT_ONLY, "non-text content"
    last = messages[-1] if messages else {}
    if last.get("role") != "user":
        return LookupMode.EXACT_ONLY, f"last message is {last.get('role', 'missing')}"
    if not has_question(_text_of(last.get("content")) or ""):
        return LookupMode.EXACT_ONLY, "no question of its own"
    return LookupMode.FULL, ""


def _uses_tools(messages: Sequence[Mapping[str, Any]]) -> bool:
    return any(m.get("role") in ("tool", "function") or m.get("tool_calls") or m.get("function_call")
               for m in messages)


def chat_request(body: Mapping[str, Any]) -> CanonicalRequest:
    """A validated chat-completions body as a canonical request."""
    params = {k: v for k, v in body.items() if k not in IGNORED_FIELDS and k != "messages" and v is not None}
    n = body.get("n")
    mode, reason = (LookupMode.EXACT_ONLY, "n>1") if isinstance(n, int) and n > 1 else (LookupMode.FULL, "")
    return CanonicalRequest(CHAT_API, str(body.get("model", "")), params, list(body.get("messages") or []),
                            mode, reason)


def build_key(namespace: str, body: dict[str, Any], context_match: ContextMatch = ContextMatch.SEMANTIC) -> CacheKey:
    """Key a validated chat-completions body. Pure: same body, same key, whatever the key order."""
    return key_for(namespace, chat_request(body), context_match)


def key_for(namespace: str, request: CanonicalRequest, context_match: ContextMatch = ContextMatch.SEMANTIC,
            max_decision_chars: int = DEFAULT_MAX_DECISION_CHARS) -> CacheKey:
    """Key a canonical request of any API. Pure: same request, same key, whatever the key order.

    Text is read in NFC without invisible characters and numbers in one spelling (`index.request.textnorm`),
    for the hashes and for the prompt the semantic tier compares. A prompt or relevant context longer than
    `max_decision_chars` gets exact hits only."""
    api = () if request.api == CHAT_API else (f"api={request.api}",)
    messages = [canonical_value(dict(m)) for m in request.messages]
    canon_params = canonical_json(canonical_value(dict(request.params)))
    exact = _digest("exact", namespace, *api, canon_params, canonical_json(messages))
    earlier = messages[:-1]
    context = _digest("context", namespace, *api, canon_params, canonical_json(earlier))
    mode, reason = _mode_for(messages)
    if _STRICTNESS.index(request.mode) > _STRICTNESS.index(mode) or (request.mode is mode and request.mode_reason):
        mode, reason = request.mode, request.mode_reason
    prompt = _text_of(messages[-1].get("content")) if messages else ""
    scope, context_text = context, None
    dialogue = [m for m in earlier if m.get("role") not in ("system", "developer")]
    # Tool results are data the answer depends on: conversations with tools keep exact-context matching.
    if dialogue and context_match is ContextMatch.SEMANTIC and not _uses_tools(messages):
        system = [m for m in earlier if m.get("role") in ("system", "developer")]
        context_text = dependency_context(dialogue, prompt or "")
        if context_text is None:
            # A question whole on its own after unrelated history is asked as a single turn is (the same scope:
            # the parameters and the system prompt), and compared as one.
            scope = _digest("context", namespace, *api, canon_params, canonical_json(system))
        else:
            scope = _digest("scope", namespace, *api, canon_params, canonical_json(system), "multi-turn")
    if mode is LookupMode.FULL and max(len(prompt or ""), len(context_text or "")) > max_decision_chars:
        mode, reason = LookupMode.EXACT_ONLY, f"prompt longer than {max_decision_chars} characters"
    return CacheKey(namespace, exact, context, request.model, prompt or "", mode, reason, scope, context_text)
