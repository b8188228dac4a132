"""Long prompts: the embedder reads its first 256 word pieces (`index.embedding.window`), so two prompts that
differ past that window embed alike (cosine 1.0 for a different question behind a shared document). The
decision never rests on a truncated embedding: when either text runs past the window and the two differ, the
candidate is not served (an exact repeat is still a hit-exact, decided before any embedding). A conversation's
relevant context is reduced to fit the window when it is built (`index.request.context`).
"""

from __future__ import annotations

from index.embedding.window import WINDOW_CHARS, WINDOW_WORDS, beyond_window
from index.request.textnorm import matching_text

__all__ = ["RESOLUTION_WORDS", "WINDOW_CHARS", "WINDOW_WORDS", "beyond_resolution", "beyond_window",
           "differs_past_window"]

# Past this many words a prompt's cosine cannot resolve one changed word (a passage with one fact negated embeds
# at 0.98 with the original): such a prompt is served only as a plain rewording of its candidate.
RESOLUTION_WORDS = 40


def _normal(text: str) -> str:
    return " ".join(matching_text(text).casefold().split())


def beyond_resolution(left: str, right: str) -> bool:
    """Either text is longer than the cosine resolves (`RESOLUTION_WORDS`); the caller has ruled out a plain
    rewording."""
    return max(len(left.split()), len(right.split())) > RESOLUTION_WORDS


def differs_past_window(left: str, right: str) -> bool:
    """Two texts, one of them past the window, that are not the same text (up to case and spacing)."""
    return (beyond_window(left) or beyond_window(right)) and _normal(left) != _normal(right)
