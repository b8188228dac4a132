"""Free labels: compare a fresh upstream answer with the cached one (shadow on near-misses, sampled audits
on hits). The comparison, aware of how much the upstream's answers vary, is `index.match.answers`."""

from __future__ import annotations

from typing import Any

from index.match.answers import Agreement, compare_answers

__all__ = ["Agreement", "answer_text", "compare_answers"]


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
