"""Long prompts: the embedder reads its first 256 word pieces, so two prompts that differ past that window embed
alike (cosine 1.0 for a different question behind a shared document). The decision never rests on a truncated
embedding: when either text runs past the window and the two differ, the candidate is not served (an exact
repeat is still a hit-exact, decided before any embedding).

The window is counted conservatively without the tokenizer: MiniLM splits English into about 1.3 word pieces
a word and other scripts into more, so 150 whitespace words or 1,000 characters stay inside 256 pieces.
"""

from __future__ import annotations

from index.request.textnorm import matching_text

WINDOW_WORDS = 150
WINDOW_CHARS = 1000


def beyond_window(text: str) -> bool:
    """True when `text` may run past what the embedder reads."""
    return len(text) > WINDOW_CHARS or len(text.split()) > WINDOW_WORDS


def _normal(text: str) -> str:
    return " ".join(matching_text(text).casefold().split())


def differs_past_window(left: str, right: str) -> bool:
    """Two texts, one of them past the window, that are not the same text (up to case and spacing)."""
    return (beyond_window(left) or beyond_window(right)) and _normal(left) != _normal(right)
