"""What the embedder reads: its first 256 word pieces. Counted conservatively without the tokenizer: MiniLM
splits English into about 1.3 word pieces a word and other scripts into more, so 150 whitespace words or
1,000 characters stay inside 256 pieces."""

from __future__ import annotations

WINDOW_WORDS = 150
WINDOW_CHARS = 1000


def beyond_window(text: str) -> bool:
    """True when `text` may run past what the embedder reads."""
    return len(text) > WINDOW_CHARS or len(text.split()) > WINDOW_WORDS
